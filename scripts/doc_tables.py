"""Regenerate the measured tables of the README and the documentation from the JSON result files they come from.

A page (README.md or any ``docs/**/*.md``) marks each generated table with a pair of HTML comments naming the
table and its sources (paths relative to the repository root); one generator function below per table name
reads the sources and returns the markdown table. A source that does not record the "command" and "git_commit"
that made it is refused (:func:`load_source`), so every generated number can be traced to a command and a commit.

    <!-- table: standup_gains (bench/results/standup.json) -->
    | stand gains | ... |
    <!-- /table -->

    .venv/bin/python scripts/doc_tables.py            # rewrite the marked tables of every page in place
    .venv/bin/python scripts/doc_tables.py --check    # exit 1 and print a diff where a page differs
    .venv/bin/python scripts/doc_tables.py --page OTHER.md --root DIR   # one page, sources under DIR
"""

from __future__ import annotations

import argparse
import difflib
import functools
import importlib.util
import inspect
import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as `python scripts/readme_tables.py`: training/ is a package at the root
    sys.path.insert(0, str(REPO))

PROVENANCE_KEYS = ("command", "git_commit")
BLOCK = re.compile(
    r"<!-- table: (?P<name>[\w-]+) \((?P<sources>[^)]*)\) -->(?P<body>.*?)<!-- /table -->",
    re.DOTALL,
)


class TableError(Exception):
    """A marked table that cannot be generated (unknown name, missing or unrecorded source, ...)."""


# ------------------------------------------------------------------------------------------ helpers


def height_label(height_m: float) -> str:
    """A grid column's name: ``flat`` for the flat-ground cell (height 0)."""
    return "flat" if height_m == 0 else f"{100 * height_m:.0f} cm"


def md_row(cells: list[str]) -> str:
    """One markdown table row; an empty cell is written as `| |`."""
    return "|" + "|".join(f" {c} " if c else " " for c in cells) + "|"


def md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = [md_row(header), md_row(["---"] * len(header)), *(md_row(r) for r in rows)]
    return "\n".join(lines) + "\n"


def percent(rate: float | None) -> str:
    return "n/a" if rate is None else f"{100 * rate:.0f} %"


def bench_summary() -> ModuleType:
    """bench/summary.py (not a package), which renders bench/results/SUMMARY.md."""
    spec = importlib.util.spec_from_file_location("bench_summary", REPO / "bench" / "summary.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks the module up while the class is built
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------------------------- generators
def standup_gains(standup: dict[str, Any]) -> str:
    """ "Safety supervisor": stand-ups with three sets of stand gains (bench/results/standup.json).

    The rows: the gains in use ("these"), the gains bounded for 50 ms gaps only (the source's ``before``
    entries) and the gains bounded for neither (its ``old`` entries).
    """
    ours = {entry["what"]: entry["ours"] for entry in standup["summary"]}

    def count(what: str) -> str:
        if what not in ours:
            raise TableError(f'standup.json: no summary entry "{what}"')
        return " / ".join(part.strip() for part in str(ours[what]).split("/"))  # "42/120" -> "42 / 120"

    kd = standup["old_stand_kd"]
    waist = (
        f"waist {kd['waist_roll']:g}"
        if kd["waist_roll"] == kd["waist_pitch"]
        else f"waist roll {kd['waist_roll']:g}, pitch {kd['waist_pitch']:g}"
    )
    old = f"bounded for neither (ankles kd {kd['ankle']:g}, wrists {kd['wrist']:g}, hip yaw {kd['hip_yaw']:g}, {waist})"
    bkd = standup["before_stand_kd"]
    before = (
        f"bounded for 50 ms gaps only (knees kd {bkd['knee']:g}, shoulder yaw and elbows {bkd['elbow']:g}, "
        f"wrists {bkd['wrist']:g})"
    )
    lost = ", commands lost at random"
    return md_table(
        ["stand gains", "gaps 0-50 ms: stood up on the band", "stood alone 3 s after release",
         "30-50 % of commands lost: stood up on the band", "stood alone"],
        [
            [label]
            + [count(f"{what}, {name} stand gains{part}") for part in ("", lost)
               for what in ("stand-up on the band", "standing alone after release")]
            for label, name in (("these", "now"), (before, "before"), (old, "old"))
        ],
    )  # fmt: skip


EVAL_BOLD_HEIGHT_M = 0.10  # the student's cells the pages discuss


def eval_low_platforms(teacher: dict[str, Any], student: dict[str, Any], ablated: dict[str, Any]) -> str:
    """ "A student trained here": `parkour eval` on low platforms, the blind teacher, the student and the
    student with its depth ablated (three eval.json files of results/eval/validation/)."""
    from training.eval.protocol import FAILURES  # falls / stops at the box / times out, as eval.md has them

    if student.get("depth_ablation") or not ablated.get("depth_ablation"):
        raise TableError("eval_low_platforms: the second source must be the plain run, the third the ablation")
    cells = {
        (run, c["speed_mps"], c["height_m"]): c
        for run, result in (("teacher", teacher), ("student", student), ("ablated", ablated))
        for c in result["cells"]
    }
    speeds = sorted({c["speed_mps"] for c in student["cells"]})
    heights = sorted({c["height_m"] for c in student["cells"]})

    def cell(run: str, v: float, h: float, bold: bool = False) -> str:
        if (run, v, h) not in cells:
            raise TableError(f"eval_low_platforms: no {run} cell at {v:g} m/s, {h:g} m")
        c = cells[(run, v, h)]
        rate = percent(c["success_rate"])
        failures = " / ".join(str(c["failure_modes"][k]) for k in FAILURES)
        return f"{f'**{rate}**' if bold else rate} ({failures})"

    def alone(v: float, h: float) -> str:
        return percent(cells[("student", v, h)]["success_rate_student_alone"])

    name = student["bundle"]
    rows = [
        [teacher["bundle"] + (" (the teacher, blind)" if i == 0 else ""), f"{v:g} m/s"]
        + [cell("teacher", v, h) for h in heights]
        for i, v in enumerate(speeds)
    ]
    for v in speeds:
        rows.append(
            [f"**{name}**", f"{v:g} m/s"]
            + [cell("student", v, h, bold=abs(h - EVAL_BOLD_HEIGHT_M) < 1e-9) for h in heights]
        )
        rows.append([f"{name}, alone", f"{v:g} m/s"] + [alone(v, h) for h in heights])
        rows.append([f"{name}, depth ablated", f"{v:g} m/s"] + [cell("ablated", v, h) for h in heights])
    return md_table(["bundle", "speed"] + [height_label(h) for h in heights], rows)


GRID_KEYS = ("bundle_manifest_sha256", "robot_model", "depth_ablation", "seed", "trials_per_cell", "protocol")


def merge_grid_parts(results: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    """Sources that are parts of one grid (`parkour eval --only-heights`: the same bundle, model, seed,
    trials and protocol, each cell seeded as in the whole grid) as one result with every part's cells;
    a cell run by two parts is refused."""
    merged: dict[tuple[str, ...], dict[str, Any]] = {}
    for result in results:
        key = tuple(json.dumps(result.get(k), sort_keys=True) for k in GRID_KEYS)
        if key not in merged:
            merged[key] = {**result, "cells": list(result["cells"])}
            continue
        whole = merged[key]
        have = {(c["speed_mps"], c["height_m"]) for c in whole["cells"]}
        for c in result["cells"]:
            if (c["speed_mps"], c["height_m"]) in have:
                cell = f"{c['speed_mps']:g} m/s, {c['height_m']:g} m"
                raise TableError(f"eval_rows: two sources of {result['bundle']} both ran {cell}")
            whole["cells"].append(c)
    return list(merged.values())


@functools.cache
def committed_manifests() -> dict[str, str]:
    """SHA-256 of each models/*/manifest.json -> its folder's name (which committed bundle an eval ran)."""
    from parkour_core.hashing import sha256_file

    return {sha256_file(m): m.parent.name for m in sorted((REPO / "models").glob("*/manifest.json"))}


def bundle_label(result: dict[str, Any]) -> str:
    """An eval's bundle as its rows name it: a retrained bundle keeps its task's name, so say which folder
    it is, or which committed folder a run's bundle became (by its manifest's SHA-256)."""
    bundle = result["bundle"]
    path = Path(result.get("bundle_path", bundle))
    committed = committed_manifests().get(result.get("bundle_manifest_sha256", ""))
    if "/models/" in str(path) and path.name != bundle:
        return f"{bundle} (`models/{path.name}`)"
    if committed and committed != bundle:
        return f"{bundle} (`models/{committed}`, run as {path})"
    return f"{bundle} ({path})" if path.name != bundle else bundle


def eval_grid(table: str, results: Sequence[dict[str, Any]]) -> tuple[list[float], list[tuple[dict, float, list]]]:
    """The heights every source ran, and per source and speed its cells at those heights, in order; a source
    missing one of them is refused, naming ``table``."""
    heights = sorted(set.intersection(*({c["height_m"] for c in r["cells"]} for r in results)))
    if not heights:
        raise TableError(f"{table}: the sources share no obstacle height")
    grid = []
    for result in results:
        by_cell = {(c["speed_mps"], c["height_m"]): c for c in result["cells"]}
        for v in sorted({c["speed_mps"] for c in result["cells"]}):
            missing = [h for h in heights if (v, h) not in by_cell]
            if missing:
                raise TableError(f"{table}: {result['bundle']} has no cell at {v:g} m/s, {missing[0]:g} m")
            grid.append((result, v, [by_cell[(v, h)] for h in heights]))
    return heights, grid


def eval_rows(*results: dict[str, Any]) -> str:
    """`parkour eval` rows, one per source and speed: bundle, robot model, success (falls / stops at the
    box / times out) and, where BLIND drove, the success of the trials the bundle drove alone. The
    columns are the heights every source ran (a part of a grid beside the whole grid: its cells); parts
    of one grid join into one row per speed (:func:`merge_grid_parts`)."""
    from training.eval.protocol import FAILURES

    heights, grid = eval_grid("eval_rows", merge_grid_parts(results))
    rows = []
    for result, v, cells in grid:
        texts = []
        for c in cells:
            failures = " / ".join(str(c["failure_modes"][k]) for k in FAILURES)
            text = f"{percent(c['success_rate'])} ({failures})"
            if c["blind_trials"]:
                text += f"; alone {percent(c['success_rate_student_alone'])}, BLIND in {c['blind_trials']}"
            texts.append(text)
        trials = f"{result['trials_per_cell']}"
        rows.append([bundle_label(result), result.get("robot_model", "default"), f"{v:g} m/s", trials, *texts])
    return md_table(["bundle", "model", "speed", "trials"] + [height_label(h) for h in heights], rows)


def eval_alone(*results: dict[str, Any]) -> str:
    """The headline of `parkour eval` rows: per bundle and speed, the success of the trials the bundle drove
    alone, and beside it the trials the supervisor's BLIND fallback finished (failures in the headline)."""
    heights, grid = eval_grid("eval_alone", results)
    rows = []
    for result, v, cells in grid:
        texts = [
            f"**{percent(c['success_rate_student_alone'])}** "
            f"(+{percent(c['success_rate_blind_finished'])} BLIND-finished)"
            for c in cells
        ]
        name = f"`{Path(result['bundle_path']).name}`"
        if result.get("teacher"):  # a privileged teacher row drives the walking policy's bundle
            name = f"`{Path(result['teacher']).parent.name}` (teacher, privileged)"
        rows.append([name, f"{v:g} m/s", result.get("seed_set", "custom"), str(result["trials_per_cell"]), *texts])
    return md_table(["bundle", "speed", "seeds", "trials"] + [height_label(h) for h in heights], rows)


def climb_teacher_windows(report: dict[str, Any]) -> str:
    """The climbing teacher's curve in windows of iterations (``python -m training.tasks.climb_teacher.report``):
    env-steps at each window's end, the mean curriculum level, and boxes passed of those attempted by height."""
    levels = report["levels_m"]
    seen = [k for k in range(len(levels)) if any(w["boxes_attempted_by_level"][k] for w in report["windows"])]
    rows = []
    for w in report["windows"]:  # env_steps: counted from the run's start to the window's end
        rates = [w["pass_rate_by_level"][k] for k in seen]
        first, last = w["iterations"]
        cells = ["-" if r is None else percent(r) for r in rates]
        rows.append([f"{first}-{last}", f"{w['env_steps'] / 1e6:.1f} M", f"{w['mean_level']:.2f}", *cells])
    return md_table(["iterations", "env-steps", "mean level", *(f"{100 * levels[k]:.0f} cm" for k in seen)], rows)


def demo_runs(demo: dict[str, Any]) -> str:
    """ "Demo results": each `make demo` run of bench/results/demo.json, what became of each box."""
    boxes = [b for b in demo["runs"][0]["boxes"] if b != "side_block"]  # the side block is not on the path
    rows = []
    for k, run in enumerate(demo["runs"]):
        fell = f"at {run['fell_at_s']:.1f} s ({run['to_damp']})" if run["fell"] else "no"
        blind = f"{run['blind_s']:.2f} s ({', '.join(sorted(set(run['to_blind'])))})" if run["to_blind"] else "0 s"
        hung = run.get("band_hung_at_s") or []
        end = run.get("final_mode", "-") + (f", band hooked on at {hung[0]:.1f} s" if hung else "")
        rows.append(
            [str(k + 1), *(run["boxes"][b] for b in boxes), f"{run['forward_displacement_m']:.2f}", fell, blind, end]
        )
    return md_table(["run", *boxes, "forward (m)", "fell", "BLIND", "end"], rows)


def demo_timing(demo: dict[str, Any]) -> str:
    """ "Demo results": the first run's clocks (bench/results/demo.json, first_report)."""
    r = demo["first_report"]

    def pq(d: dict[str, Any], unit: str = "ms") -> str:
        return f"p50 {d['p50']:g}, p99 {d['p99']:g}" + (f", max {d['max']:g}" if "max" in d else "") + f" {unit}"

    rows = [
        ["policy period, sim clock", pq(r["policy_period_ms"])],
        ["policy period, wall clock", pq({k: round(v, 1) for k, v in r["policy_period_wall_ms"].items()})],
        [
            f"policy inference ({Path(r['bundle']).name})",
            pq({k: round(v, 2) for k, v in r["policy_inference_ms"].items() if k != "n"}),
        ],
        ["lowstate age at the supervisor (sim clock)", pq(r["lowstate_age_ms"])],
        ["depth age at the policy (exposure to use, sim clock)", pq(r["depth_age_ms"]) + f", {r['depth_fps']:g} fps"],
        ["policy deadlines missed (sim clock)", str(r["deadline_misses"])],
        [
            "commands beyond a limit (bridge audit)",
            f"{r['lowcmd_limit_violations']} ({r['limit_clamps']} values clamped)",
        ],
        ["sim real-time factor", f"{r['sim_real_time_factor']:g}"],
    ]
    return md_table(["metric", "first run"], rows)


COMPARE_LABELS = {"g1_walk": "g1_walk (teacher)"}


def compare_walk(compare: dict[str, Any]) -> str:
    """ "A student trained here": `parkour train compare-walk`, one row per bundle
    (results/training/student_walk/compare.json). Its segments are the script's non-zero commands in order."""
    commands = [step["cmd"] for step in compare["script"] if "cmd" in step and any(step["cmd"])]
    header_speeds = " / ".join(f"{cmd[0]:.1f}" for cmd in commands)
    turning = " m/s turning" if commands and commands[-1][2] else " m/s"
    rows = []
    for name, run in compare["bundles"].items():
        by_command = {tuple(s["command"]): s["mean_vx"] for s in run["segments"]}
        rows.append(
            [
                COMPARE_LABELS.get(name, name),
                "yes" if run["fell"] else "no",
                f"{run['distance_m']:.2f}",
                f"{run['speed_rms_error_mps']:.3f}",
                f"{run['yaw_rate_rms_error']:.3f}",
                " / ".join(f"{by_command[tuple(cmd)]:.2f}" for cmd in commands),
                f"{run['time_in_mode_s']['BLIND']:g} s",
            ]
        )
    header = [
        "bundle",
        "fell",
        "distance (m)",
        "speed RMS error (m/s)",
        "yaw-rate RMS error (rad/s)",
        f"mean speed at {header_speeds}{turning}",
        "BLIND",
    ]
    return md_table(header, rows)


def closed_loop_replay(result: dict[str, Any]) -> str:
    """ "Closed-loop replay": one recorded walk re-driven by `parkour bag replay --sim` with each depth
    source (bench/results/replay_closed_loop.json, bench/bags/closed_loop.py)."""
    labels = {"sim_camera": "Simulated camera", "bag": "The bag's depth frames"}
    rows = []
    for source, r in result["replays"].items():
        rows.append(
            [
                labels.get(source, source),
                "same" if r["same_mode_sequence"] else "different: " + ", ".join(r["modes_replayed"]),
                f"{1e3 * r['path_m']['p50']:.1f} / {1e3 * r['path_m']['max']:.1f} mm",
                f"{r['joint_rad']['p50']:.3f} rad",
            ]
        )
    return md_table(["Depth source", "Mode sequence", "Path divergence p50 / max", "Joint divergence p50"], rows)


def trained_runs(*manifests: dict[str, Any]) -> str:
    """ "A student trained here": how each shipped student was trained and exported, from its bundle's
    manifest.json (models/<name>/manifest.json, ``provenance``)."""
    rows = []
    for m in manifests:
        p = m["provenance"]
        rows.append(
            [
                f"`{m['name']}`",
                f"`{p['command']}`",
                f"{p['wall_s'] / 60:.0f} min",
                p["training"],
                p.get("precision_choice", "int8 (passed the exporter's parity check against fp32)"),
                f"`{p['git_commit'][:7]}{'-dirty' if p['git_commit'].endswith('-dirty') else ''}`",
            ]
        )
    return md_table(["bundle", "command", "wall time", "training", "export", "commit"], rows)


def smoke_run(smoke: dict[str, Any]) -> str:
    """ "The smoke run": one `parkour train smoke` (its smoke.json, kept under results/training/pipeline/)."""
    wall = smoke["stage_wall_s"]
    minutes, seconds = divmod(round(wall["total"]), 60)
    stages = ", ".join(f"{k} {v:.0f} s" for k, v in wall.items() if k != "total")
    returns = smoke["teacher_return"]
    n = max(1, min(10, len(returns) // 2))
    first, last = sum(returns[:n]) / n, sum(returns[-n:]) / n
    checks = smoke["export_checks"]
    export = f"ONNX vs torch {checks['fp32_onnx_vs_torch']['max_action_error']:.1e}"
    if "int8_vs_fp32_onnx" in checks:
        int8 = checks["int8_vs_fp32_onnx"]
        export += f", int8 vs fp32 {int8['max_action_error']:.3f} (tolerance {int8['tolerance']:.3f})"
    sim = smoke["sim"]
    if not sim.get("ran"):
        drove = "not run"
    else:
        drove = f"active from {sim['active_from_s']:.1f} s, " + (
            f"fell {sim['fell_at_s'] - sim['active_from_s']:.1f} s after activation" if sim["fell"] else "did not fall"
        )
    rows = [
        ["size, seed", f"`{smoke['size']}`, {smoke['seed']}"],
        ["wall time", f"{minutes}:{seconds:02d} ({stages})"],
        [f"teacher return, mean of the first / last {n} iterations", f"{first:.0f} / {last:.0f}"],
        ["export checks (max action error)", export],
        ["the student in `parkour sim`", drove],
    ]
    return md_table(["", "measured"], rows)


def mm_quality(query: dict[str, Any]) -> str:
    """ "Motion matching": the quality of synthesized motions and the query latency (bench/results/mm_query.json,
    bench/mm/query.py)."""
    q = query["quality"]
    jump, skate = q["max_joint_vel_jump_radps"], q["foot_skate_m"]
    entry = q["entry_distance_hist"]["all"]
    ours, brute = query["aabb_index"], query["numpy_brute_force_argmin"]
    rows = [
        [
            "largest joint-velocity jump at a switch",
            f"{jump['with_inertialization']:.0f} rad/s with inertialization, {jump['without_inertialization']:.0f} "
            f"without (ordinary frames: p99 {jump['non_switch_frames_p99']:.1f} rad/s)",
        ],
        ["foot skate per contact frame", f"p50 {1e3 * skate['p50']:.1f} mm, p95 {1e3 * skate['p95']:.0f} mm"],
        [
            "entry distances",
            f"{entry['min_m']:.2f}-{entry['max_m']:.2f} m, {100 * entry['occupied_fraction']:.0f} % of the "
            f"{entry['bin_m']:g} m bins filled",
        ],
        [
            f"query latency ({query['database_rows']:,} x {query['feature_dims']} database)",
            f"p50 {ours['p50_us']:.0f} µs, p99 {ours['p99_us']:.0f} µs; brute-force numpy argmin "
            f"{brute['p50_us']:,.0f} / {brute['p99_us']:,.0f} µs ({query['speedup_p50']:.1f}x at p50, "
            f"{100 * query['agreement']:.0f} % agreement)",
        ],
        ["synthesis", f"{query['synth_clips_per_s']:.1f} clips/s"],
    ]
    return md_table([f"{q['motions']} motions, seed {q['seed']}", "measured"], rows)


def graph_variants(result: dict[str, Any]) -> str:
    """ "The whole graph": one row per `bench/graph/run.py` variant and its long run, with the budget's
    three figures and what it adds (bench/results/graph_sim.json)."""
    runs = dict(result["variants"])
    if result.get("long_run"):
        runs[f"current, {result['long_run']['sim_s']:g} s run"] = result["long_run"]
    rows = []
    for name, v in runs.items():
        wall = v["policy_period_wall_ms"]
        rows.append(
            [
                name,
                f"{v['sim_real_time_factor']:.3g}",
                f"{v['cpu']['total_cores']:.2f}",
                f"{wall['p50']:.1f} / {wall['p99']:.1f} / {wall['max']:.0f}",
                f"{v['policy_deadline_misses']} in {v['sim_s']:g} s",
                "yes" if v["fell"] else "no",
            ]
        )
    limits = result["budget"]["limits"]
    header = [
        "variant",
        f"real-time factor (budget >= {limits['sim_real_time_factor_min']:g})",
        f"CPU cores, all nodes (<= {limits['total_cores_max']:g})",
        f"policy period, wall clock p50 / p99 / max ms (p99 <= {limits['policy_period_wall_p99_ms_max']:g})",
        "policy deadlines missed (sim clock)",
        "fell",
    ]
    return md_table(header, rows)


ROBOT_MEASURES = {
    "policy_period_wall_ms": "policy period",
    "supervisor_tick_period_wall_ms": "supervisor tick period",
    "lowstate_age_ms": "lowstate age at the supervisor",
    "depth_exposure_to_lowcmd_ms": "depth exposure -> lowcmd write, every write",
    "depth_exposure_to_first_lowcmd_ms": "depth exposure -> the first lowcmd write that used the frame",
    "standin_step_period_wall_ms": "the stand-in robot's step period",
}


def robot_mode(result: dict[str, Any]) -> str:
    """ "The whole graph": robot mode on the wall clock against the stand-in, quiet and beside a busy core
    (bench/results/graph_robot.json, bench/graph/robot.py)."""
    runs = result["runs"]
    rows = []
    for key, label in ROBOT_MEASURES.items():
        cells = []
        for run in runs.values():
            d = run.get(key) or {}
            cells.append("n/a" if d.get("p50") is None else f"{d['p50']:.1f} / {d['p99']:.1f} / {d['max']:.0f}")
        rows.append([f"{label} (ms)", *cells])
    rows.append(["fell", *("yes" if r["fell"] else "no" for r in runs.values())])
    return md_table(["wall clock, p50 / p99 / max", *runs], rows)


def faults(result: dict[str, Any]) -> str:
    """ "Fault injection": `parkour faults`, one row per fault with its reason, deadline and verdict."""
    rows = []
    for f in result["faults"]:
        returned = ""
        if f.get("return_deadline_ms") is not None:
            returned = f"{f['time_to_return_ms']:g} of {f['return_deadline_ms']:g}" if f.get("returned") else "no"
        rows.append(
            [
                f["fault"],
                " / ".join(f["safe_modes"]),
                ", ".join(f["expected_reasons"]) or "none: no mode change",
                "-" if f["time_to_safe_ms"] is None else f"{f['time_to_safe_ms']:g}",
                f"{f['deadline_ms']:g} ({f['deadline_is']})",
                returned or "-",
                str(f["limit_violations"]),
                "yes" if f["fell"] else "no",
                "pass" if f["passed"] else "FAIL",
            ]
        )
    header = ["fault", "safe mode", "reason that counts", "time to safe (ms)", "deadline (ms)",
              "back to ACTIVE (ms, of deadline)", "limit violations", "fell", "result"]  # fmt: skip
    return md_table(header, rows)


def broken_rules(result: dict[str, Any]) -> str:
    """ "Fault injection": bench/faults/broken_rules.py, one row per rule removed or slowed."""
    rows = [[r["what"], r["fault"], "caught" if r["caught"] else "MISSED", r["verdict"]] for r in result["rows"]]
    rows.append([f"{result['caught']} of {result['breaks']} caught", "", "", ""])
    return md_table(["rule broken", "fault run", "suite", "its verdict"], rows)


def install_downloads(result: dict[str, Any]) -> str:
    """ "Quick start": what an install downloads from PyPI (bench/install/downloads.py)."""
    what = {"torch_default_build": "torch 2.13.0 from the default index (the CUDA build)",
            "robot_runtime": "the robot runtime (`scripts/setup.sh --robot`, requirements/robot.txt)"}  # fmt: skip
    rows = []
    for key, label in what.items():
        part = result[key]
        largest = ", ".join(f"{p['name']} {p['bytes'] / 1e6:.0f} MB" for p in part["largest"][:3])
        rows.append([label, str(part["packages"]), f"{part['download_mb']:,}", largest])
    return md_table(["install", "packages", "download (MB)", "largest"], rows)


def bench_rows(*results: Path) -> str:
    """Every row of bench results, as SUMMARY.md shows them (p50 and p99 ratios). It takes the files, not
    their contents: results written before the ``summary`` convention are read by summary.py's extractor
    for that file name."""
    bench = bench_summary()
    rows = []
    for r in (row for path in results for row in bench.rows_for(path)):
        if r.note:
            rows.append([r.what, r.note, "", ""])
            continue
        ratios = [(q, bench.ratio((r.ours or {}).get(q), (r.peer or {}).get(q))) for q in ("p50", "p99")]
        ratio = ", ".join(f"{q} {x:.2f}" for q, x in ratios if x is not None)
        peer = f"{r.peer['name']}: {bench._pair(r.peer, r.unit)}" if r.peer else ""
        rows.append([r.what, bench._pair(r.ours, r.unit), peer, ratio])
    return md_table(["what", "ours p50 / p99", "peer p50 / p99", "ratio ours / peer"], rows)


def training_env_steps(result: dict[str, Any]) -> str:
    """ "The training library": env-steps/s of the student task beside bare MuJoCo and the loop it replaced,
    one bench/training/env_steps.py run (medians, p1-p99 of the per-iteration or per-step rates)."""

    def rate(r: dict[str, Any]) -> str:
        return f"{r['median']:.0f} ({r['p1']:.0f}-{r['p99']:.0f})"

    bare = result["bare_mujoco_env_steps_per_s"]["median"]
    rows = [
        [f"bare MuJoCo: the same robot, {result['num_envs']} envs, physics step and PD servos, standing",
         rate(result["bare_mujoco_env_steps_per_s"]), "1.00"],
        [f"`{result['config']}` through the library's runner (collect + update), this tree",
         rate(result["task_env_steps_per_s"]), f"{result['task_env_steps_per_s']['median'] / bare:.2f}"],
    ]  # fmt: skip
    if "baseline_env_steps_per_s" in result:
        base = result["baseline_env_steps_per_s"]
        policy = result.get("omp_wait_policy", {}).get("baseline")
        ran = f", as it ran (OMP_WAIT_POLICY {policy or 'unset'})" if "omp_wait_policy" in result else ""
        rows.append([f"the same task's own loop at `{result['baseline_commit']}` (before the library){ran}",
                     rate(base), f"{base['median'] / bare:.2f}"])  # fmt: skip
        rows.append(["this tree / that loop", f"**{result['ratio_task_to_baseline_median']:.2f}x**", ""])
    if "baseline_under_our_wait_policy_env_steps_per_s" in result:
        base = result["baseline_under_our_wait_policy_env_steps_per_s"]
        ours = result["omp_wait_policy"]["ours"]
        rows.append(
            [f"that loop under this tree's OMP_WAIT_POLICY ({ours})", rate(base), f"{base['median'] / bare:.2f}"]
        )
        rows.append(["this tree / that loop, the same wait policy",
                     f"**{result['ratio_task_to_baseline_under_our_wait_policy_median']:.2f}x**", ""])  # fmt: skip
    return md_table(["", "env-steps/s, median (p1-p99)", "of bare MuJoCo"], rows)


def training_time_split(result: dict[str, Any]) -> str:
    """ "The training library": where an env-step's time goes (bench/training/env_steps.py's timers)."""
    rows = [[what, f"{us:.0f}", percent(result["time_fraction"][what])]
            for what, us in result["time_per_env_step_us"].items()]  # fmt: skip
    return md_table(["part", "us per env-step", "share"], rows)


def teacher_backends(result: dict[str, Any]) -> str:
    """ "Training at GPU scale": PHP's teacher on both backends at one env count (bench/training/teacher_backends)."""
    rows = []
    for backend, r in result["env_steps_per_s"].items():
        rate = f"{r['median']:.0f} ({r['p1']:.0f}-{r['p99']:.0f})" if r["median"] is not None else "not run"
        rows.append([backend, result["device"], str(result["num_envs"]), rate, str(r["n"])])
    ratio = result["mujoco_warp_over_mujoco_cpu"]
    rows.append(["mujoco_warp / mujoco_cpu", "", "", f"**{ratio:.2f}x**" if ratio is not None else "-", ""])
    table = md_table(["backend", "device", "envs", "env-steps/s, median (p1-p99)", "iterations"], rows)
    host_rows = []
    for config, host in result["host"].items():
        cells = [host[k] for k in ("host_mdp_ms", "physics_step_ms", "depth_rays_ms")]
        host_rows.append([f"`{config}`", str(host["num_envs"]), *(f"{c['median']:.0f} ({c['p99']:.0f})" for c in cells),
                          str(host["steps"])])  # fmt: skip
    host_table = md_table(["on MuJoCo-Warp", "envs", "host MDP ms/step, median (p99)", "Physics.step ms",
                           "depth rays ms", "steps"], host_rows)  # fmt: skip
    return table.rstrip("\n") + "\n\n" + host_table


def stage2_ppo_weight(result: dict[str, Any]) -> str:
    """ "Retrained through the library": the DAgger-only stage-2 run beside the one where lambda_PPO carried
    weight (training/tasks/student_step/compare.py's JSON: training figures and the 10 cm eval cells)."""
    from training.tasks.student_step.compare import markdown

    return markdown(result)


def teacher_speed(result: dict[str, Any]) -> str:
    """ "Its teacher is little faster": stage 2's teacher on the course (training/tasks/student_step/teacher_speed.py),
    its targets as given beside them clamped where the supervisor clamps them."""
    cells = {(c["command_mps"], c["height_m"], c["randomized"], c.get("supervisor_limits", False)): c
             for c in result["cells"]}  # fmt: skip
    heights = sorted({k[1] for k in cells})
    rows = []
    for randomized in (False, True):
        for speed in sorted({k[0] for k in cells}):
            conditions = "the training's randomization" if randomized else "without randomization (the eval's)"
            row = [f"{speed:g} m/s, {conditions}"]
            for height in heights:
                for limits in (False, True):
                    c = cells.get((speed, height, randomized, limits))
                    row.append("-" if c is None else f"{c['speed_along_course_mps']['mean']:.2f} m/s "
                               f"({c['falls']} falls, {c['platforms_passed']} passed)")  # fmt: skip
            rows.append(row)
    header = ["command"] + [f"{100 * h:.0f} cm, {how}" for h in heights for how in ("targets as given", "clamped")]
    return md_table(header, rows)


def h1_walk(result: dict[str, Any]) -> str:
    """ "H1": how far the h1_walk task got (training/tasks/h1_walk/report.py: the curve, the training env,
    the graph)."""
    t, env, graph = result["training"], result["in_training_env"], result["in_graph"]
    first, last = t["first_iterations"], t["last_iterations"]
    speed = env["forward_speed_mps_of_those_up"]
    before = t.get("previous")
    rows = [
        ["training", f"{t['minutes']:g} min on 2 CPU cores, {t['iterations']} iterations, {t['env_steps']:,} env-steps "
         f"({t['env_steps_per_s_median']:.0f}/s)", (f"continued from a {before['minutes']:g}-min run "
         f"({before['iterations']} iterations, `{before['report']}`): {before['minutes'] + t['minutes']:g} min in all"
         if before else "")],
        ["episode length (s), first / last 50 iterations", f"{first['episode_length_s']:.2f} / "
         f"{last['episode_length_s']:.2f}", "episodes end at a fall or at 20 s"],
        ["episodes ended by a fall, first / last 50", f"{percent(first['fell_fraction'])} / "
         f"{percent(last['fell_fraction'])}", "the rest ended at 20 s or at targets the supervisor would refuse"
         + (f" ({percent(first['refused_fraction'])} / {percent(last['refused_fraction'])})"
            if "refused_fraction" in first else "")],
        ["planar speed error (m/s), first / last 50", f"{first['speed_error_mps']:.2f} / {last['speed_error_mps']:.2f}",
         "commands vx -0.5..1, vy +-0.3, yaw +-0.5"],
        [f"training env: {env['robots']} H1s at {env['command'][0]:g} m/s for {env['seconds']:g} s",
         f"{env['fell']} fell" + (f"; those up: {speed:.2f} m/s forward" if speed is not None else ""),
         "the bundle through the runtime's PolicyRunner"],
        ["`parkour sim --robot h1 --bundle h1_walk`, scripted walk", f"**{graph['verdict']}**: "
         + (f"fell at {graph['fell_at_s']:.1f} s" if graph["fell"] else "no fall")
         + f", {graph['forward_displacement_m']:.2f} m forward ({graph['distance_m']:.2f} m path)",
         (f"ACTIVE from {graph['active_from_s']:.1f} s" if graph["active_from_s"] is not None else "never ACTIVE")
         + "".join(f"; {to} at {t:.1f} s ({why})" for t, to, why in graph["transitions"][3:])],
    ]  # fmt: skip
    return md_table(["", "result", "note"], rows)


GENERATORS: dict[str, Callable[..., str]] = {
    "h1_walk": h1_walk,
    "stage2_ppo_weight": stage2_ppo_weight,
    "stage2_variants": stage2_ppo_weight,
    "teacher_speed": teacher_speed,
    "teacher_backends": teacher_backends,
    "standup_gains": standup_gains,
    "eval_low_platforms": eval_low_platforms,
    "compare_walk": compare_walk,
    "eval_rows": eval_rows,
    "eval_alone": eval_alone,
    "climb_teacher_windows": climb_teacher_windows,
    "demo_runs": demo_runs,
    "bench_rows": bench_rows,
    "install_downloads": install_downloads,
    "faults": faults,
    "broken_rules": broken_rules,
    "demo_timing": demo_timing,
    "closed_loop_replay": closed_loop_replay,
    "trained_runs": trained_runs,
    "smoke_run": smoke_run,
    "mm_quality": mm_quality,
    "graph_variants": graph_variants,
    "robot_mode": robot_mode,
    "training_env_steps": training_env_steps,
    "training_time_split": training_time_split,
}
TAKES_PATHS = {bench_rows}  # checked for provenance like the others, then handed over as files


# ------------------------------------------------------------------------------ blocks and checks
@dataclass(frozen=True)
class Block:
    name: str
    sources: list[str]
    body: str  # the text between the two markers
    start: int  # of body in the page
    end: int


def find_blocks(text: str) -> list[Block]:
    blocks = [
        Block(
            name=m["name"],
            sources=[s.strip() for s in m["sources"].split(",") if s.strip()],
            body=m["body"],
            start=m.start("body"),
            end=m.end("body"),
        )
        for m in BLOCK.finditer(text)
    ]
    if text.count("<!-- table:") != len(blocks):
        raise TableError("a `<!-- table: NAME (SOURCES) -->` marker without its `<!-- /table -->`, or malformed")
    return blocks


def load_source(path: Path) -> dict[str, Any]:
    """A result file, refused unless it records the command and the commit that made it."""
    if not path.is_file():
        raise TableError(f"{path}: no such file")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise TableError(f"{path}: not JSON ({e})") from e
    # A bundle's manifest.json keeps its provenance under "provenance"; result files keep it at the top.
    recorded = data.get("provenance", data) if isinstance(data, dict) else None
    missing = [k for k in PROVENANCE_KEYS if not (isinstance(recorded, dict) and recorded.get(k))]
    if missing:
        raise TableError(
            f"{path}: no {' / '.join(repr(k) for k in missing)}: a generated table must come from a result file "
            "that records the command and the git commit that made it"
        )
    return data


def generate(block: Block, root: Path) -> str:
    """The body a block should have: a blank line, the generated table, a blank line."""
    generator = GENERATORS.get(block.name)
    if generator is None:
        raise TableError(f"unknown table {block.name!r} (known: {', '.join(GENERATORS)})")
    params = inspect.signature(generator).parameters.values()
    variadic = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
    wanted = len(params)
    if (variadic and not block.sources) or (not variadic and len(block.sources) != wanted):
        raise TableError(f"table {block.name!r} takes {wanted} source(s), the marker names {len(block.sources)}")
    sources = [load_source(root / s) for s in block.sources]
    try:
        table = generator(*([root / s for s in block.sources] if generator in TAKES_PATHS else sources))
    except (KeyError, TypeError, ValueError) as e:
        raise TableError(f"table {block.name!r}: unexpected source contents ({e!r})") from e
    return "\n\n" + table + "\n"


def pages(root: Path = REPO) -> list[Path]:
    """The pages that may carry generated tables: README.md and the documentation site's pages."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def check(page: Path, root: Path = REPO) -> list[str]:
    """A unified diff for each marked table of the page that differs from its sources (empty: all agree)."""
    diffs = []
    for block in find_blocks(page.read_text()):
        expected = generate(block, root)
        if block.body != expected:
            diffs.append(
                "".join(
                    difflib.unified_diff(
                        block.body.splitlines(keepends=True),
                        expected.splitlines(keepends=True),
                        fromfile=f"{page.name}: table {block.name}",
                        tofile=f"generated from {', '.join(block.sources)}",
                    )
                )
            )
    return diffs


def update(page: Path, root: Path = REPO) -> list[str]:
    """Rewrite every marked table of the page from its sources; the names of the tables that changed."""
    text = page.read_text()
    changed, out, at = [], [], 0
    for block in find_blocks(text):
        expected = generate(block, root)
        if block.body != expected:
            changed.append(block.name)
        out += [text[at : block.start], expected]
        at = block.end
    out.append(text[at:])
    if changed:
        page.write_text("".join(out))
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="do not write; exit 1 with a diff if a table differs")
    parser.add_argument("--page", type=Path, action="append", help="a page to process (default: all of them)")
    parser.add_argument("--root", type=Path, default=REPO, help="the folder the sources' paths are relative to")
    args = parser.parse_args(argv)
    try:
        todo = args.page or pages(args.root)
        if args.check:
            diffs = [diff for page in todo for diff in check(page, args.root)]
            for diff in diffs:
                print(diff, end="" if diff.endswith("\n") else "\n")
            if diffs:
                print(f"{len(diffs)} table(s) differ from their sources: run {sys.argv[0]}")
                return 1
            print(f"{len(todo)} page(s): every generated table agrees with its sources")
            return 0
        for page in todo:
            changed = update(page, args.root)
            if changed:
                print(f"{page}: rewrote {', '.join(changed)}")
        return 0
    except TableError as e:
        print(f"doc_tables: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
