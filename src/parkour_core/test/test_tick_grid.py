"""The tick grid both sides of the lockstep share: a node ticks on it, the simulator holds sim time at it."""

import pytest

from parkour_core.tick_grid import TickGrid, sim_tick_before


def reached_over(grid: TickGrid, step_s: float, steps: int) -> dict[float, float]:
    readings = (round(k * step_s, 6) for k in range(1, steps + 1))
    return {t: due for t in readings if (due := grid.reached(t)) is not None}


def test_on_sim_time_the_first_tick_is_one_period_in_and_each_due_time_is_reached_once():
    # 2 ms steps against a 5 ms grid: 5 at 6 ms, 10 at 10 ms, 15 at 16 ms, 20 at 20 ms; nothing at the first step.
    assert reached_over(TickGrid.on_sim_time(0.005), 0.002, 12) == {0.006: 0.005, 0.01: 0.01, 0.016: 0.015, 0.02: 0.02}


def test_a_reading_that_spans_several_periods_reports_the_latest_due_time():
    grid = TickGrid(0.02, first_s=0.0)
    assert grid.reached(0.0) == 0.0
    assert grid.reached(0.065) == 0.06  # three periods in one step: the tick that runs is 60 ms's
    assert grid.reached(0.07) is None and grid.reached(0.0799999999) == 0.08  # float rounding is tolerated


def test_a_steady_clock_grid_starts_at_its_first_reading():
    grid = TickGrid(0.02)
    assert grid.reached(1234.5) == 1234.5
    assert grid.reached(1234.51) is None  # a fire before the next due time (a burst after an overrun)
    due = grid.reached(1234.52)
    assert due is not None and abs(due - 1234.52) < 1e-9


def test_on_a_steady_clock_every_fire_ticks_for_the_due_time_it_follows():
    """A timer created at 100 s fires some wake-up latency after each due time (100.02, 100.04, ...),
    never before it. The first fire woke 1.2 ms late; later ones sooner, or most of a period late."""
    period = 0.02
    grid = TickGrid.on_steady_clock(period, timer_created_s=100.0)
    latencies = [0.0012, 0.0001, 0.0030, 0.0, 0.0011, 0.0189, 0.0002]
    ticked = [grid.reached(100.0 + (k + 1) * period + lat) for k, lat in enumerate(latencies)]
    assert ticked == pytest.approx([100.0 + (k + 1) * period for k in range(len(latencies))])
    # a second fire for the due time that just ticked does not tick again
    assert grid.reached(100.0 + len(latencies) * period + 0.0195) is None


def test_the_policy_tick_before_a_supervisor_tick_is_the_last_one_strictly_before_it():
    """A supervisor tick at a policy tick's time is owed the tick before (the policy computes meanwhile);
    5 ms later it is owed that policy tick's targets."""
    period = 0.02
    assert sim_tick_before(0.02, period) is None  # the policy's first tick is at 20 ms
    assert sim_tick_before(0.025, period) == pytest.approx(0.02)
    assert sim_tick_before(0.04, period) == pytest.approx(0.02)
    assert sim_tick_before(0.0400000001, period) == pytest.approx(0.02)  # at it, within the tolerance
    assert sim_tick_before(0.045, period) == pytest.approx(0.04)
    assert sim_tick_before(6.565, period) == pytest.approx(6.56)
    # every supervisor tick of a 200 Hz grid is owed a due time of the policy's grid, never its own time
    for k in range(5, 2000):
        t = k * 0.005
        owed = sim_tick_before(t, period)
        assert owed is not None and t - period - 1e-9 <= owed < t - 1e-6
        assert abs(owed / period - round(owed / period)) < 1e-6
