from __future__ import annotations

import re
from pathlib import Path

import pytest

from parkour_core.config import ConfigError, ScriptStep, StackConfig, describe, load_config


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return path


def test_g1_sim_parses(repo_root):
    c = load_config(repo_root / "config" / "g1_sim.yaml")
    assert isinstance(c, StackConfig)
    assert c.mode == "sim"
    assert c.dds.domain == 1
    assert c.bridge.lowstate_hz == 500.0 and isinstance(c.bridge.lowstate_hz, float)
    assert c.supervisor.rate_hz == 200.0
    assert c.policy.bundle == "g1_walk"
    assert c.run.duration_s == 21.0
    steps = c.script_steps()
    assert all(isinstance(s, ScriptStep) for s in steps)
    assert [s.request for s in steps[:3]] == ["stand_up", "activate", "release_band"]  # from the gantry
    assert [s.in_mode for s in steps[1:3]] == ["STAND", "ACTIVE"]
    assert steps[3].cmd == [0.5, 0.0, 0.0]


def test_g1_robot_parses(repo_root):
    c = load_config(str(repo_root / "config" / "g1_robot.yaml"))
    assert c.mode == "robot"
    assert c.dds.domain == 0
    assert c.dds.interface == "eth0"
    assert c.supervisor.lowstate_timeout_s == 0.05
    assert c.supervisor.dry_run is False
    assert c.script_steps() == []
    assert c.run.duration_s == 36000.0


def test_empty_file_gives_defaults(tmp_path):
    assert load_config(write(tmp_path, "")) == StackConfig()


def test_overrides_apply_dotted_keys(repo_root):
    c = load_config(
        repo_root / "config" / "g1_sim.yaml",
        overrides={"supervisor.max_tilt_rad": 0.5, "dds.interface": "eth1", "mode": "robot", "run.duration_s": 3},
    )
    assert c.supervisor.max_tilt_rad == 0.5
    assert c.dds.interface == "eth1"
    assert c.mode == "robot"
    assert c.run.duration_s == 3.0
    # Other keys keep the file's values.
    assert c.supervisor.rate_hz == 200.0


def test_override_creates_missing_section(tmp_path):
    c = load_config(write(tmp_path, "robot: g1\n"), overrides={"bridge.scene": "stairs"})
    assert c.bridge.scene == "stairs"


def test_overrides_are_validated(repo_root):
    with pytest.raises(ConfigError, match=r"supervisor.max_tilt_rad: 3.0 is outside the allowed range \[0.1, 1.5\]"):
        load_config(repo_root / "config" / "g1_sim.yaml", overrides={"supervisor.max_tilt_rad": 3.0})


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "none.yaml")


def test_unknown_top_level_key(tmp_path):
    with pytest.raises(ConfigError, match=r"unknown keys \['robott'\]"):
        load_config(write(tmp_path, "robott: g1\n"))


def test_unknown_nested_key_names_section(tmp_path):
    with pytest.raises(ConfigError, match=r"supervisor: unknown keys \['max_tilt'\]"):
        load_config(write(tmp_path, "supervisor:\n  max_tilt: 0.5\n"))


@pytest.mark.parametrize(
    "text,pattern",
    [
        ("supervisor:\n  rate_hz: 5000\n", r"supervisor.rate_hz: 5000.0 is outside the allowed range \[50.0, 1000.0\]"),
        ("dds:\n  domain: -1\n", r"dds.domain: -1 is outside the allowed range \[0, 232\]"),
        ("bridge:\n  physics_dt_s: 0.0001\n", r"bridge.physics_dt_s: 0.0001 is outside the allowed range"),
        ("run:\n  duration_s: 36001\n", r"run.duration_s: 36001.0 is outside the allowed range \[0.5, 36000.0\]"),
    ],
)
def test_out_of_range(tmp_path, text, pattern):
    with pytest.raises(ConfigError, match=pattern):
        load_config(write(tmp_path, text))


@pytest.mark.parametrize(
    "text,pattern",
    [
        ("supervisor:\n  rate_hz: fast\n", r"supervisor.rate_hz: expected a number, got 'fast'"),
        ("supervisor:\n  rate_hz: true\n", r"supervisor.rate_hz: expected a number, got True"),
        ("dds:\n  domain: 1.5\n", r"dds.domain: expected an integer, got 1.5"),
        ("dds:\n  interface: 3\n", r"dds.interface: expected a string, got 3"),
        ("supervisor:\n  dry_run: 1\n", r"supervisor.dry_run: expected true/false, got 1"),
        ("script:\n  steps: {at_s: 1}\n", r"script.steps: expected a list"),
        ("supervisor: 3\n", r"supervisor: expected a mapping, got int"),
        ("mode: hardware\n", r"mode: 'hardware' is not one of \['sim', 'robot'\]"),
        ("- a\n- b\n", r"config: expected a mapping, got list"),
    ],
)
def test_wrong_type_or_choice(tmp_path, text, pattern):
    with pytest.raises(ConfigError, match=pattern):
        load_config(write(tmp_path, text))


def test_integer_valued_float_accepted_for_int(tmp_path):
    assert load_config(write(tmp_path, "dds:\n  domain: 2.0\n")).dds.domain == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("supervisor:\n  rate_hz: [1, 2\n",
         "3:1: not valid YAML: expected ',' or ']', but got '<stream end>' (while parsing a flow sequence at 2:12)"),
        ("robot: g1\nmode: sim: robot\n", "2:10: not valid YAML: mapping values are not allowed here"),
        ("supervisor:\n\trate_hz: 1\n",
         "2:1: not valid YAML: found character '\\t' that cannot start any token (while scanning for the next token)"),
    ],
)  # fmt: skip
def test_bad_yaml_is_one_line_naming_the_file_line_and_column(tmp_path, text, message):
    """FILE:LINE:COL, as an editor jumps to; not PyYAML's several lines about "<unicode string>"."""
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert str(e.value) == f"{path}:{message}"


def test_error_message_names_the_file(tmp_path):
    path = write(tmp_path, "robott: g1\n")
    with pytest.raises(ConfigError, match=re.escape(str(path))):
        load_config(path)


def test_script_step_with_request_and_cmd(tmp_path):
    text = "script:\n  steps:\n    - {at_s: 1.0, request: activate, cmd: [0.5, 0, 0]}\n"
    with pytest.raises(ConfigError, match=r"script.steps\[0\]: .*either 'request' or 'cmd', not both or neither"):
        load_config(write(tmp_path, text))


def test_script_step_with_neither(tmp_path):
    text = "script:\n  steps:\n    - {at_s: 1.0, request: stand_up}\n    - {at_s: 2.0}\n"
    with pytest.raises(ConfigError, match=r"script.steps\[1\]: .*not both or neither"):
        load_config(write(tmp_path, text))


@pytest.mark.parametrize("cmd", ["[0.5, 0.0]", "[0.5, 0.0, 0.0, 1.0]", "[0.5, fast, 0.0]"])
def test_script_cmd_wrong_length_or_type(tmp_path, cmd):
    text = f"script:\n  steps:\n    - {{at_s: 1.0, cmd: {cmd}}}\n"
    with pytest.raises(ConfigError, match=r"script.steps\[0\].cmd: expected \[vx, vy, yaw_rate\]"):
        load_config(write(tmp_path, text))


def test_script_unknown_request(tmp_path):
    text = "script:\n  steps:\n    - {at_s: 1.0, request: jump}\n"
    with pytest.raises(ConfigError, match=r"script.steps\[0\].request: 'jump' is not one of"):
        load_config(write(tmp_path, text))


def test_default_lists_are_not_shared():
    a, b = ScriptStep(request="damp"), ScriptStep(request="damp")
    assert a.cmd == [] and a.cmd is not b.cmd


def test_describe_lists_every_leaf_key():
    lines = describe()
    keys = {line.split(":")[0] for line in lines}
    assert {"robot", "dds.domain", "supervisor.max_tilt_rad", "script.steps", "run.duration_s"} <= keys
    tilt = next(line for line in lines if line.startswith("supervisor.max_tilt_rad:"))
    assert "[0.1, 1.5]" in tilt and "0.8" in tilt


@pytest.mark.parametrize(
    ("gains", "message"),
    [
        ({"no_such_joint": [1.0, 1.0]}, "has no joint 'no_such_joint'"),
        ({"left_knee_joint": [1.0]}, "expected [kp, kd]"),
        ({"left_knee_joint": [-1.0, 1.0]}, "expected [kp, kd]"),
        ({"left_knee_joint": [1e9, 1.0]}, "expected [kp, kd]"),
        ([1.0, 2.0], "expected a mapping"),
    ],
)
def test_stand_gains_are_checked_against_the_robots_joints(tmp_path, gains, message):
    import yaml

    from parkour_core.config import ConfigError, load_config
    from parkour_core.paths import config_dir

    data = yaml.safe_load((config_dir() / "g1_sim.yaml").read_text())
    data["supervisor"]["stand_gains"] = gains
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert message in str(e.value)
