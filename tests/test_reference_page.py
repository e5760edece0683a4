"""scripts/gen_reference.py: docs/reference/interfaces.md is what the declarations generate, and a change shows."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "gen_reference.py"


@pytest.fixture(scope="module")
def reference(load_script):
    return load_script(SCRIPT, "gen_reference")


def test_the_reference_page_is_up_to_date(reference) -> None:
    assert reference.main(["--check"]) == 0, "run .venv/bin/python scripts/gen_reference.py"


def test_the_page_carries_every_topic_node_and_parameter(reference) -> None:
    from parkour_core import interfaces, params

    text = reference.render()
    for topic in interfaces.TOPICS:
        assert f"| `{topic.root_name}` | `{topic.msgtype}` |" in text
    for node in interfaces.NODES:
        assert f"`{node.executable}`" in text
    for key in params.NODE_PARAMS:
        for spec in params.specs(key):
            assert f"| `{spec.name}` | {spec.ros_type} |" in text


def test_a_changed_declaration_makes_the_check_fail(reference, monkeypatch, capsys) -> None:
    from parkour_core import params

    real = params.specs

    def tighter(node_key: str):
        return [dataclasses.replace(s, hi=2.0) if s.name == "teleop.max_vx_mps" else s for s in real(node_key)]

    monkeypatch.setattr(params, "specs", tighter)
    assert reference.main(["--check"]) == 1
    assert "+| `teleop.max_vx_mps` | double | `1.0` | [0.0, 2.0] |" in capsys.readouterr().out
