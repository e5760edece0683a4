"""The runtime's CLI finds the training workspace's verbs from above, and never imports it."""

import ast
import importlib.metadata

from parkour_bringup import cli
from parkour_core.paths import repo_root


def _imported_top_level_names(path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_no_file_under_src_imports_the_training_workspace():
    offenders = [str(p.relative_to(repo_root())) for p in sorted((repo_root() / "src").rglob("*.py"))
                 if "training" in _imported_top_level_names(p)]  # fmt: skip
    assert offenders == []


def test_the_workspace_verbs_come_from_its_entry_points():
    commands, broken = cli.installed_commands()
    assert broken == {}
    for verb, module in (("train", "training.cli.train_cmd"), ("eval", "training.cli.eval_cmd"),
                         ("mm", "training.cli.mm_cmd")):  # fmt: skip
        assert commands[verb].__name__ == module
    assert set(cli.RUNTIME_COMMANDS) < set(commands)


def test_a_verb_that_does_not_import_fails_alone_with_its_reason(monkeypatch, capsys):
    real = importlib.metadata.entry_points

    def with_a_broken_verb(**selection):
        found = list(real(**selection))
        if selection.get("group") == cli.ENTRY_POINT_GROUP:
            found.append(importlib.metadata.EntryPoint("jump", "no_such_parkour_module", cli.ENTRY_POINT_GROUP))
        return found

    monkeypatch.setattr(importlib.metadata, "entry_points", with_a_broken_verb)
    assert cli.main(["jump"]) == 2
    err = capsys.readouterr().err
    assert "parkour jump: error: no_such_parkour_module" in err and "does not import" in err
    assert cli.main(["config", str(repo_root() / "config" / "g1_sim.yaml")]) == 0
