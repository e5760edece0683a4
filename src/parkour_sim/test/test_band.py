"""The simulated gantry: the bridge's band services let the robot go and hook it back on where it stands."""

from types import SimpleNamespace

import numpy as np
import pytest

from parkour_core.robots import G1
from parkour_core.safety import damp_command, stand_command
from parkour_sim.band import HANG_REFUSED, BandControl
from parkour_sim.bridge_node import MujocoBridge
from parkour_sim.physics import RobotSim

ALL = np.ones(G1.num_joints, dtype=bool)
DT = 0.002


def _run(sim: RobotSim, seconds: float) -> np.ndarray:
    """Step ``seconds``; the base's positions on the way."""
    path = []
    for _ in range(round(seconds / DT)):
        sim.step()
        path.append(sim.base_pos)
    return np.array(path)


def _call(handler) -> SimpleNamespace:
    """A Trigger service callback's answer, as the bridge's services give it."""
    return handler(None, SimpleNamespace(success=None, message=None))


@pytest.fixture
def standing():
    """The bridge's band on a G1 that stood up on it, was let go and stands on its own feet."""
    sim = RobotSim(G1, "flat", DT)
    published: list[bool] = []
    band = BandControl(sim, published.append)
    bridge = MujocoBridge.__new__(MujocoBridge)  # its service callbacks alone, without ROS
    bridge.band = band
    sim.set_command(stand_command(G1), ALL)
    _run(sim, 1.5)
    assert _call(bridge._on_release_band).success
    band.apply()
    _run(sim, 2.0)
    return sim, band, bridge, published


def test_hang_band_holds_a_standing_robot_where_it_stands_once_damped(standing):
    sim, band, bridge, published = standing
    assert sim.band is None and band.released and published == [True]
    before = sim.base_pos
    answer = _call(bridge._on_hang_band)
    assert answer.success and answer.message == "elastic band re-attached where the robot is"
    assert sim.band is None  # the physics loop hooks it on, between steps
    band.apply()
    assert sim.band is not None and published == [True, False] and band.hung_at_s == [sim.time]
    np.testing.assert_allclose(sim.band_anchor, before, atol=1e-9)  # over the base, at its height: no lift
    caught = _run(sim, 0.5)
    assert np.max(np.abs(caught - before)) < 0.005  # no jerk while the legs still carry it
    sim.set_command(damp_command(G1, 3.0), ALL)
    hanging = _run(sim, 3.0)
    assert np.max(np.linalg.norm(hanging - before, axis=1)) < 0.02  # limp, held where it stood
    assert not sim.fallen() and sim.tilt < 0.3


def test_hang_band_is_refused_while_the_robot_hangs(standing):
    _, band, bridge, published = standing
    assert _call(bridge._on_hang_band).success
    answer = _call(bridge._on_hang_band)  # asked twice before the loop applied the first
    assert answer.success is False and answer.message == HANG_REFUSED
    band.apply()
    answer = _call(bridge._on_hang_band)
    assert answer.success is False and answer.message == HANG_REFUSED
    band.apply()
    assert published == [True, False] and len(band.hung_at_s) == 1  # hooked on once


def test_a_robot_that_never_left_the_band_cannot_be_hung_again():
    sim = RobotSim(G1, "flat", DT)
    published: list[bool] = []
    band = BandControl(sim, published.append)
    assert sim.band is not None and not band.released
    assert band.request_hang() == (False, HANG_REFUSED)
    band.apply()
    assert published == [] and band.hung_at_s == []
