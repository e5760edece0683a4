"""Timing samples in bounded ring buffers, their summaries, and a process's CPU use."""

import numpy as np

from parkour_core.stats import CpuMeter, Samples, histogram_ms, summary_ms


def test_samples_keep_the_newest_window_but_count_and_max_everything():
    samples = Samples(capacity=4)
    for value in (0.009, 0.001, 0.002, 0.003, 0.004, 0.005):
        samples.append(value)
    np.testing.assert_array_equal(np.asarray(samples), [0.002, 0.003, 0.004, 0.005])
    assert len(samples) == 4 and samples.count == 6 and samples.largest == 0.009
    np.testing.assert_array_equal(samples.tail(2), [0.004, 0.005])
    summary = summary_ms(samples)
    assert summary["n"] == 6 and summary["max"] == 9.0  # the largest of all, not of the window
    assert summary["p50"] == 3.5


def test_a_list_and_samples_summarise_alike():
    values = [0.001, 0.002, 0.003]
    samples = Samples()
    for v in values:
        samples.append(v)
    assert summary_ms(values) == summary_ms(samples)
    assert summary_ms(Samples()) == {"p50": None, "p99": None, "max": None, "n": 0}


def test_the_cpu_meter_counts_this_process_s_work():
    meter = CpuMeter()
    x = 0
    for i in range(3_000_000):
        x += i
    report = meter.report(sim_s=2.0)
    user, system, cores = report["user_s"], report["system_s"], report["cores"]
    assert user is not None and system is not None and cores is not None
    assert user > 0.0 and cores > 0.0
    assert report["cpu_s_per_sim_s"] == round((user + system) / 2.0, 4)


def test_a_histogram_counts_each_duration_once_and_the_ones_above_its_top():
    hist = histogram_ms([0.0004, 0.0015, 0.0016, 0.0995, 0.25], bin_ms=1.0, top_ms=100.0)
    assert len(hist["counts"]) == 100 and hist["counts"][0] == 1 and hist["counts"][1] == 2
    assert hist["counts"][99] == 1 and hist["over"] == 1 and sum(hist["counts"]) == 4
