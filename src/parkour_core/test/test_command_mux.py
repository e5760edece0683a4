"""The velocity-command mux: the operator over autonomy, each within its timeout, zero when neither."""

import numpy as np
import pytest

from parkour_core.command_mux import AUTONOMY, TELEOP, CommandMux, CommandSource, stack_command_mux


def test_autonomy_drives_until_the_operator_commands_and_again_after_the_operator_lets_go():
    mux = stack_command_mux(teleop_timeout_s=0.3, autonomy_timeout_s=0.5)
    mux.put(AUTONOMY, (0.5, 0.0, 0.0), 1.0)
    assert mux.select(1.1).source == AUTONOMY
    np.testing.assert_array_equal(mux.select(1.1).velocity, [0.5, 0.0, 0.0])
    mux.put(TELEOP, (0.0, 0.0, 0.4), 1.2)
    mux.put(AUTONOMY, (0.5, 0.0, 0.0), 1.25)  # autonomy keeps publishing: the operator still wins
    chosen = mux.select(1.3)
    assert chosen.source == TELEOP and chosen.stamp_s == 1.2
    np.testing.assert_array_equal(chosen.velocity, [0.0, 0.0, 0.4])
    assert mux.select(1.49).source == TELEOP  # within 0.3 s of the operator's last command: still it
    assert mux.select(1.51).source == AUTONOMY  # the operator let go: autonomy again
    assert mux.switches == 3


def test_no_fresh_source_is_zero_velocity():
    mux = stack_command_mux(teleop_timeout_s=0.3, autonomy_timeout_s=0.5)
    chosen = mux.select(0.0)
    assert chosen.source is None and chosen.stamp_s is None and not chosen.velocity.any()
    mux.put(AUTONOMY, (1.0, 0.0, 0.0), 2.0)
    assert mux.select(2.5).source == AUTONOMY and mux.select(2.5001).source is None


def test_a_bad_command_counts_as_zero_and_an_unknown_source_is_refused():
    mux = CommandMux([CommandSource("a", 1, 1.0)])
    mux.put("a", (np.nan, 0.0, 0.0), 0.0)
    assert not mux.select(0.0).velocity.any()
    mux.put("a", (1.0, 2.0), 0.0)  # wrong length
    assert not mux.select(0.0).velocity.any()
    with pytest.raises(KeyError, match="unknown command source"):
        mux.put("b", (0.0, 0.0, 0.0), 0.0)
    with pytest.raises(ValueError, match="repeat"):
        CommandMux([CommandSource("a", 1, 1.0), CommandSource("a", 2, 1.0)])
