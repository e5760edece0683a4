import copy

import pytest
import yaml

from training.motion_matching.skills import SKILLS_DIR, SkillError, load_registry, load_skill_file, parse_skill, select

GOOD = {
    "name": "vault_low",
    "description": "a vault over a low box",
    "source": {"kind": "g1_npz", "ref": "somepkg:clips/vault.npz", "start_s": 0.0, "end_s": 3.0},
    "terrain": {"boxes": [{"center": [1.0, 0.0, 0.25], "half_size": [0.2, 0.6, 0.25]}], "main": 0},
    "entry_windows": [[0.0, 0.8]],
    "end_s": 2.5,
    "height_range_m": [0.4, 0.6],
    "provenance": {"dataset": "ours", "license": "Apache-2.0"},
}


def test_registry_loads_with_real_climbing_skills():
    reg = load_registry()
    assert "climb_box_via_step" in reg
    climb = reg["climb_box_via_step"]
    assert climb.source.kind == "mocap_retarget"
    assert climb.provenance["license"] == "Apache-2.0"
    assert climb.entry_frames(50.0) == [(0, 75)] and climb.end_frame(50.0) == 380


def test_a_box_the_recording_starts_on_becomes_the_floor():
    """climb_box_direct: the human stood on a 0.13 m box before the 0.70 m one: a 0.57 m climb from the floor."""
    from training.motion_matching.database import skill_boxes, skill_frames

    decl = load_registry()["climb_box_direct"]
    assert decl.floor is not None and len(decl.boxes) == 1
    boxes = skill_boxes(decl)
    assert boxes.center[0, 2] + boxes.half[0, 2] == pytest.approx(0.57, abs=0.01)
    frames = skill_frames(decl)  # standing on the floor at the start: the pelvis at its standing height
    assert frames.root_pos[0, 2] == pytest.approx(0.76, abs=0.03)


def test_a_new_skill_is_one_declaration():
    decl = parse_skill(GOOD, "vault_low.yaml")
    assert decl.name == "vault_low" and decl.boxes[0].half_size == (0.2, 0.6, 0.25)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.pop("end_s"), "missing keys ['end_s']"),
        (lambda d: d.update(colour="red"), "unknown keys ['colour']"),
        (lambda d: d.update(name="Vault!"), "name must match"),
        (lambda d: d["source"].update(kind="video"), "source.kind must be one of"),
        (lambda d: d.update(entry_windows=[[0.5, 0.2]]), "entry_windows[0] must have low < high"),
        (lambda d: d.update(entry_windows=[[0.0, 2.6]]), "must lie in [0, end_s=2.5)"),
        (lambda d: d.update(end_s=4.0), "past the clip"),
        (lambda d: d["terrain"].update(main=3), "terrain.main must index"),
        (lambda d: d["terrain"]["boxes"][0].update(half_size=[0.2, -1, 0.2]), "half_size must be positive"),
        (lambda d: d.update(height_range_m=[0.6]), "height_range_m must be [low, high]"),
        (
            lambda d: d.update(provenance={"dataset": "x"}),
            "provenance must be a mapping with at least dataset and license",
        ),
        (lambda d: d["source"].update(kind="mocap_retarget"), "source.fps is required"),
        (lambda d: d["terrain"].update(floor={"center": [0, 0, 0.1]}), "terrain.floor takes only mesh"),
        (lambda d: d["terrain"].update(slope=0.1), "unknown terrain keys ['slope']"),
    ],
)
def test_malformed_declarations_name_the_problem(edit, message):
    raw = copy.deepcopy(GOOD)
    edit(raw)
    with pytest.raises(SkillError) as e:
        parse_skill(raw, "vault_low.yaml")
    assert message in str(e.value) and "vault_low.yaml" in str(e.value)


def test_file_name_must_match_and_yaml_errors_are_one_line(tmp_path):
    p = tmp_path / "other.yaml"
    p.write_text(yaml.safe_dump(GOOD))
    with pytest.raises(SkillError, match="must match the file name"):
        load_skill_file(p)
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(SkillError, match="not valid YAML"):
        load_skill_file(bad)


def test_unknown_skill_is_a_clear_error():
    with pytest.raises(SkillError, match="unknown skill vault"):
        select(load_registry(SKILLS_DIR), ["vault"])
