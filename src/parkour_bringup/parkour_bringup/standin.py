"""Robot mode against the simulator as a stand-in robot: `parkour robot --iface lo --live` on one side,
the bridge on the other, a script node playing the operator. Used by the peer-mode integration test and
bench/graph/robot.py.

On wall time (``clock: wall``: no /clock, no lockstep, it waits for nobody) the run is the robot's
timing, and the host's too: a stand-in starved past the lowstate timeout is damped as a silent robot
must be, and a starved controller leaves a held-torque peer holding its torque. That is a measurement
(bench/graph/robot.py). On sim time (``clock: sim``, ``parkour robot --sim-clock``) the stand-in holds
its time for the supervisor's and the policy's answers as ``parkour sim`` does, so a busy host slows
the run and changes nothing in it: what a test may judge.

The stand-in can behave like our own simulator (``peer: stack``: PD every physics step, lowstate with
tick and CRC) or like Unitree's (``peer: unitree_sim``: PD once per arriving lowcmd, the torque held,
no tick, no CRC), on either G1 model, at any physics step, with commands lost in gaps.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from parkour_bringup.graph import SIM_TIME_ARGS
from parkour_core.domains import claim_domains
from parkour_core.interfaces import node
from parkour_core.paths import config_dir, repo_root

READY_TIMEOUT_S = 90.0  # parkour robot up (rclpy, DDS, the bundle loaded) on a busy machine
# A robot does not share the controller's CPU: its state keeps coming however busy the host is. The
# stand-in does share it, and on wall time a stand-in starved past the supervisor's lowstate timeout
# (50 ms) is damped as a silent robot must be. Where the OS allows, a wall-time stand-in runs ahead of
# the controller and of other load, so host load starves the controller first, as on a robot;
# bridge.json's cpu.nice says if it did. On sim time there is no robot timing to protect: it polls for
# the answers it holds time for, and ahead of the nodes answering it would only take their CPU.
# Its memory is locked too (bridge.lock_memory), like the controller's on a robot (g1_robot.yaml): some
# hosts' kernels page out file pages untouched for seconds (DAMON here), code included, and a step
# that faults its code back in waits for the disk; bridge.json's cpu.major_page_faults counts those.
STANDIN_NICE = -10


def _ahead_of_the_controller() -> None:
    """preexec_fn of the stand-in: raise its priority if permitted (root or CAP_SYS_NICE), else leave it."""
    with contextlib.suppress(PermissionError):
        os.nice(STANDIN_NICE)


@dataclass(frozen=True)
class StandIn:
    peer: str = "stack"  # bridge.peer
    robot_model: str = ""  # bridge.robot_model
    physics_dt_s: float = 0.002
    camera: bool = False  # the simulated D435i publishing the policy image (no emulated latency)
    command_gap_s: float = 0.0
    clock: str = "wall"  # bridge.clock; sim: the robot graph and the script follow the stand-in's /clock


@dataclass
class StandInRun:
    out: Path
    supervisor: dict[str, Any]
    policy: dict[str, Any]
    bridge: dict[str, Any]
    script: dict[str, Any]
    cpu: dict[str, Any]
    robot_output: str  # what parkour robot printed

    def moves(self) -> list[tuple[str, str, str]]:
        return [(t["from"], t["to"], t["reason"]) for t in self.supervisor["supervisor_transitions"]]


def _configs(tmp: Path, domain: int, bundle: str, standin: StandIn, steps: list[dict] | None) -> tuple[Path, Path]:
    sim = yaml.safe_load((config_dir() / "g1_sim.yaml").read_text())
    sim["dds"] = {"domain": domain, "interface": "lo"}
    sim["bridge"].update(
        clock=standin.clock, peer=standin.peer, robot_model=standin.robot_model, physics_dt_s=standin.physics_dt_s,
        command_gap_s=standin.command_gap_s, lock_memory=True,
    )  # fmt: skip
    sim.setdefault("sim_camera", {}).update({"enabled": standin.camera, "latency_min_s": 0.0, "latency_max_s": 0.0})
    sim["policy"]["bundle"] = bundle
    if steps is not None:
        sim["script"] = {"steps": steps}
    robot = yaml.safe_load((config_dir() / "g1_robot.yaml").read_text())
    robot["dds"] = {"domain": domain, "interface": "lo"}
    robot.setdefault("camera", {})["enabled"] = False  # the stand-in's camera publishes the policy image
    robot["policy"]["bundle"] = bundle
    robot.setdefault("teleop", {})["source"] = "keyboard"  # no operator node: the script drives
    paths = tmp / "standin.yaml", tmp / "robot.yaml"
    for path, data in zip(paths, (sim, robot), strict=True):
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    return paths


def run_against_standin(
    out: Path,
    duration_s: float,
    bundle: str,
    standin: StandIn = StandIn(),
    steps: list[dict] | None = None,
    hog: bool = False,
) -> StandInRun:
    """``steps``: the operator's script (default: g1_sim.yaml's). ``hog``: a process keeps a core busy."""
    domains = claim_domains()  # held while the run lasts
    domain = domains.dds
    env = dict(os.environ, ROS_DOMAIN_ID=str(domains.ros))
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    py, root = sys.executable, repo_root()
    robot_log = out / "parkour_robot.log"
    with tempfile.TemporaryDirectory() as tmp, open(robot_log, "w") as log:
        standin_cfg, robot_cfg = _configs(Path(tmp), domain, bundle, standin, steps)
        procs: list[subprocess.Popen] = []
        hogging = subprocess.Popen([py, "-c", "while True: pass"]) if hog else None
        try:
            robot_cmd = [py, "-m", "parkour_bringup.cli", "robot", "--robot", "g1", "--iface", "lo", "--domain",
                         str(domain), "--live", "--config", str(robot_cfg), "--out", str(out / "robot")]  # fmt: skip
            on_sim_time = standin.clock == "sim"
            if on_sim_time:
                robot_cmd.append("--sim-clock")
            graph = subprocess.Popen(robot_cmd, env=env, cwd=root, stdout=log, stderr=subprocess.STDOUT)
            procs.append(graph)
            deadline = time.monotonic() + READY_TIMEOUT_S
            while not (out / "robot" / "ready" / "policy").exists():
                if graph.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"parkour robot did not come up: {robot_log.read_text()[-3000:]}")
                time.sleep(0.2)
            script = subprocess.Popen([py, "-m", node("script").module, "--config", str(standin_cfg),
                                       "--run-dir", str(out / "script"), *(SIM_TIME_ARGS if on_sim_time else ())],
                                      env=env, cwd=root)  # fmt: skip
            procs.append(script)
            bridge = subprocess.run([py, "-m", node("bridge").module, "--config", str(standin_cfg), "--run-dir",
                                     str(out / "bridge"), "--duration", str(duration_s)], env=env, cwd=root,
                                    capture_output=True, text=True, timeout=duration_s * 4 + 120,
                                    preexec_fn=None if on_sim_time else _ahead_of_the_controller)  # fmt: skip
            if bridge.returncode != 0:
                output = (bridge.stdout[-2000:] + bridge.stderr[-3000:]).strip()
                raise RuntimeError(f"the stand-in robot exited {bridge.returncode}: {output}")
        finally:
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGINT)
            for p in procs:
                try:
                    p.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    p.kill()
            if hogging is not None:
                hogging.kill()
                hogging.wait()

    def read(path: Path) -> dict[str, Any]:
        if not path.is_file():
            raise RuntimeError(f"{path} was not written: {robot_log.read_text()[-3000:]}")
        return json.loads(path.read_text())

    return StandInRun(
        out=out,
        supervisor=read(out / "robot" / "supervisor.json"),
        policy=read(out / "robot" / "policy.json"),
        bridge=read(out / "bridge" / "bridge.json"),
        script=read(out / "script" / "script.json"),
        cpu=read(out / "robot" / "cpu.json"),
        robot_output=robot_log.read_text(),
    )
