"""scripts/readme_tables.py: README.md's generated tables agree with their JSON sources, a changed number is
reported, and a source that does not record its command and commit is refused. No ROS, no simulation."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "readme_tables.py"
STANDUP = "bench/results/standup.json"


@pytest.fixture(scope="module")
def tables(load_script):
    return load_script(SCRIPT, "readme_tables")


def _copy_readme_and_sources(tables, tmp_path: Path) -> Path:
    """README.md and every source its markers name, under tmp_path as under the repository root."""
    readme = tmp_path / "README.md"
    shutil.copy(REPO / "README.md", readme)
    for block in tables.find_blocks(readme.read_text()):
        for source in block.sources:
            (tmp_path / source).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(REPO / source, tmp_path / source)
    return readme


def _edit_json(path: Path, edit) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def test_committed_readme_agrees_with_its_sources(tables):
    blocks = tables.find_blocks((REPO / "README.md").read_text())
    assert "standup_gains" in {b.name for b in blocks}
    assert tables.check(REPO / "README.md") == []


def test_a_changed_number_is_reported_and_rewritten(tables, tmp_path, capsys):
    readme = _copy_readme_and_sources(tables, tmp_path)

    def old_gains_stand_up_once_more(data):
        (entry,) = [e for e in data["summary"] if e["what"] == "stand-up on the band, old stand gains"]
        assert entry["ours"] == "42/120"
        entry["ours"] = "43/120"

    _edit_json(tmp_path / STANDUP, old_gains_stand_up_once_more)

    (diff,) = tables.check(readme, tmp_path)
    assert "-| before (ankles kd 10, wrists 2, hip yaw 7.5, waist 10) | 42 / 120 | 30 / 120 |" in diff
    assert "+| before (ankles kd 10, wrists 2, hip yaw 7.5, waist 10) | 43 / 120 | 30 / 120 |" in diff
    assert tables.main(["--check", "--readme", str(readme), "--root", str(tmp_path)]) == 1
    assert "43 / 120" in capsys.readouterr().out

    assert tables.main(["--readme", str(readme), "--root", str(tmp_path)]) == 0
    assert tables.check(readme, tmp_path) == []
    assert "| 43 / 120 | 30 / 120 |" in readme.read_text()
    assert (REPO / "README.md").read_text() != readme.read_text()


@pytest.mark.parametrize("key", ["command", "git_commit"])
def test_a_source_without_command_or_commit_is_refused(tables, tmp_path, capsys, key):
    readme = _copy_readme_and_sources(tables, tmp_path)
    _edit_json(tmp_path / STANDUP, lambda data: data.pop(key))

    with pytest.raises(tables.TableError, match=key):
        tables.check(readme, tmp_path)
    assert tables.main(["--check", "--readme", str(readme), "--root", str(tmp_path)]) == 2
    assert f"standup.json: no '{key}'" in capsys.readouterr().err


def test_every_generator_renders_from_its_kind_of_source(tables, tmp_path):
    """The tables whose committed sources do not yet record command and commit (so README.md does not mark
    them) still render, from copies given a command and a commit."""
    sources = {
        "eval_low_platforms": [
            "training/eval/baseline/g1_walk_low_platforms/eval.json",
            "training/eval/baseline/student_step_low_platforms/eval.json",
            "training/eval/baseline/student_step_depth_ablation/eval.json",
        ],
        "compare_walk": ["training/student_walk/results/compare.json"],
    }
    marked = {block.name for block in tables.find_blocks((REPO / "README.md").read_text())}
    assert set(sources) | marked == set(tables.GENERATORS)
    text = []
    for name, paths in sources.items():
        for path in paths:
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(REPO / path, tmp_path / path)
            _edit_json(tmp_path / path, lambda data: data.update(command="made up", git_commit="0" * 40))
        text.append(f"<!-- table: {name} ({', '.join(paths)}) -->\n<!-- /table -->\n")
    readme = tmp_path / "README.md"
    readme.write_text("\n".join(text))

    assert tables.update(readme, tmp_path) == list(sources)
    assert tables.check(readme, tmp_path) == []
    out = readme.read_text()
    assert "| **student_step** | 0.5 m/s | 62 % (0 / 1 / 37) | **33 %** (18 / 2 / 47) |" in out
    assert "| g1_walk (teacher) | no | 9.91 | 0.299 | 0.130 | 0.43 / 0.60 / 0.37 | 0 s |" in out
