"""bench/summary.py on made-up result files: rows, missing files, ratios. No timing decides anything here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SUMMARY_PY = Path(__file__).resolve().parents[1] / "bench" / "summary.py"


@pytest.fixture(scope="module")
def summary(load_script):
    return load_script(SUMMARY_PY, "bench_summary")


def _write(folder: Path, name: str, data: object) -> None:
    (folder / name).write_text(json.dumps(data))


def test_ratio_is_ours_over_peer(summary):
    assert summary.ratio(1.0, 4.0) == pytest.approx(0.25)
    assert summary.ratio(3.0, 1.5) == pytest.approx(2.0)
    assert summary.ratio(None, 1.0) is None
    assert summary.ratio(1.0, None) is None
    assert summary.ratio(1.0, 0.0) is None


def test_every_expected_file_missing_reads_not_measured(summary, tmp_path):
    rows = summary.collect_rows(tmp_path)
    assert {r.source for r in rows} == set(summary.EXPECTED)
    assert all(r.note == summary.NOT_MEASURED for r in rows)
    text = summary.render(rows)
    assert text.count(summary.NOT_MEASURED) == len(summary.EXPECTED)
    assert "| `mm_query.json` |" in text


def test_summary_list_gives_rows_and_ratios(summary, tmp_path):
    _write(
        tmp_path,
        "holosoma_loop.json",
        {
            "summary": [
                {
                    "what": "step",
                    "unit": "ms",
                    "ours": {"p50": 0.1, "p99": 0.4},
                    "peer": {"name": "holosoma", "p50": 0.2, "p99": 0.5},
                },
                {"what": "rtf", "unit": "x", "ours": {"p50": 0.6, "p99": None}},
            ]
        },
    )
    rows = [r for r in summary.collect_rows(tmp_path) if r.source == "holosoma_loop.json"]
    assert [r.what for r in rows] == ["step", "rtf"]
    line = next(x for x in summary.render(rows).splitlines() if x.startswith("| step"))
    assert "0.100 / 0.400 ms" in line
    assert "| holosoma |" in line
    assert "p50 0.50, p99 0.80" in line
    rtf = next(x for x in summary.render(rows).splitlines() if x.startswith("| rtf"))
    assert "0.600 x" in rtf and "p50" not in rtf  # no peer: no ratio


def test_a_count_in_a_summary_is_shown_as_it_is(summary, tmp_path):
    _write(tmp_path, "standup.json", {"summary": [{"what": "stood up", "ours": "120/120"}]})
    rows = [r for r in summary.collect_rows(tmp_path) if r.source == "standup.json"]
    assert [(r.what, r.note) for r in rows] == [("stood up", "120/120")]
    assert "| stood up | 120/120 |" in summary.render(rows)


def test_legacy_files_are_read_by_their_extractors(summary, tmp_path):
    _write(
        tmp_path,
        "policy.json",
        {"ours_ms": {"p50": 1.0, "p99": 2.0}, "baseline_ms": {"p50": 4.0, "p99": 5.0}, "cold_cache": None},
    )
    _write(
        tmp_path,
        "mm_query.json",
        {"aabb_index": {"p50_us": 100.0, "p99_us": 700.0}, "numpy_brute_force_argmin": {"p50_us": 500.0}},
    )
    rows = {r.source: r for r in summary.collect_rows(tmp_path) if not r.note}
    assert rows["policy.json"].ours == {"p50": 1.0, "p99": 2.0}
    assert summary.ratio(rows["policy.json"].ours["p99"], rows["policy.json"].peer["p99"]) == pytest.approx(0.4)
    mm = rows["mm_query.json"]
    assert mm.unit == "µs"
    assert mm.peer["p99"] is None  # a missing quantile stays missing, and only p50 gets a ratio
    assert summary._ratio_cell(mm) == "p50 0.20"


def test_unknown_and_broken_files_get_a_row(summary, tmp_path):
    _write(tmp_path, "other.json", {"x": 1})
    (tmp_path / "broken.json").write_text("{not json")
    rows = {r.source: r for r in summary.collect_rows(tmp_path)}
    assert "no summary rows" in rows["other.json"].note
    assert rows["broken.json"].note.startswith("unreadable")


def test_write_summary_writes_markdown(summary, tmp_path):
    out = summary.write_summary(tmp_path)
    assert out == tmp_path / "SUMMARY.md"
    assert out.read_text().startswith("# Benchmark summary")


def test_committed_policy_result_times_the_shipped_students_and_int8_only_where_it_passes(summary):
    """bench/results/policy.json: a row per shipped student, an int8 row only for a variant that passed its check."""
    path = SUMMARY_PY.parent / "results" / "policy.json"
    if not path.is_file():
        pytest.skip("bench/policy/run.py has not been run")
    data = json.loads(path.read_text())
    models = data["models"]
    assert {"student_walk", "student_step"} <= set(models)
    assert data["threads"]["intra_op"] >= 1 and data["git_commit"] and data["machine"]["logical_cores"]
    whats = [row["what"] for row in data["summary"]]
    for name, model in models.items():
        int8 = model["int8"]
        assert int8["passes"] == (int8["max_action_error"] <= int8["tolerance"])
        assert int8["tolerance"] == pytest.approx(int8["relative_tolerance"] * int8["action_range"])
        prefix = "PHP-sized" if name == "php_random" else name
        int8_rows = [w for w in whats if w.startswith(prefix) and "ours int8 PolicyRunner" in w]
        assert bool(int8_rows) == int8["passes"] == ("ours_int8" in model["implementations"])
        assert "plain_ort_fp32" in model["implementations"] and "ours_fp32" in model["implementations"]
    rows = summary.rows_for(path)
    assert len(rows) == len(data["summary"]) and all(r.peer and r.ours for r in rows)
