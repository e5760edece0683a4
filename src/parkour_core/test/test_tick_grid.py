"""The tick grid both sides of the lockstep share: a node ticks on it, the simulator holds sim time at it."""

from parkour_core.tick_grid import TickGrid


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
