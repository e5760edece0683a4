"""Bring the node graph up as one process per node (two cores: the GIL would serialise threads).

The same nodes `ros2 launch` starts on a ROS install (the list in parkour_core.interfaces); this is
the path for machines with ROS 2 from PyPI, where launch_ros does not exist. A graph runs in the
root namespace or under one of its own, on its own clock (two simulated robots in one ROS domain).
The stack config is validated once, here or by the command that called; the nodes get one ROS
params file made from it (``params.yaml`` in the run folder), not the stack YAML.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from parkour_core import interfaces, params
from parkour_core.config import StackConfig
from parkour_core.ros_process import BRINGUP_PID_ENV

# The bridge is started last, once the others listen.
SIM_NODES = tuple(n.key for n in interfaces.nodes("sim") if n.key != "bridge")
ROBOT_NODES = tuple(n.key for n in interfaces.nodes("robot"))
SIM_TIME_ARGS = ("--ros-args", "-p", "use_sim_time:=true")
MODULES = {n.key: n.module for n in interfaces.NODES}
PARAMS_FILE = "params.yaml"


def ros_args(namespace: str = "/", sim_time: bool = False) -> list[str]:
    """A node's ``--ros-args``: under ``namespace`` (on its clock), on sim time."""
    args = [*interfaces.namespace_args(namespace), *(["-p", "use_sim_time:=true"] if sim_time else [])]
    return ["--ros-args", *args] if args else []


class GraphError(RuntimeError):
    pass


def process_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a process (every thread) so far, from /proc; None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


class CpuWatch:
    """Each node's CPU seconds while the simulation runs (from the bridge's start to the last reading
    before its end): cores per second of run, and CPU seconds per simulated second."""

    def __init__(self, anchor: str = "bridge") -> None:
        self.anchor = anchor  # the node whose run is measured (the simulator's, the robot supervisor's)
        self.started: dict[str, float] = {}
        self.ended: dict[str, float] = {}
        self.wall: tuple[float, float] = (0.0, 0.0)

    def start(self, nodes: list[NodeProcess]) -> None:
        now = time.perf_counter()
        self.wall = (now, now)
        self.started = {n.name: c for n in nodes if (c := process_cpu_s(n.proc.pid)) is not None}

    def sample(self, nodes: list[NodeProcess]) -> None:
        readings = {n.name: c for n in nodes if (c := process_cpu_s(n.proc.pid)) is not None}
        if self.anchor in readings:
            self.wall = (self.wall[0], time.perf_counter())
            self.ended.update(readings)

    def report(self, sim_s: float | None = None) -> dict[str, object]:
        wall = self.wall[1] - self.wall[0]
        per_node = {name: round(self.ended[name] - self.started.get(name, 0.0), 3) for name in self.ended}
        total = sum(per_node.values())
        return {
            "wall_s": round(wall, 3),
            "cpu_s": per_node,
            "cores": {name: round(v / wall, 4) for name, v in per_node.items()} if wall > 0 else {},
            "total_cores": round(total / wall, 4) if wall > 0 else None,
            "cpu_s_per_sim_s": round(total / sim_s, 4) if sim_s else None,
        }


def ros_env(ros_domain_id: int | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")  # Kilted ignores ROS_LOCALHOST_ONLY
    env.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
    env.setdefault("AMENT_PREFIX_PATH", sys.prefix)
    env.setdefault("PYTHONUNBUFFERED", "1")
    # One BLAS thread per node: each node is its own process on a 2-core machine, and OpenBLAS's
    # default thread pool made the depth preprocessing 20-60x slower under load (bench/depth).
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("OMP_NUM_THREADS", "1")
    if ros_domain_id is not None:
        env["ROS_DOMAIN_ID"] = str(ros_domain_id)
    return env


@dataclass
class NodeProcess:
    name: str
    proc: subprocess.Popen
    log_path: Path

    def tail(self, lines: int = 15) -> str:
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])


CONFIG_FILE = "config.yaml"


def write_run_config(cfg: StackConfig, run_dir: Path) -> Path:
    """``run_dir/config.yaml``: the validated config the run used, every key written out (a stack YAML that
    loads to ``cfg``): the run's record for reports, a bag and a replay."""
    import dataclasses

    import yaml

    path = run_dir / CONFIG_FILE
    path.write_text(yaml.safe_dump(dataclasses.asdict(cfg), sort_keys=False))
    return path


def write_params(cfg: StackConfig, run_dir: Path) -> Path:
    """The graph's ROS params file, ``run_dir/params.yaml``: every node's section, from the validated ``cfg``."""
    return params.write_params_file(cfg, run_dir / PARAMS_FILE)


def start_node(
    name: str,
    config: Path | None,
    run_dir: Path,
    env: dict[str, str],
    extra: list[str],
    foreground: bool = False,
    params_file: Path | None = None,
) -> NodeProcess:
    """The node runs on ``params_file`` (:func:`write_params`) where given, else on the stack YAML ``config``
    (as ``ros2 launch`` starts it); a recorder given both records ``config``'s text in its bag.

    ``foreground``: the node shares this terminal (stdin and stdout; its log still gets stderr),
    for the keyboard teleop. It stays in our process group: reading a terminal from another
    session's background group would stop it (SIGTTIN).

    The node stops when this process dies (``ros_process.stop_with_bringup``): call from the main
    thread, since Linux sends the parent-death signal when the thread that started the child ends."""
    logs = run_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log_path = logs / f"{name}.log"
    source = ["--params", str(params_file)] if params_file is not None else []
    if config is not None and (params_file is None or name == "recorder"):
        source += ["--config", str(config)]
    cmd = [sys.executable, "-m", MODULES[name], *source, "--run-dir", str(run_dir), *extra]
    log = open(log_path, "w")  # noqa: SIM115 - the child owns it for its lifetime
    env = {**env, BRINGUP_PID_ENV: str(os.getpid())}
    if foreground:
        proc = subprocess.Popen(cmd, stderr=log, env=env)
    else:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    return NodeProcess(name, proc, log_path)


def wait_ready(nodes: list[NodeProcess], run_dir: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    pending = {n.name for n in nodes}
    while pending:
        for n in nodes:
            if n.name in pending and (run_dir / "ready" / n.name).exists():
                pending.discard(n.name)
            elif n.proc.poll() is not None:
                raise GraphError(f"node {n.name} exited with code {n.proc.returncode} during startup:\n{n.tail()}")
        if time.monotonic() > deadline:
            raise GraphError(f"nodes {sorted(pending)} not ready after {timeout_s:.0f} s; see {run_dir / 'logs'}")
        time.sleep(0.05)


# All nodes write their metrics and leave DDS at once on SIGINT, slowly on a loaded 2-core machine.
# A node that hangs on the way out is killed after this (its metrics must already be written).
STOP_GRACE_S = 30.0


def stop_nodes(nodes: list[NodeProcess], timeout_s: float = STOP_GRACE_S) -> list[str]:
    """SIGINT (nodes write their metrics on the way out), then SIGKILL what is left.

    Returns the names of the nodes that had to be killed, and says so on stderr: their metrics
    files are missing, and the report's error should not be the first hint why.
    """
    for n in nodes:
        if n.proc.poll() is None:
            n.proc.send_signal(signal.SIGINT)
    deadline = time.monotonic() + timeout_s
    killed = []
    for n in nodes:
        try:
            n.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            n.proc.kill()
            n.proc.wait()
            killed.append(n.name)
    if killed:
        print(f"parkour: nodes {killed} did not exit within {timeout_s:.0f} s of SIGINT and were killed; "
              "their metrics files are missing", file=sys.stderr, flush=True)  # fmt: skip
    return killed


def _validated(config: Path, cfg: StackConfig | None) -> StackConfig:
    """``cfg`` where the caller has validated it already, else ``config`` loaded (its one parse)."""
    from parkour_core.config import load_config

    return cfg if cfg is not None else load_config(config)


def run_sim_graph(
    config: Path,
    run_dir: Path,
    duration_s: float,
    ros_domain_id: int | None = None,
    viewer: bool = False,
    may_exit: frozenset[str] = frozenset(),
    teleop: str | None = None,
    record: bool = False,
    extra_nodes: tuple[tuple[str, list[str]], ...] = (),
    namespace: str = "/",
    cfg: StackConfig | None = None,
) -> dict[str, int]:
    """Start supervisor, policy and script; once they are ready, run the bridge for ``duration_s``.

    ``config``: the run's stack YAML (the bag records its text); ``cfg``: the same, validated by the caller
    (default: ``config`` loaded here). The nodes run on the params file made from it.

    ``may_exit`` names nodes whose death is part of the run (fault injection), not a failure.
    ``teleop`` (keyboard, gamepad, joy): teleop_node with that source replaces the script, and the
    run ends early when it exits (the operator quit); the keyboard one runs in this terminal.
    ``record``: the bag recorder writes every topic to ``run_dir/bag`` (MCAP, rosbag2 layout); it is
    ready before the bridge starts, so the bag holds the run from its first message.
    ``extra_nodes``: (name in MODULES, arguments) of further sim-time nodes (a replay's depth player).
    ``namespace``: every node runs under it, the bridge's clock too (``parkour_core.interfaces``).
    """
    cfg = _validated(config, cfg)
    pf = write_params(cfg, run_dir)
    env = ros_env(ros_domain_id)
    sim_time = ros_args(namespace, sim_time=True)
    names = SIM_NODES if teleop is None else tuple(n for n in SIM_NODES if n != "script")
    # A config with ``policy.bundle: ''`` (a robot without a trained policy) runs no policy node.
    names = tuple(n for n in names if n != "policy" or cfg.policy.bundle)
    nodes = [start_node(name, None, run_dir, env, sim_time, params_file=pf) for name in names]
    if teleop is not None:
        teleop_args = ["--source", teleop, *sim_time]
        nodes.append(start_node("teleop", None, run_dir, env, teleop_args, teleop == "keyboard", params_file=pf))
    if record:
        nodes.append(start_node("recorder", config, run_dir, env, sim_time, params_file=pf))
    nodes += [start_node(name, None, run_dir, env, [*extra, *sim_time], params_file=pf) for name, extra in extra_nodes]
    cpu = CpuWatch()
    try:
        wait_ready(nodes, run_dir, timeout_s=60.0)
        bridge_args = ["--duration", str(duration_s), *(["--viewer"] if viewer else []), *ros_args(namespace)]
        bridge = start_node("bridge", None, run_dir, env, bridge_args, params_file=pf)
        nodes.append(bridge)
        cpu.start(nodes)
        while bridge.proc.poll() is None:
            for n in nodes[:-1]:
                if n.name == "teleop" and n.proc.poll() == 0:
                    return _stop_early(nodes, bridge)  # the operator quit
                if n.proc.poll() is not None and n.name not in may_exit:
                    raise GraphError(f"node {n.name} died with code {n.proc.returncode}:\n{n.tail()}")
            if not (run_dir / "bridge.json").is_file():  # written when the simulation ends
                cpu.sample(nodes)
            time.sleep(0.05)
        if bridge.proc.returncode != 0:
            raise GraphError(f"the bridge exited with code {bridge.proc.returncode}:\n{bridge.tail()}")
    finally:
        stop_nodes(nodes)
        _write_cpu(run_dir, cpu)
    return {n.name: n.proc.returncode for n in nodes}


def _write_cpu(run_dir: Path, cpu: CpuWatch) -> None:
    import json

    sim_s = None
    bridge = run_dir / "bridge.json"
    if cpu.anchor == "bridge" and bridge.is_file():
        sim_s = json.loads(bridge.read_text()).get("sim_time_s")
    (run_dir / "cpu.json").write_text(json.dumps(cpu.report(sim_s), indent=2) + "\n")


def _stop_early(nodes: list[NodeProcess], bridge: NodeProcess) -> dict[str, int]:
    """The bridge writes its metrics on SIGINT, like the other nodes: the report still works."""
    stop_nodes([bridge])
    return {n.name: n.proc.returncode for n in nodes}


class LogEcho:
    """New [ERROR] and [WARN] lines of the nodes' logs, for the operator's terminal (on the robot the
    logs are in the run folder; "no rt/lowstate ... is this the right interface?" must not stay there)."""

    def __init__(self, nodes: list[NodeProcess]) -> None:
        self.nodes = nodes
        self.offsets = {n.name: 0 for n in nodes}

    def lines(self) -> list[str]:
        out = []
        for n in self.nodes:
            try:
                with open(n.log_path, errors="replace") as f:
                    f.seek(self.offsets[n.name])
                    text = f.read()
                    self.offsets[n.name] = f.tell()
            except OSError:
                continue
            out += [f"{n.name}: {line.strip()}" for line in text.splitlines() if "[ERROR]" in line or "[WARN]" in line]
        return out


def run_robot_graph(
    config: Path,
    run_dir: Path,
    live: bool,
    ros_domain_id: int | None = None,
    sim_clock: bool = False,
    namespace: str = "/",
    cfg: StackConfig | None = None,
) -> dict[str, int]:
    """``sim_clock``: every node follows /clock (a simulator standing in for the robot holds time for them).
    ``config`` and ``cfg`` as for :func:`run_sim_graph`."""
    cfg = _validated(config, cfg)
    pf = write_params(cfg, run_dir)
    env = ros_env(ros_domain_id)
    extra = (["--live"] if live else []) + ros_args(namespace, sim_time=sim_clock)
    wanted = {
        "policy": bool(cfg.policy.bundle),
        "depth": cfg.camera.enabled,
        # The operator's gamepad, joy node or remote (the keyboard is for simulation only).
        "teleop": cfg.teleop.source != "keyboard",
    }
    names = [n for n in ROBOT_NODES if wanted.get(n, True)]
    nodes = [start_node(name, None, run_dir, env, extra, params_file=pf) for name in names]
    echo = LogEcho(nodes)
    cpu = CpuWatch(anchor="supervisor")
    try:
        wait_ready(nodes, run_dir, timeout_s=60.0)
        # On the robot only the supervisor's death ends the graph: it handles a dead policy or camera
        # itself (fallback gait, stale depth). Stopping it for them would stop the robot's commands.
        supervisor = nodes[0]
        reported: set[str] = set()
        cpu.start(nodes)
        while supervisor.proc.poll() is None:
            for line in echo.lines():
                print(f"parkour robot: {line}", flush=True)
            cpu.sample(nodes)
            for n in nodes[1:]:
                if n.proc.poll() is not None and n.name not in reported:
                    reported.add(n.name)
                    print(f"parkour robot: node {n.name} exited with code {n.proc.returncode}; "
                          f"the supervisor keeps the robot safe:\n{n.tail()}", flush=True)  # fmt: skip
            time.sleep(0.2)
        raise GraphError(f"the supervisor exited with code {supervisor.proc.returncode}:\n{supervisor.tail()}")
    except KeyboardInterrupt:
        return {}
    finally:
        stop_nodes(nodes)
        _write_cpu(run_dir, cpu)
