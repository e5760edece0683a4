import dataclasses

import yaml

from parkour_core import interfaces as topics
from parkour_core.config import ScriptConfig, ScriptStep, parse
from parkour_core.paths import repo_root
from parkour_teleop.script_node import OWN_REQUESTS, SERVICES


def test_every_script_request_has_a_service_or_a_handler():
    field = next(f for f in dataclasses.fields(ScriptStep) if f.name == "request")
    requests = set(field.metadata["choices"]) - {""}
    assert requests == set(SERVICES) | set(OWN_REQUESTS)
    assert not set(SERVICES) & set(OWN_REQUESTS)


def test_the_band_requests_are_the_bridge_services():
    assert SERVICES["release_band"] == topics.RELEASE_BAND
    assert SERVICES["hang_band"] == topics.HANG_BAND


def test_the_demo_ends_damped_on_the_band():
    """Stood, hooked back on and only then damped: a robot damped off its gantry folds to the floor."""
    steps = yaml.safe_load((repo_root() / "sim" / "scripts" / "demo.yaml").read_text())["steps"]
    script = parse(ScriptConfig, {"steps": steps})
    requests = [(s.request, s.in_mode) for s in script.steps if s.request]
    assert requests[-3:] == [("stand", ""), ("hang_band", "STAND"), ("damp", "STAND")]
    assert [r for r, _ in requests].count("release_band") == 1
