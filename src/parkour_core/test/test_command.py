import math

import numpy as np
import pytest

from parkour_core.command import DiscreteCommandSpec, discretise_command

SPEC = DiscreteCommandSpec(speed_levels_mps=(0.0, 0.5, 1.0, 1.5), heading_sectors=8)


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ((0.0, 0.0, 0.5), (0, 0)),  # turning in place: no planar speed
        ((0.2, 0.0, 0.0), (0, 0)),  # nearer 0 than 0.5
        ((0.25, 0.0, 0.0), (0, 0)),  # tie goes to the slower level
        ((0.5, 0.0, 0.0), (1, 0)),
        ((0.9, 0.0, 0.0), (2, 0)),
        ((3.0, 0.0, 0.0), (3, 0)),  # beyond the fastest level
        ((0.0, 1.0, 0.0), (2, 2)),  # left: 90 deg = sector 2 of 8
        ((-1.0, 0.0, 0.0), (2, 4)),  # backwards
        ((0.0, -0.5, 0.0), (1, 6)),  # right
        ((math.cos(0.3), math.sin(0.3), 0.0), (2, 0)),  # 17 deg: still sector 0 (+-22.5 deg)
        ((math.cos(0.5), math.sin(0.5), 0.0), (2, 1)),  # 29 deg: sector 1
        ((math.cos(-0.5), math.sin(-0.5), 0.0), (2, 7)),  # -29 deg wraps to sector 7
    ],
)
def test_discretise(command, expected):
    np.testing.assert_array_equal(discretise_command(np.array(command), SPEC), expected)


def test_non_finite_command_is_standing():
    np.testing.assert_array_equal(discretise_command(np.array([np.nan, 0.0, 0.0]), SPEC), [0, 0])


def test_spec_validation_and_round_trip():
    assert DiscreteCommandSpec.from_dict(SPEC.to_dict()) == SPEC
    with pytest.raises(ValueError, match="start at 0"):
        DiscreteCommandSpec(speed_levels_mps=(0.5, 1.0))
    with pytest.raises(ValueError, match="increase"):
        DiscreteCommandSpec(speed_levels_mps=(0.0, 1.0, 1.0))
    with pytest.raises(ValueError, match="heading_sectors"):
        DiscreteCommandSpec(heading_sectors=0)
    with pytest.raises(ValueError, match="unknown keys"):
        DiscreteCommandSpec.from_dict({"speed_levels_mps": [0.0], "heading_sectors": 1, "x": 1})
