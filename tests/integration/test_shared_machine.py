"""A test's graph beside a graph a developer runs on the same machine: neither refuses the other.

The developer's graph stands in as its supervisor (the rt/lowcmd writer a second supervisor on its DDS
domain refuses to start beside) on config/g1_sim.yaml's DDS domain, `parkour sim`'s default, in a ROS
domain claimed as `parkour sim` claims its own. The test's graph then takes its domains as every
integration test does (conftest.claim_test_domains) and runs: it starts without the refusal, and the
developer's supervisor runs on. The refusal itself stays (test_lowcmd_writers.py).
"""

import pytest

from parkour_bringup.graph import run_sim_graph
from parkour_core.config import load_config
from parkour_core.domains import claim_domains
from parkour_core.paths import config_dir

from .conftest import claim_test_domains, graph_env, start_node, wait_for, write_config

pytestmark = pytest.mark.integration


def test_a_test_graph_starts_beside_a_graph_on_the_default_domain(tmp_path):
    default_dds = load_config(config_dir() / "g1_sim.yaml").dds.domain
    with claim_domains(dds=default_dds) as theirs:
        env = graph_env(theirs.ros)
        (tmp_path / "theirs").mkdir()
        config = write_config(tmp_path / "theirs", "g1_sim.yaml")
        their_supervisor = start_node("parkour_safety.supervisor_node", config, tmp_path / "theirs" / "run", env)
        try:
            ready = tmp_path / "theirs" / "run" / "ready" / "supervisor"
            wait_for(lambda: ready.exists() or their_supervisor.poll() is not None, 60, "their supervisor")
            their_log = tmp_path / "theirs" / "run" / "supervisor_node.log"
            # Refused only where a developer's graph runs on that domain now: then that one is theirs.
            theirs_refused = their_supervisor.poll() is not None
            assert not theirs_refused or "other rt/lowcmd writer" in their_log.read_text(), their_log.read_text()
            with claim_test_domains() as ours:
                assert (ours.dds, ours.ros) != (theirs.dds, theirs.ros)
                (tmp_path / "ours").mkdir()
                config = write_config(tmp_path / "ours", "g1_sim.yaml", dds={"domain": ours.dds, "interface": "lo"},
                                      sim_camera={"enabled": False})  # fmt: skip
                run_sim_graph(config, tmp_path / "ours" / "run", 2.0, ours.ros)  # a refusal is a GraphError
            assert theirs_refused or their_supervisor.poll() is None, "their supervisor stopped while ours ran"
        finally:
            their_supervisor.terminate()
            their_supervisor.wait(timeout=30)
    ours_log = (tmp_path / "ours" / "run" / "logs" / "supervisor.log").read_text()
    assert "other rt/lowcmd writer" not in ours_log, ours_log
    assert (tmp_path / "ours" / "run" / "supervisor.json").is_file()
