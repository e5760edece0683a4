import dataclasses

from parkour_core.config import ScriptStep
from parkour_teleop.script_node import OWN_REQUESTS, SERVICES


def test_every_script_request_has_a_service_or_a_handler():
    field = next(f for f in dataclasses.fields(ScriptStep) if f.name == "request")
    requests = set(field.metadata["choices"]) - {""}
    assert requests == set(SERVICES) | set(OWN_REQUESTS)
    assert not set(SERVICES) & set(OWN_REQUESTS)
