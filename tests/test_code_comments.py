"""Docstrings and comments say what the code does and why, never its history.

Every tracked ``.py`` file: module docstrings of at most 15 lines (detail belongs on the function or
class it describes), and in no docstring or comment an issue reference (:data:`ISSUE`: an issue's
number, with or without its hash sign) or a machine on loan (:data:`MACHINE_LOAN`): what was measured
on which machine belongs in the results and the docs, not in the code.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MAX_MODULE_DOCSTRING_LINES = 15
ISSUE = re.compile(r"\bissues?\s*#?\d+|(?<![\w&#])#\d+\b", re.IGNORECASE)
MACHINE_LOAN = re.compile(r"\blent\b", re.IGNORECASE)


def tracked_python_files() -> list[str]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "*.py"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.skip(f"not a git checkout ({e}): no tracked files to check")
    return [f for f in listed if (REPO / f).is_file()]  # a file deleted in the working tree is not checked


def history_words(text: str) -> list[str]:
    """What in ``text`` the rule forbids: issue references and machines on loan."""
    return [m.group(0) for pattern in (ISSUE, MACHINE_LOAN) for m in pattern.finditer(text)]


def docstrings(tree: ast.Module) -> list[tuple[int, str]]:
    """(first line, raw text) of the module's and every class's and function's docstring."""
    nodes = [
        n for n in ast.walk(tree) if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    found = []
    for node in nodes:
        text = ast.get_docstring(node, clean=False)
        if text is not None:
            found.append((node.body[0].lineno, text))
    return found


@pytest.fixture(scope="module")
def sources() -> dict[str, str]:
    return {path: (REPO / path).read_text(encoding="utf-8") for path in tracked_python_files()}


def test_module_docstrings_are_at_most_15_lines(sources):
    too_long = []
    for path, text in sources.items():
        doc = ast.get_docstring(ast.parse(text, path))
        lines = len(doc.splitlines()) if doc else 0
        if lines > MAX_MODULE_DOCSTRING_LINES:
            line = ast.parse(text, path).body[0].lineno
            too_long.append(f"{path}:{line}: module docstring of {lines} lines (at most {MAX_MODULE_DOCSTRING_LINES})")
    assert not too_long, "\n".join(too_long)


def test_no_docstring_names_an_issue_or_a_lent_machine(sources):
    found = []
    for path, text in sources.items():
        for first_line, doc in docstrings(ast.parse(text, path)):
            for offset, line in enumerate(doc.splitlines()):
                if words := history_words(line):
                    found.append(f"{path}:{first_line + offset}: docstring says {', '.join(map(repr, words))}")
    assert not found, "\n".join(found)


def test_no_comment_names_an_issue_or_a_lent_machine(sources):
    found = []
    for path, text in sources.items():
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT and (words := history_words(token.string)):
                found.append(f"{path}:{token.start[0]}: comment says {', '.join(map(repr, words))}")
    assert not found, "\n".join(found)


def test_the_checks_see_a_docstring_line_and_a_comment(tmp_path):
    """The patterns and the line numbers, on a made-up file: what the three tests above rely on."""
    # The forbidden words are joined at run time, so this file's own lines carry none of them.
    issue, lent, ref = "iss" + "ue 13", "le" + "nt", "#" + "41"
    text = f'"""Title.\n\nStage 1 of {issue}, with the GPU not {lent}.\n"""\n\nx = 1  # see {ref}\n'
    tree = ast.parse(text)
    [(first_line, doc)] = docstrings(tree)
    hits = [(first_line + k, history_words(line)) for k, line in enumerate(doc.splitlines()) if history_words(line)]
    assert hits == [(3, [issue, lent])]
    comments = [t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.COMMENT]
    assert [(t.start[0], history_words(t.string)) for t in comments] == [(6, [ref])]
    assert history_words("a silent run, 20 issues, an opulent #define, color &#39;") == []
