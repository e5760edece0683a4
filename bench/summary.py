"""Collect every bench/results/*.json into one table: bench/results/SUMMARY.md.

One row per measurement: what, ours p50 / p99, the peer measured in the same run on the same input
(name, p50 / p99), the ratio ours / peer (below 1: ours takes less time; for rates, marked "/s", above 1
is better) and the source file. A result file says what to show in a top-level ``summary`` list
(``{"what", "unit", "ours": {"p50", "p99"}, "peer": {"name", "p50", "p99"}}``); files written before that
convention are read by the extractors below. An expected file that is missing gives a "not measured"
row; a file nobody summarises gives a row saying so.

    .venv/bin/python bench/summary.py [--results bench/results] [--out bench/results/SUMMARY.md]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
NOT_MEASURED = "not measured"


@dataclass(frozen=True)
class Row:
    what: str
    source: str
    unit: str = "ms"
    ours: dict[str, Any] | None = None  # {"p50": x, "p99": y}
    peer: dict[str, Any] | None = None  # {"name": ..., "p50": x, "p99": y}
    note: str = ""  # replaces the numbers when there are none ("not measured", ...)


def ratio(ours: float | None, peer: float | None) -> float | None:
    """ours / peer, or None when either is missing or the peer is zero."""
    if ours is None or peer is None or peer == 0:
        return None
    return ours / peer


def _q(d: dict[str, Any] | None, key: str) -> float | None:
    if not d:
        return None
    v = d.get(key)
    return float(v) if isinstance(v, int | float) else None


def _pq(d: dict[str, Any] | None, scale: float = 1.0) -> dict[str, float | None]:
    return {k: (None if (v := _q(d, k)) is None else v * scale) for k in ("p50", "p99")}


# ------------------------------------------------------------------------- files without a "summary"
def _policy(d: dict[str, Any], src: str) -> list[Row]:
    """policy.json before it had a ``summary`` (one random-weight PHP student, int8, against fp32)."""
    fp32 = "plain onnxruntime, fp32"
    rows = [
        Row(
            "PHP student control step, one core, steady state (ours int8 PolicyRunner)",
            src,
            ours=_pq(d.get("ours_ms")),
            peer={"name": fp32, **_pq(d.get("baseline_ms"))},
        )
    ]
    cold = d.get("cold_cache")
    if cold:
        rows.append(
            Row(
                "the same, tick by tick after the other model (cold caches)",
                src,
                ours=_pq(cold.get("ours_ms")),
                peer={"name": fp32, **_pq(cold.get("baseline_ms"))},
            )
        )
    return rows


def _depth_capture(d: dict[str, Any], src: str) -> list[Row]:
    rows = []
    for size, r in (d.get("preprocessing") or {}).items():
        cost = r.get("cost_ms") or {}
        rows.append(
            Row(
                f"depth preprocessing {size} z16 -> 58x87",
                src,
                ours=_pq(cost.get("preprocess_depth_area")),
                peer={"name": "crop + bicubic antialias (torch)", **_pq(cost.get("torch_bicubic_antialias"))},
            )
        )
    inject = d.get("inject_to_ready")
    if inject:
        rows.append(Row("RealSense inject -> policy image (software device)", src, ours=_pq(inject.get("latency_ms"))))
    return rows


def _depth_sim_camera(d: dict[str, Any], src: str) -> list[Row]:
    cost = d.get("cost_ms") or {}
    return [
        Row(
            "sim camera 87x58 frame, terrain (mj_multiRay)",
            src,
            ours=_pq(cost.get("raycast_terrain")),
            peer={"name": "MuJoCo offscreen render", **_pq(cost.get("render_terrain"))},
        )
    ]


def _policy_swap(d: dict[str, Any], src: str) -> list[Row]:
    return [
        Row(
            "50 Hz loop period while a PHP student loads (a model swap)",
            src,
            ours=_pq(d.get("period_ms_while_loading")),
            peer={"name": "the same loop, idle", **_pq(d.get("period_ms_idle"))},
        )
    ]


def _bags_replay(d: dict[str, Any], src: str) -> list[Row]:
    rates = d.get("read_messages_per_s_median") or {}
    rows = [
        Row(
            "bag read + deserialise, messages/s (median of repeats)",
            src,
            unit="/s",
            ours={"p50": rates.get("rosbags"), "p99": None},
            peer={"name": "mcap-ros2-support", "p50": rates.get("mcap_ros2"), "p99": None},
        )
    ]
    if d.get("open_loop_times_real_time_median") is not None:
        rows.append(
            Row(
                "open-loop bag replay against a bundle, times real time (median)",
                src,
                unit="x",
                ours={"p50": d["open_loop_times_real_time_median"], "p99": None},
            )
        )
    return rows


def _mm_query(d: dict[str, Any], src: str) -> list[Row]:
    ours = d.get("aabb_index") or d.get("ours") or {}
    peer = d.get("numpy_brute_force_argmin") or d.get("brute_force") or {}
    return [
        Row(
            "motion-matching query (nearest frame)",
            src,
            unit="µs",
            ours={"p50": _q(ours, "p50_us"), "p99": _q(ours, "p99_us")},
            peer={"name": "brute-force numpy argmin", "p50": _q(peer, "p50_us"), "p99": _q(peer, "p99_us")},
        )
    ]


# file name -> (what the row is about when the file is missing, extractor of a file without "summary")
Extractor = Callable[[dict[str, Any], str], list[Row]]
EXPECTED: dict[str, tuple[str, Extractor | None]] = {
    "policy.json": ("student control steps (shipped students, PHP-sized random) vs plain onnxruntime", _policy),
    "holosoma_loop.json": ("walking-policy step vs holosoma-inference's loop", None),
    "graph_sim.json": ("whole graph in sim: policy period, real-time factor, lowstate age, depth -> lowcmd", None),
    "dds_lowstate.json": ("lowstate DDS latency at 500 Hz", None),
    "mm_query.json": ("motion-matching query latency vs brute-force numpy", _mm_query),
    "bags_replay.json": ("bag replay throughput", _bags_replay),
    "depth_capture.json": ("depth preprocessing and capture latency", _depth_capture),
    "depth_sim_camera.json": ("simulated depth camera frame cost", _depth_sim_camera),
    "policy_swap.json": ("50 Hz loop during a model swap", _policy_swap),
}


def _from_summary(entries: list[dict[str, Any]], src: str) -> list[Row]:
    rows = []
    for e in entries:
        peer = e.get("peer")
        ours = e.get("ours")
        if ours is not None and not isinstance(ours, dict):  # a count or a verdict, not a timing
            rows.append(Row(str(e.get("what", "?")), src, note=str(ours)))
            continue
        rows.append(
            Row(
                str(e.get("what", "?")),
                src,
                unit=str(e.get("unit", "ms")),
                ours=_pq(e.get("ours")) if e.get("ours") else None,
                peer={"name": peer.get("name", "peer"), **_pq(peer)} if peer else None,
            )
        )
    return rows


def rows_for(path: Path) -> list[Row]:
    name = path.name
    if not path.is_file():
        what = EXPECTED.get(name, (path.stem, None))[0]
        return [Row(what, name, note=NOT_MEASURED)]
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        return [Row(path.stem, name, note=f"unreadable ({e.__class__.__name__})")]
    if isinstance(data, dict) and isinstance(data.get("summary"), list):
        return _from_summary(data["summary"], name) or [Row(path.stem, name, note=NOT_MEASURED)]
    extractor = EXPECTED.get(name, (None, None))[1]
    if extractor is None or not isinstance(data, dict):
        return [Row(path.stem, name, note="no summary rows in this file (see the file)")]
    return extractor(data, name)


def collect_rows(results: Path) -> list[Row]:
    """The expected files first (in their order, missing ones as "not measured"), then any other JSON."""
    rows: list[Row] = []
    for name in EXPECTED:
        rows += rows_for(results / name)
    for path in sorted(results.glob("*.json")):
        if path.name not in EXPECTED:
            rows += rows_for(path)
    return rows


def _num(x: float | None) -> str:
    if x is None:
        return "–"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    if abs(x) >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def _pair(d: dict[str, Any] | None, unit: str) -> str:
    if not d:
        return ""
    p50, p99 = d.get("p50"), d.get("p99")
    if p50 is None and p99 is None:
        return NOT_MEASURED
    if p99 is None:
        return f"{_num(p50)} {unit}"
    return f"{_num(p50)} / {_num(p99)} {unit}"


def _ratio_cell(row: Row) -> str:
    if not row.ours or not row.peer:
        return ""
    parts = []
    for q in ("p50", "p99"):
        r = ratio(row.ours.get(q), row.peer.get(q))
        if r is not None:
            parts.append(f"{q} {r:.2f}")
    return ", ".join(parts)


def render(rows: list[Row]) -> str:
    lines = [
        "# Benchmark summary",
        "",
        "Generated by `bench/summary.py` from `bench/results/*.json` (`make bench`). Ours and the peer are",
        "measured in the same run on the same input; p50 / p99; ratio = ours / peer (below 1: ours takes less",
        "time; for rates (/s) above 1 is better). A single number is a median, or one run's value where the",
        "row says so. Shared 2-core machine: absolute numbers follow its load, ratios much less.",
        "",
        "| what | ours p50 / p99 | peer | peer p50 / p99 | ratio (ours / peer) | source |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        if r.note:
            lines.append(f"| {r.what} | {r.note} |  |  |  | `{r.source}` |")
            continue
        peer_name = r.peer.get("name", "") if r.peer else ""
        lines.append(
            f"| {r.what} | {_pair(r.ours, r.unit)} | {peer_name} | {_pair(r.peer, r.unit)} | {_ratio_cell(r)} "
            f"| `{r.source}` |"
        )
    return "\n".join(lines) + "\n"


def write_summary(results: Path, out: Path | None = None) -> Path:
    out = out or results / "SUMMARY.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(collect_rows(results)))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--out", type=Path, default=None, help="default: RESULTS/SUMMARY.md")
    args = parser.parse_args(argv)
    print(f"wrote {write_summary(args.results, args.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
