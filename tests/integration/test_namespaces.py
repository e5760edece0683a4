"""Two simulated robots in one ROS domain, each under a namespace of its own, without cross-talk.

Two `parkour sim --namespace` runs at once, each with its own script and its own Unitree DDS domain
(where its rt/lowstate and rt/lowcmd live): robot a stands up, is activated and walks; robot b only
stands up. A probe in the same ROS domain sees every stack topic under /a or /b (each robot's clock
too) and none in the root; a's supervisor goes ACTIVE, b's never does, and each report shows its own
robot's motion. a's bag holds a's topics, under /a, and reads back by the root names.
"""

import json
import subprocess
import sys
import threading
import time

import pytest
import yaml

from parkour_bringup.bag.reader import open_bag
from parkour_bringup.bag.topics import TRANSITION_TOPIC
from parkour_core import interfaces
from parkour_core.domains import claim_domains

from .conftest import REPO, graph_env, write_config

pytestmark = pytest.mark.integration

SCRIPTS = {
    "a": [{"at_s": 0.2, "request": "stand_up"}, {"at_s": 2.5, "request": "activate", "in_mode": "STAND"},
          {"at_s": 3.0, "request": "release_band", "in_mode": "ACTIVE"}, {"at_s": 3.0, "cmd": [0.6, 0.0, 0.0]}],
    "b": [{"at_s": 0.2, "request": "stand_up"}],
}  # fmt: skip
# b's stand-up takes about 2 s of sim time; the rest is margin for a busy host, where discovery can let
# sim time run before the first request is answered.
DURATIONS_S = {"a": 7.0, "b": 7.0}


def test_two_namespaced_robots_share_a_ros_domain_without_cross_talk(tmp_path, domains, monkeypatch):
    dds_a, ros_domain = domains
    with claim_domains(ros=ros_domain) as second:  # a DDS domain of b's own; the same ROS domain
        dds = {"a": dds_a, "b": second.dds}
        for key, value in graph_env(ros_domain).items():
            monkeypatch.setenv(key, value)
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        from parkour_interfaces.msg import SupervisorState

        rclpy.init()
        probe = rclpy.create_node("namespace_probe")
        modes: dict[str, list[str]] = {"a": [], "b": [], "root": []}
        for ns, prefix in (("a", "/a/"), ("b", "/b/"), ("root", "/")):
            probe.create_subscription(SupervisorState, prefix + interfaces.SUPERVISOR_STATE.name,
                                      lambda m, ns=ns: modes[ns].append(m.mode), 10)  # fmt: skip
        seen: set[str] = set()
        done = threading.Event()

        def look() -> None:
            while not done.wait(0.5):
                # Topics someone publishes on (the probe's own root subscription is no one's topic).
                seen.update(n for n, _ in probe.get_topic_names_and_types() if probe.count_publishers(n) > 0)

        executor = SingleThreadedExecutor()
        executor.add_node(probe)
        threads = [threading.Thread(target=executor.spin, daemon=True), threading.Thread(target=look, daemon=True)]
        for thread in threads:
            thread.start()
        runs = {}
        try:
            for robot in ("a", "b"):
                (tmp_path / robot).mkdir()
                config = write_config(tmp_path / robot, "g1_sim.yaml", sim_camera={"enabled": False})
                script = tmp_path / robot / "script.yaml"
                script.write_text(yaml.safe_dump({"steps": SCRIPTS[robot]}))
                cmd = [sys.executable, "-m", "parkour_bringup.cli", "sim", "--config", str(config), "--namespace",
                       robot, "--script", str(script), "--duration", str(DURATIONS_S[robot]), "--domain",
                       str(dds[robot]), "--ros-domain-id", str(ros_domain), "--no-render", "--out",
                       str(tmp_path / robot / "run"), *(["--no-bag"] if robot == "b" else [])]  # fmt: skip
                runs[robot] = subprocess.Popen(cmd, cwd=REPO, env=graph_env(ros_domain), stdout=subprocess.PIPE,
                                               stderr=subprocess.STDOUT, text=True)  # fmt: skip
            outputs = {robot: proc.communicate(timeout=600)[0] for robot, proc in runs.items()}
            time.sleep(1.0)  # the probe's last look
        finally:
            for proc in runs.values():
                if proc.poll() is None:
                    proc.kill()
            done.set()
            threads[1].join(timeout=5)
            executor.shutdown()
            probe.destroy_node()
            rclpy.shutdown()
    for robot, proc in runs.items():
        assert proc.returncode == 0, f"robot {robot}:\n{outputs[robot][-4000:]}"

    # Every stack topic of both graphs was under its robot's namespace; none in the root.
    stack = {topic.name for topic in interfaces.TOPICS}
    assert {"/a/clock", "/b/clock", "/a/supervisor/state", "/b/supervisor/state", "/a/policy/joint_targets",
            "/b/policy/joint_targets"} <= seen, sorted(seen)  # fmt: skip
    assert not {name for name in seen if name.lstrip("/") in stack}, sorted(seen)
    assert all(n.startswith(("/a/", "/b/")) for n in seen if n not in ("/rosout", "/parameter_events")), sorted(seen)
    assert "ACTIVE" in modes["a"] and "STAND" in modes["b"] and "ACTIVE" not in modes["b"], modes
    assert modes["root"] == [], modes

    reports = {robot: json.loads((tmp_path / robot / "run" / "report.json").read_text()) for robot in runs}
    a, b = reports["a"], reports["b"]
    assert [t["to"] for t in a["supervisor_transitions"]][:3] == ["STAND_UP", "STAND", "ACTIVE"], a
    assert a["forward_displacement_m"] > 0.5, a  # a walked
    assert [t["to"] for t in b["supervisor_transitions"]] == ["STAND_UP", "STAND"], b
    # b stood where it hung: neither a's requests nor a's velocity commands reached it.
    x = json.loads((tmp_path / "b" / "run" / "bridge.json").read_text())["trajectory"]["x"]
    assert max(x) - min(x) < 0.1, (min(x), max(x))

    with open_bag(tmp_path / "a" / "run" / "bag") as bag:
        assert bag.namespace == "/a"
        transitions = [(m.msg.from_mode, m.msg.to_mode) for m in bag.messages([TRANSITION_TOPIC])]
    assert ("STAND", "ACTIVE") in transitions, transitions
    metadata = yaml.safe_load((tmp_path / "a" / "run" / "bag" / "metadata.yaml").read_text())
    recorded = [
        t["topic_metadata"]["name"] for t in metadata["rosbag2_bagfile_information"]["topics_with_message_count"]
    ]
    assert recorded and all(name.startswith("/a/") for name in recorded), recorded
