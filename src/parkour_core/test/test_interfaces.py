"""The stack's ROS interface as data: relative names, namespaces, and nothing written twice in the nodes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from parkour_core import interfaces
from parkour_core.interfaces import TOPICS, namespace, namespace_args, nodes

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*$")


def test_every_topic_is_relative_valid_and_listed_once() -> None:
    names = [t.name for t in TOPICS]
    assert len(names) == len(set(names))
    for topic in TOPICS:
        assert NAME.match(topic.name), topic
        assert topic.root_name == "/" + topic.name
        assert topic.qos.depth >= 1
    listed = {v for v in vars(interfaces).values() if isinstance(v, interfaces.Topic)}
    assert listed == set(TOPICS)


@pytest.mark.parametrize(
    ("given", "expected"), [("robot1", "/robot1"), ("/robot1", "/robot1"), ("/lab/g1_a/", "/lab/g1_a"), ("/", "/")]
)
def test_namespace(given: str, expected: str) -> None:
    assert namespace(given) == expected


@pytest.mark.parametrize("bad", ["1robot", "robot-1", "/a//b", "a b"])
def test_a_bad_namespace_is_refused_in_one_line(bad: str) -> None:
    with pytest.raises(ValueError, match="namespace"):
        namespace(bad)


def test_a_namespaced_node_runs_on_its_namespace_s_clock() -> None:
    assert namespace_args("/") == []
    assert namespace_args("/robot1") == ["-r", "__ns:=/robot1", "-r", "/clock:=clock"]


def test_the_graphs_start_their_nodes() -> None:
    assert [n.key for n in nodes("sim")] == ["supervisor", "policy", "script", "bridge"]
    assert [n.key for n in nodes("robot")] == ["supervisor", "policy", "depth", "teleop"]


def test_no_node_writes_a_stack_topic_or_service_name_itself(repo_root: Path) -> None:
    """Every name comes from parkour_core.interfaces: a literal one in a node would be absolute or a
    second definition (the docstrings may name the topics)."""
    names = r"(?:supervisor|policy|camera|teleop|sim|robot)/[\w/{}.]*|cmd_vel[\w/]*|diagnostics"
    literal = re.compile(rf"""["'](/?(?:{names})|/clock|/joy)["']""")
    found = []
    for path in sorted((repo_root / "src").glob("parkour_*/parkour_*/**/*.py")):
        if path.name == "interfaces.py":
            continue
        code = re.sub(r'"""(?:.|\n)*?"""', "", path.read_text())  # docstrings describe, they do not define
        found += [f"{path.relative_to(repo_root)}: {m.group(1)}" for m in literal.finditer(code)]
    assert found == []
