"""The whole sim graph on this machine, this tree against an earlier commit, measured the same way in one run.

Each variant is one ``parkour sim`` (G1, bundle ``g1_walk_depth_gated``, the simulated D435i on, no bag)
of ``--duration`` s of sim time, started from its own source tree: this checkout, and ``--baseline``
(a commit, checked out into a temporary git worktree whose generated bundles link to this checkout's).
While it runs, every node process is found in /proc by its run folder and its CPU time (user + system,
all threads) read every 0.2 s, so both variants are measured by this script, not by their own code
(what is read from the run folders: :func:`run_variant`).

``--unpipelined`` adds this tree with ``bridge.lockstep_pipeline: false`` (sim time held at each tick
until its answers arrive). ``--hog`` adds a variant of this tree with a process keeping one core busy
beside it. ``--long S`` adds a run of S sim seconds of this tree for the deadline count. The budget
(``BUDGET``) is checked on this tree's quiet run. Writes the JSON (``--out``) and a PNG beside it.

    .venv/bin/python bench/graph/run.py --baseline 47e704b --duration 60 --unpipelined --hog --long 300
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from parkour_core.interfaces import nodes  # noqa: E402
from parkour_core.provenance import command_line, provenance  # noqa: E402
from parkour_core.stats import write_json  # noqa: E402

BUNDLE = "g1_walk_depth_gated"
PACKAGES = ("parkour_core", "parkour_perception", "parkour_sim", "parkour_safety", "parkour_control",
            "parkour_teleop", "parkour_bringup")  # fmt: skip
GENERATED_BUNDLES = ("g1_walk", "g1_walk_depth_gated")
NODE_MODULES = {n.module: n.key for n in nodes("sim")}
# the graph's budget, on 2 cores with the camera on and no other load
BUDGET = {"sim_real_time_factor_min": 1.0, "policy_period_wall_p99_ms_max": 25.0, "total_cores_max": 1.2}


def _cpu_s(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _nodes_of(run_dir: Path) -> dict[int, str]:
    """pid -> node name of the processes started for ``run_dir``."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        text = [a.decode(errors="replace") for a in args]
        if str(run_dir) not in " ".join(text):
            continue
        for module, name in NODE_MODULES.items():
            if module in text:
                found[int(entry.name)] = name
    return found


class CpuSampler(threading.Thread):
    """CPU seconds per node from the bridge's first reading to its last (the simulated run)."""

    def __init__(self, run_dir: Path) -> None:
        super().__init__(daemon=True)
        self.run_dir = run_dir
        self.first: dict[str, float] = {}
        self.last: dict[str, float] = {}
        self.wall = [0.0, 0.0]
        self.stop = threading.Event()

    def run(self) -> None:
        pids: dict[int, str] = {}
        while not self.stop.is_set():
            pids |= _nodes_of(self.run_dir) if len(pids) < len(NODE_MODULES) else {}
            readings = {name: c for pid, name in pids.items() if (c := _cpu_s(pid)) is not None}
            if "bridge" in readings and not (self.run_dir / "bridge.json").is_file():
                now = time.perf_counter()
                if not self.first:
                    self.first, self.wall[0] = dict(readings), now
                for name, value in readings.items():
                    self.first.setdefault(name, value)
                self.last, self.wall[1] = readings, now
            time.sleep(0.2)

    def report(self, sim_s: float) -> dict[str, Any]:
        wall = self.wall[1] - self.wall[0]
        cpu = {name: self.last[name] - self.first.get(name, self.last[name]) for name in self.last}
        total = sum(cpu.values())
        return {
            "wall_s": round(wall, 2),
            "cores": {n: round(v / wall, 4) for n, v in sorted(cpu.items())} if wall > 0 else {},
            "total_cores": round(total / wall, 4) if wall > 0 else None,
            "cpu_s_per_sim_s": round(total / sim_s, 4) if sim_s else None,
        }


def _config(path: Path, bridge: dict[str, Any] | None = None) -> Path:
    cfg = yaml.safe_load((ROOT / "config" / "g1_sim.yaml").read_text())
    cfg.setdefault("sim_camera", {})["enabled"] = True
    cfg.setdefault("policy", {})["bundle"] = BUNDLE
    cfg.setdefault("bridge", {}).update(bridge or {})
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def _baseline_tree(rev: str, where: Path) -> Path:
    tree = where / f"baseline-{rev}"
    subprocess.run(["git", "worktree", "add", "--detach", "--force", str(tree), rev], cwd=ROOT, check=True,
                   capture_output=True)  # fmt: skip
    for name in GENERATED_BUNDLES:  # built by make setup, not in git
        if not (tree / "models" / name).exists():
            (tree / "models" / name).symlink_to(ROOT / "models" / name)
    return tree


def _hog() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def run_variant(
    name: str, tree: Path, run_dir: Path, duration_s: float, hog: bool, bridge: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One ``parkour sim`` run of ``tree``, and from its run folder:

    - real-time factor with the camera on, and CPU cores per node and in all (CPU seconds per wall second
      of the bridge's run) and CPU seconds per simulated second;
    - the policy loop period on the sim clock (missed deadlines: a period > 1.5 x nominal) and on the wall
      clock, the supervisor's tick period on the wall clock, p50/p99/max;
    - the lowstate age at the supervisor and the depth exposure -> lowcmd latency per command (sim clock);
    - this tree's per-callback costs (bridge, supervisor, policy), which the baseline does not record.
    """
    run_dir = run_dir.resolve()  # the variant runs in its own tree
    if run_dir.exists():
        shutil.rmtree(run_dir)
    env = dict(os.environ)
    # The variant's own packages first on the path: ahead of the editable installs of this checkout.
    env["PYTHONPATH"] = os.pathsep.join([*(str(tree / "src" / p) for p in PACKAGES), str(tree)])
    with tempfile.TemporaryDirectory() as tmp:
        config = _config(Path(tmp) / "bench_graph.yaml", bridge)
        cmd = [sys.executable, "-m", "parkour_bringup.cli", "sim", "--config", str(config), "--out", str(run_dir),
               "--duration", str(duration_s), "--no-bag"]  # fmt: skip
        sampler = CpuSampler(run_dir.resolve())
        hogging = _hog() if hog else None
        sampler.start()
        try:
            proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=3600)
        finally:
            sampler.stop.set()
            if hogging is not None:
                hogging.kill()
                hogging.wait()
    if proc.returncode != 0:
        raise SystemExit(f"{name}: parkour sim exited {proc.returncode}: {proc.stderr[-2000:]}")
    load = {n: json.loads((run_dir / f"{n}.json").read_text()) for n in ("bridge", "supervisor", "policy")}
    bridge, supervisor, policy = load["bridge"], load["supervisor"], load["policy"]
    periods = np.asarray(policy["periods_ms"], dtype=float)
    nominal_ms = float(np.median(periods)) if periods.size else 20.0
    return {
        "tree": str(tree),
        "hog": hog,
        "sim_s": round(bridge["sim_time_s"], 2),
        "sim_real_time_factor": round(bridge["sim_real_time_factor"], 3),
        "cpu": sampler.report(bridge["sim_time_s"]),
        "fell": bridge["fell"],
        "transitions": [f"{t['from']}->{t['to']} ({t['reason']})" for t in supervisor["supervisor_transitions"]],
        "policy_period_ms": policy["policy_period_ms"],
        "policy_period_wall_ms": policy["policy_period_wall_ms"],
        "policy_deadline_misses": int(np.count_nonzero(periods > 1.5 * nominal_ms)),
        "supervisor_tick_period_wall_ms": supervisor["tick_period_wall_ms"],
        "lowstate_age_ms": supervisor["lowstate_age_ms"],
        "policy_state_age_ms": policy.get("state_age_ms"),
        "depth_exposure_to_lowcmd_ms": supervisor.get("depth_exposure_to_lowcmd_ms"),
        "callbacks_ms": {n: load[n].get("callbacks_ms") for n in ("bridge", "supervisor", "policy")},
        "periods_wall_ms": policy["periods_wall_ms"],
        "supervisor_tick_hist": supervisor.get("tick_period_wall_hist"),  # None for a tree that does not write it
    }


def budget(current: dict[str, Any]) -> dict[str, Any]:
    rtf = current["sim_real_time_factor"]
    p99 = current["policy_period_wall_ms"]["p99"]
    cores = current["cpu"]["total_cores"]
    return {
        "sim_real_time_factor": {"value": rtf, "met": rtf >= BUDGET["sim_real_time_factor_min"]},
        "policy_period_wall_p99_ms": {"value": p99, "met": p99 <= BUDGET["policy_period_wall_p99_ms_max"]},
        "total_cores": {"value": cores, "met": cores is not None and cores <= BUDGET["total_cores_max"]},
        "limits": BUDGET,
    }


def plot(variants: dict[str, dict[str, Any]], out: Path) -> None:
    """The PNG: CPU per node stacked per variant, and the period histograms."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(variants)
    nodes = sorted({n for v in variants.values() for n in v["cpu"]["cores"]})
    fig, (ax_cpu, ax_period, ax_tick) = plt.subplots(1, 3, figsize=(17, 4.5))
    bottom = np.zeros(len(names))
    for node in nodes:
        values = np.array([variants[v]["cpu"]["cores"].get(node, 0.0) for v in names])
        ax_cpu.bar(names, values, bottom=bottom, label=node)
        bottom += values
    for i, v in enumerate(names):
        ax_cpu.text(i, bottom[i], f"{bottom[i]:.2f} cores\nRTF {variants[v]['sim_real_time_factor']:.2f}",
                    ha="center", va="bottom", fontsize=9)  # fmt: skip
    ax_cpu.axhline(1.2, color="k", linestyle="--", linewidth=1)
    ax_cpu.set_ylabel("CPU cores (CPU s per wall s of the run)")
    ax_cpu.set_title("CPU per node")
    ax_cpu.legend(fontsize=8)
    ax_cpu.set_ylim(0, max(2.0, float(bottom.max()) * 1.25))
    bins = np.linspace(0, 100, 101)
    for v in names:
        periods = np.clip(np.asarray(variants[v]["periods_wall_ms"], dtype=float), 0, 100)
        ax_period.hist(
            periods, bins=bins, histtype="step", label=f"{v} (p99 {variants[v]['policy_period_wall_ms']['p99']:.0f} ms)"
        )
    ax_period.axvline(20.0, color="k", linewidth=0.8)
    ax_period.set_yscale("log")
    ax_period.set_xlabel("policy loop period, wall clock (ms; clipped at 100)")
    ax_period.set_title("policy period, wall clock")
    ax_period.legend(fontsize=8)
    for v in names:
        hist = variants[v].get("supervisor_tick_hist")
        if hist:
            edges = np.arange(len(hist["counts"]) + 1) * hist["bin_ms"]
            p99 = variants[v]["supervisor_tick_period_wall_ms"]["p99"]
            ax_tick.stairs(hist["counts"], edges, label=f"{v} (p99 {p99:.0f} ms)")
    ax_tick.axvline(5.0, color="k", linewidth=0.8)
    ax_tick.set_yscale("log")
    ax_tick.set_xlim(0, 50)
    ax_tick.set_xlabel("supervisor tick period, wall clock (ms)")
    ax_tick.set_title("supervisor tick period, wall clock (this tree's runs)")
    ax_tick.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "graph_sim.json")
    ap.add_argument("--runs", type=Path, default=ROOT / "runs" / "bench_graph")
    ap.add_argument("--duration", type=float, default=60.0, help="sim seconds per variant")
    ap.add_argument("--baseline", default="", help="an earlier commit to measure beside this tree")
    ap.add_argument("--hog", action="store_true", help="also run this tree with one core kept busy")
    ap.add_argument("--long", type=float, default=0.0, help="also a run of this many sim seconds (deadlines)")
    ap.add_argument(
        "--unpipelined", action="store_true", help="also this tree with bridge.lockstep_pipeline false (held at once)"
    )
    args = ap.parse_args()
    record = provenance(command_line())
    variants: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"current": ROOT}
        if args.baseline:
            trees[f"baseline {args.baseline}"] = _baseline_tree(args.baseline, Path(tmp))
        try:
            for name, tree in trees.items():
                print(f"{name}: {args.duration:g} s of sim", flush=True)
                variants[name] = run_variant(name, tree, args.runs / name.split()[0], args.duration, hog=False)
            if args.unpipelined:
                print("current, lockstep not pipelined", flush=True)
                variants["current, lockstep not pipelined"] = run_variant(
                    "unpipelined", ROOT, args.runs / "unpipelined", args.duration, hog=False,
                    bridge={"lockstep_pipeline": False},
                )  # fmt: skip
            if args.hog:
                print("current with a core kept busy", flush=True)
                variants["current, one core busy"] = run_variant(
                    "hog", ROOT, args.runs / "hog", args.duration, hog=True
                )
        finally:
            for tree in trees.values():
                if tree != ROOT:
                    subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False)
    long_run = None
    if args.long:
        print(f"current: {args.long:g} s of sim for the deadline count", flush=True)
        long_run = run_variant("long", ROOT, args.runs / "long", args.long, hog=False)
        kept = ("sim_s", "sim_real_time_factor", "policy_period_ms", "policy_deadline_misses",
                "policy_period_wall_ms", "cpu", "fell")  # fmt: skip
        long_run = {k: long_run[k] for k in kept}
    current = variants["current"]
    result = {
        **record,
        "what": f"parkour sim, G1, {BUNDLE}, sim camera on, no bag, {args.duration:g} s of sim time per variant",
        "budget": budget(current),
        "variants": {
            n: {k: v for k, v in d.items() if k not in ("periods_wall_ms", "supervisor_tick_hist")}
            for n, d in variants.items()
        },
        "long_run": long_run,
        "summary": [
            {
                "what": f"sim graph real-time factor, camera on ({n})",
                "unit": "x",
                "ours": {"p50": d["sim_real_time_factor"], "p99": None},
            }
            for n, d in variants.items()
        ]
        + [
            {
                "what": f"sim graph CPU, all nodes ({n})",
                "unit": "cores",
                "ours": {"p50": d["cpu"]["total_cores"], "p99": None},
            }
            for n, d in variants.items()
        ]
        + [
            {"what": f"policy period, wall clock ({n})", "unit": "ms", "ours": d["policy_period_wall_ms"]}
            for n, d in variants.items()
        ],
    }
    write_json(args.out, result)
    plot(variants, args.out.with_suffix(".png"))
    for n, d in variants.items():
        print(f"{n}: RTF {d['sim_real_time_factor']}, {d['cpu']['total_cores']} cores {d['cpu']['cores']}, "
              f"policy period wall p99 {d['policy_period_wall_ms']['p99']} ms, "
              f"sim misses {d['policy_deadline_misses']}, fell {d['fell']}")  # fmt: skip
    print(json.dumps(result["budget"]))
    print(f"wrote {args.out} and {args.out.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
