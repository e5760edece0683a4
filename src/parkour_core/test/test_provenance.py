"""Result files name the commit they came from, and say when the tree differed from it."""

import subprocess

from parkour_core.provenance import changed_files, command_line, git_commit, provenance


def _git(repo, *args):
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def test_a_clean_checkout_gives_its_commit_and_a_changed_one_says_dirty(tmp_path):
    _git(tmp_path, "init", "-q")
    (tmp_path / "a.txt").write_text("1")
    _git(tmp_path, "add", "a.txt")
    _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "x")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True).stdout.strip()
    assert git_commit(tmp_path) == head and changed_files(tmp_path) == []
    (tmp_path / "a.txt").write_text("2")
    (tmp_path / "untracked.txt").write_text("not counted")
    assert git_commit(tmp_path) == head + "-dirty" and changed_files(tmp_path) == ["a.txt"]


def test_outside_git_the_commit_is_unknown(tmp_path):
    assert git_commit(tmp_path) == "unknown"


def test_the_command_reads_as_typed():
    assert command_line(["/x/.venv/bin/parkour", "eval", "--out", "a b"]) == "parkour eval --out 'a b'"
    record = provenance("parkour faults")
    assert record["command"] == "parkour faults" and record["date"].endswith("+00:00")
    assert record["machine"]["cpus"] >= 1
