from __future__ import annotations

import numpy as np
import pytest

from parkour_core.robots import G1
from parkour_core.safety import JointCommand, damp_command
from parkour_core.unitree import (
    MOTOR_ENABLE,
    Crc,
    fill_lowcmd,
    fill_lowstate,
    message_types,
    new_lowcmd,
    new_lowstate,
    read_lowcmd,
    read_lowstate,
)

N = G1.num_joints


def random_command(seed: int = 0) -> JointCommand:
    rng = np.random.default_rng(seed)
    return JointCommand(
        q=rng.uniform(G1.q_min, G1.q_max),
        dq=rng.normal(0, 2.0, N),
        kp=rng.uniform(0, 200, N),
        kd=rng.uniform(0, 10, N),
        tau=rng.uniform(-G1.tau_max, G1.tau_max),
    )


def over_the_wire(msg):
    """Serialize to CDR and back: the float32 fields lose precision as on the robot."""
    return type(msg).deserialize(msg.serialize())


def test_message_types_for_g1():
    lowstate, lowcmd = message_types(G1)
    assert lowstate.__name__ == "LowState_" and lowcmd.__name__ == "LowCmd_"
    assert "unitree_hg" in lowcmd.__module__
    assert isinstance(new_lowcmd(G1), lowcmd)
    assert isinstance(new_lowstate(G1), lowstate)
    assert len(new_lowcmd(G1).motor_cmd) == 35


@pytest.mark.parametrize("wire", [False, True])
def test_lowcmd_round_trip(wire):
    cmd = random_command()
    msg = new_lowcmd(G1)
    fill_lowcmd(msg, G1, cmd, mode_machine=5)
    if wire:
        msg = over_the_wire(msg)
    back, enabled = read_lowcmd(msg, G1)
    for field in ("q", "dq", "kp", "kd", "tau"):
        np.testing.assert_allclose(getattr(back, field), getattr(cmd, field), atol=1e-5, rtol=1e-6, err_msg=field)
    assert enabled.dtype == bool and enabled.shape == (N,) and enabled.all()
    assert msg.mode_machine == 5
    assert msg.mode_pr == 0


def test_lowcmd_unused_slots_stay_disabled():
    msg = new_lowcmd(G1)
    fill_lowcmd(msg, G1, random_command(), mode_machine=0)
    assert [msg.motor_cmd[s].mode for s in range(29)] == [MOTOR_ENABLE] * 29
    for s in range(29, 35):
        m = msg.motor_cmd[s]
        assert (m.mode, m.q, m.dq, m.kp, m.kd, m.tau) == (0, 0.0, 0.0, 0.0, 0.0, 0.0)


def test_read_lowcmd_reports_disabled_motors():
    msg = new_lowcmd(G1)
    _, enabled = read_lowcmd(msg, G1)
    assert not enabled.any()
    fill_lowcmd(msg, G1, damp_command(G1, 3.0), mode_machine=0)
    msg.motor_cmd[7].mode = 0
    _, enabled = read_lowcmd(msg, G1)
    assert list(np.flatnonzero(~enabled)) == [7]


def test_crc_changes_with_one_motor_q():
    crc = Crc()
    msg = new_lowcmd(G1)
    fill_lowcmd(msg, G1, random_command(), mode_machine=0)
    before = crc(msg)
    assert isinstance(before, int) and 0 <= before < 2**32
    assert crc(msg) == before  # deterministic
    msg.motor_cmd[12].q += 0.01
    after = crc(msg)
    assert after != before
    msg.motor_cmd[12].q -= 0.01
    assert crc(msg) == before


def test_crc_ignores_the_crc_field_and_survives_the_wire():
    crc = Crc()
    msg = new_lowcmd(G1)
    fill_lowcmd(msg, G1, random_command(1), mode_machine=0)
    value = crc(msg)
    msg.crc = value
    assert crc(msg) == value
    # float32 rounding on the wire: the CRC is computed over float32 values, so it is unchanged.
    assert crc(over_the_wire(msg)) == value


@pytest.mark.parametrize("wire", [False, True])
def test_lowstate_round_trip(wire):
    rng = np.random.default_rng(2)
    q = rng.uniform(G1.q_min, G1.q_max)
    dq = rng.normal(0, 3, N)
    tau = rng.normal(0, 20, N)
    quat = rng.normal(size=4)
    quat /= np.linalg.norm(quat)
    gyro = rng.normal(size=3)
    accel = np.array([0.1, -0.2, 9.81])
    msg = new_lowstate(G1)
    fill_lowstate(msg, G1, q, dq, tau, quat, gyro, accel, tick=123456)
    if wire:
        msg = over_the_wire(msg)
    view = read_lowstate(msg, G1)
    np.testing.assert_allclose(view.q, q, atol=1e-5)
    np.testing.assert_allclose(view.dq, dq, atol=1e-5)
    np.testing.assert_allclose(view.tau, tau, atol=1e-4)
    np.testing.assert_allclose(view.quat_wxyz, quat, atol=1e-6)
    np.testing.assert_allclose(view.gyro, gyro, atol=1e-6)
    np.testing.assert_allclose(view.accel, accel, atol=1e-5)
    assert view.tick == 123456
    assert view.mode_machine == 0
    assert isinstance(view.wireless_remote, bytes) and len(view.wireless_remote) == 40


def test_lowstate_tick_wraps_to_uint32():
    msg = new_lowstate(G1)
    z = np.zeros(N)
    fill_lowstate(msg, G1, z, z, z, np.array([1.0, 0, 0, 0]), np.zeros(3), np.zeros(3), tick=2**32 + 7)
    assert read_lowstate(over_the_wire(msg), G1).tick == 7


def test_lowstate_uses_motor_slots():
    msg = new_lowstate(G1)
    q = np.arange(N, dtype=np.float64) / 10.0
    z = np.zeros(N)
    fill_lowstate(msg, G1, q, z, z, np.array([1.0, 0, 0, 0]), np.zeros(3), np.zeros(3), tick=0)
    assert msg.motor_state[28].q == pytest.approx(2.8)
    assert msg.motor_state[29].q == 0.0
