"""scripts/doc_tables.py: the generated tables of README.md and docs/ agree with their JSON sources, a changed
number is reported, and a source that does not record its command and commit is refused. No ROS, no simulation."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "doc_tables.py"
STANDUP_PAGE = "docs/safety.md"  # the page that carries the stand-up table
STANDUP = "bench/results/standup.json"


@pytest.fixture(scope="module")
def tables(load_script):
    return load_script(SCRIPT, "doc_tables")


def _copy_page_and_sources(tables, tmp_path: Path) -> Path:
    """The stand-up table's page and every source its markers name, under tmp_path as under the repository root."""
    page = tmp_path / STANDUP_PAGE
    page.parent.mkdir(parents=True)
    shutil.copy(REPO / STANDUP_PAGE, page)
    for block in tables.find_blocks(page.read_text()):
        for source in block.sources:
            (tmp_path / source).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(REPO / source, tmp_path / source)
    return page


def _edit_json(path: Path, edit) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def test_committed_pages_agree_with_their_sources(tables):
    assert REPO / "README.md" in tables.pages() and REPO / STANDUP_PAGE in tables.pages()
    assert "standup_gains" in {b.name for b in tables.find_blocks((REPO / STANDUP_PAGE).read_text())}
    assert [diff for page in tables.pages() for diff in tables.check(page)] == []


def test_a_changed_number_is_reported_and_rewritten(tables, tmp_path, capsys):
    page = _copy_page_and_sources(tables, tmp_path)

    def old_gains_stand_up_once_more(data):
        (entry,) = [e for e in data["summary"] if e["what"] == "stand-up on the band, old stand gains"]
        assert entry["ours"] == "40/120"
        entry["ours"] = "43/120"

    _edit_json(tmp_path / STANDUP, old_gains_stand_up_once_more)

    (diff,) = tables.check(page, tmp_path)
    old = "| bounded for neither (ankles kd 10, wrists 2, hip yaw 7.5, waist 10) |"
    assert f"-{old} 40 / 120 | 30 / 120 | 1 / 20 | 0 / 20 |" in diff
    assert f"+{old} 43 / 120 | 30 / 120 | 1 / 20 | 0 / 20 |" in diff
    assert tables.main(["--check", "--page", str(page), "--root", str(tmp_path)]) == 1
    assert "43 / 120" in capsys.readouterr().out

    assert tables.main(["--page", str(page), "--root", str(tmp_path)]) == 0
    assert tables.check(page, tmp_path) == []
    assert "| 43 / 120 | 30 / 120 | 1 / 20 | 0 / 20 |" in page.read_text()
    assert (REPO / STANDUP_PAGE).read_text() != page.read_text()


@pytest.mark.parametrize("key", ["command", "git_commit"])
def test_a_source_without_command_or_commit_is_refused(tables, tmp_path, capsys, key):
    page = _copy_page_and_sources(tables, tmp_path)
    _edit_json(tmp_path / STANDUP, lambda data: data.pop(key))

    with pytest.raises(tables.TableError, match=key):
        tables.check(page, tmp_path)
    assert tables.main(["--check", "--page", str(page), "--root", str(tmp_path)]) == 2
    assert f"standup.json: no '{key}'" in capsys.readouterr().err


def test_every_generator_has_a_table_in_a_page(tables):
    """A generator no table uses is dead code, or a table that fell out of the pages."""
    marked = {block.name for page in tables.pages() for block in tables.find_blocks(page.read_text())}
    assert marked == set(tables.GENERATORS)


def test_a_bundle_manifest_s_provenance_counts_as_the_source_s(tables, tmp_path):
    """A bundle keeps its command and commit under "provenance"; without them it is refused like any source."""
    manifest = "models/student_walk/manifest.json"
    (tmp_path / manifest).parent.mkdir(parents=True)
    shutil.copy(REPO / manifest, tmp_path / manifest)
    assert tables.load_source(tmp_path / manifest)["name"] == "student_walk"
    _edit_json(tmp_path / manifest, lambda data: data["provenance"].pop("git_commit"))
    with pytest.raises(tables.TableError, match="git_commit"):
        tables.load_source(tmp_path / manifest)


def test_parts_of_one_eval_grid_join_into_one_row_and_a_cell_run_twice_is_refused(tables):
    part = json.loads((REPO / "results/eval/validation/student_step_lib_10cm/eval.json").read_text())
    rest = json.loads((REPO / "results/eval/validation/student_step_lib_rest/eval.json").read_text())
    whole = json.loads((REPO / "results/eval/validation/student_step_low_platforms/eval.json").read_text())
    table = tables.eval_rows(whole, part, rest)
    header, *rows = [line for line in table.splitlines() if line.startswith("|") and "---" not in line]
    assert [c.strip() for c in header.split("|")[5:-1]] == ["5 cm", "10 cm", "15 cm", "20 cm"]
    assert len(rows) == 4  # two bundles x two speeds: the lib student's parts are one row per speed
    with pytest.raises(tables.TableError, match="both ran"):
        tables.eval_rows(part, part)


def _manifest_sha256(model: str) -> str:
    from parkour_core.hashing import sha256_file

    return sha256_file(REPO / "models" / model / "manifest.json")


def _committed(model: str) -> bool:
    listed = subprocess.run(["git", "ls-files", f"models/{model}/manifest.json"], cwd=REPO, capture_output=True,
                            text=True, check=True).stdout  # fmt: skip
    return bool(listed.strip())


def test_committed_evals_ran_the_bundles_committed_under_their_names():
    """An eval row names a models/ folder (or a run whose bundle was committed there): the manifest it
    ran, by SHA-256, is the one committed there now, so a row never describes weights that were swapped.
    Bundles `make setup` builds from third-party files (models/g1_walk) are not committed: their weights
    are pinned by the source file's SHA-256 (parkour_core.assets) instead."""
    checked = 0
    for path in sorted((REPO / "results/eval/validation").glob("*/eval.json")):
        result = json.loads(path.read_text())
        if "/models/" in result.get("bundle_path", "") and _committed(Path(result["bundle_path"]).name):
            model = Path(result["bundle_path"]).name
            assert result["bundle_manifest_sha256"] == _manifest_sha256(model), f"{path}: models/{model} changed"
            checked += 1
    assert checked >= 5
    for part in ("student_step_seed1_10cm", "student_step_seed1_rest"):
        result = json.loads((REPO / "results/eval/validation" / part / "eval.json").read_text())
        assert result["bundle_path"] == "runs/student_step_seed1/bundle"
        assert result["bundle_manifest_sha256"] == _manifest_sha256("student_step_lib_seed1")
