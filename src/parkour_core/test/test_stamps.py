"""Stamps survive seconds -> (sec, nanosec) -> seconds exactly, as replays need them to."""

from hypothesis import given
from hypothesis import strategies as st

from parkour_core.stamps import stamp_parts, stamp_seconds

NANOSEC = st.integers(0, 999_999_999)


@given(st.integers(0, 2**22 - 1), NANOSEC)
def test_a_sim_time_stamp_converts_back_to_itself(sec, nanosec):
    t = stamp_seconds(sec, nanosec)
    assert stamp_parts(t) == (sec, nanosec)


@given(st.integers(0, 4_000_000_000), NANOSEC)
def test_a_stamp_read_as_seconds_reads_as_the_same_seconds_after_a_round_trip(sec, nanosec):
    t = stamp_seconds(sec, nanosec)  # wall-clock seconds too, where a float cannot hold every nanosecond
    back = stamp_parts(t)
    assert back[0] in (sec, sec + 1) and 0 <= back[1] < 1_000_000_000
    assert stamp_seconds(*back) == t


def test_a_fraction_that_rounds_up_carries_into_the_seconds():
    assert stamp_parts(2.9999999999997) == (3, 0)
    assert stamp_parts(0.0) == (0, 0)
    assert stamp_parts(1.5) == (1, 500_000_000)
