"""Unitree low-level messages <-> arrays in robot-spec joint order.

The message classes come from ``unitree_sdk2py`` (imported lazily: pure code and tests of
other modules must not need it). G1 and H1-2 use ``unitree_hg`` (35 slots); H1 and Go2 use
``unitree_go`` (20 slots).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from parkour_core.math3d import yaw_joint_imu_to_base
from parkour_core.obs import FloatArray
from parkour_core.robots import RobotSpec
from parkour_core.safety import JointCommand

MOTOR_ENABLE = 1  # motor_cmd[i].mode: 1 = servo enabled (the default 0 leaves the motor off)
# unitree_go (H1, Go2) frames: header bytes and level flag of low-level control, and the "stop"
# targets Unitree's deployers write into every slot before the first command (no position or
# velocity loop: with kp = kd = 0 the motor gives no torque).
GO_HEAD = (0xFE, 0xEF)
GO_LEVEL_FLAG = 0xFF
POS_STOP_F = 2.146e9
VEL_STOP_F = 16000.0


def motor_mode(spec: RobotSpec, slot: int) -> int:
    """``motor_cmd[slot].mode`` that enables the motor in ``slot`` (the spec's, else MOTOR_ENABLE)."""
    return spec.motor_modes[slot] if spec.motor_modes else MOTOR_ENABLE


def message_types(spec: RobotSpec) -> tuple[type, type]:
    """(LowState_, LowCmd_) classes of the robot's message family."""
    if spec.dds_family == "unitree_hg":
        from unitree_sdk2py.idl.unitree_hg.msg.dds_ import LowCmd_, LowState_
    elif spec.dds_family == "unitree_go":
        from unitree_sdk2py.idl.unitree_go.msg.dds_ import LowCmd_, LowState_
    else:
        raise ValueError(f"{spec.name}: unknown DDS message family {spec.dds_family!r}")
    return LowState_, LowCmd_


def new_lowstate(spec: RobotSpec) -> Any:
    if spec.dds_family == "unitree_hg":
        from unitree_sdk2py.idl.default import unitree_hg_msg_dds__LowState_

        return unitree_hg_msg_dds__LowState_()
    from unitree_sdk2py.idl.default import unitree_go_msg_dds__LowState_

    msg = unitree_go_msg_dds__LowState_()
    msg.head = list(GO_HEAD)
    msg.level_flag = GO_LEVEL_FLAG
    return msg


def new_lowcmd(spec: RobotSpec) -> Any:
    if spec.dds_family == "unitree_hg":
        from unitree_sdk2py.idl.default import unitree_hg_msg_dds__LowCmd_

        return unitree_hg_msg_dds__LowCmd_()
    from unitree_sdk2py.idl.default import unitree_go_msg_dds__LowCmd_

    # As Unitree's deployers initialise it: low-level frame, every motor stopped and (mode 0) off
    # until fill_lowcmd writes the robot's motor modes.
    msg = unitree_go_msg_dds__LowCmd_()
    msg.head = list(GO_HEAD)
    msg.level_flag = GO_LEVEL_FLAG
    msg.gpio = 0
    for m in msg.motor_cmd:
        m.mode = 0
        m.q = POS_STOP_F
        m.dq = VEL_STOP_F
        m.kp = m.kd = m.tau = 0.0
    return msg


class Crc:
    """CRC-32 the robot checks on every LowCmd_ (simulators do not)."""

    def __init__(self) -> None:
        from unitree_sdk2py.utils.crc import CRC

        self._crc = CRC()

    def __call__(self, msg: Any) -> int:
        return int(self._crc.Crc(msg))


@dataclass
class LowStateView:
    """A decoded rt/lowstate: joints in spec order; the IMU (``quat_wxyz``, ``gyro``, ``accel``) in the
    base's frame whichever body the robot's IMU is on (:func:`imu_in_base_frame`)."""

    q: FloatArray
    dq: FloatArray
    tau: FloatArray
    quat_wxyz: FloatArray
    gyro: FloatArray
    accel: FloatArray
    tick: int
    mode_machine: int
    wireless_remote: bytes


def lowstate_capture_time(view: LowStateView, now_s: float, sim_time: bool) -> float:
    """When a lowstate sample was taken, on the reader's clock.

    In simulation ``tick`` is sim-time milliseconds, the clock every node runs on, so the age is the
    sample's true age. The robot's tick counts from its own boot: there the age is the time since the
    sample reached us (read at most one reader tick after it arrived).
    """
    return min(now_s, view.tick * 1e-3) if sim_time else now_s


def imu_in_base_frame(
    spec: RobotSpec,
    q: FloatArray,
    dq: FloatArray,
    quat_wxyz: FloatArray,
    gyro: FloatArray,
    accel: FloatArray,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """rt/lowstate's IMU reading (orientation, gyro, accelerometer) in the base's frame, given the joints.

    The G1's IMU is on the pelvis: the reading comes back as it is (the same arrays). The H1's is on the
    torso, which turns on the pelvis about z through ``torso_joint``: its angle and rate turn the reading
    into the pelvis's (:func:`parkour_core.math3d.yaw_joint_imu_to_base`). Every lowstate decoder applies
    it once (``read_lowstate``, ``LowStateWire.decode``), so the supervisor, the policy and what they
    record all read the base.
    """
    k = spec.imu_joint_index
    if k is None:
        return quat_wxyz, gyro, accel
    return yaw_joint_imu_to_base(quat_wxyz, gyro, accel, float(q[k]), float(dq[k]))


def read_lowstate(msg: Any, spec: RobotSpec) -> LowStateView:
    motors = msg.motor_state
    slots = spec.motor_slots
    imu = msg.imu_state
    q = np.array([motors[s].q for s in slots])
    dq = np.array([motors[s].dq for s in slots])
    quat, gyro, accel = imu_in_base_frame(
        spec,
        q,
        dq,
        np.array(imu.quaternion, dtype=np.float64),
        np.array(imu.gyroscope, dtype=np.float64),
        np.array(imu.accelerometer, dtype=np.float64),
    )
    return LowStateView(
        q=q,
        dq=dq,
        tau=np.array([motors[s].tau_est for s in slots]),
        quat_wxyz=quat,
        gyro=gyro,
        accel=accel,
        tick=int(msg.tick),
        mode_machine=int(getattr(msg, "mode_machine", 0)),
        wireless_remote=bytes(msg.wireless_remote),
    )


def fill_lowstate(
    msg: Any,
    spec: RobotSpec,
    q: FloatArray,
    dq: FloatArray,
    tau: FloatArray,
    quat_wxyz: FloatArray,
    gyro: FloatArray,
    accel: FloatArray,
    tick: int,
    wireless_remote: bytes | None = None,
) -> None:
    """Write the robot state into a LowState_, the IMU as the robot's IMU reports it (on the H1: the
    torso's; ``read_lowstate`` turns it into the base's); ``wireless_remote`` (40 bytes, see
    :func:`encode_wireless_remote`) emulates the remote, None leaves the field as it is."""
    if wireless_remote is not None:
        msg.wireless_remote = list(wireless_remote.ljust(REMOTE_BYTES, b"\0")[:REMOTE_BYTES])
    for i, s in enumerate(spec.motor_slots):
        m = msg.motor_state[s]
        m.q = float(q[i])
        m.dq = float(dq[i])
        m.tau_est = float(tau[i])
    imu = msg.imu_state
    imu.quaternion = [float(x) for x in quat_wxyz]
    imu.gyroscope = [float(x) for x in gyro]
    imu.accelerometer = [float(x) for x in accel]
    msg.tick = int(tick) & 0xFFFFFFFF


def fill_lowcmd(msg: Any, spec: RobotSpec, cmd: JointCommand, mode_machine: int) -> None:
    """Write a joint command into a LowCmd_. Slots the robot does not use keep their stop targets;
    with ``spec.motor_modes`` every slot gets its mode (the H1: as Unitree's deployers), else
    they stay disabled (mode 0)."""
    if hasattr(msg, "mode_machine"):
        msg.mode_pr = 0
        msg.mode_machine = mode_machine
    for s, mode in enumerate(spec.motor_modes):
        msg.motor_cmd[s].mode = mode
    for i, s in enumerate(spec.motor_slots):
        m = msg.motor_cmd[s]
        m.mode = motor_mode(spec, s)
        m.q = float(cmd.q[i])
        m.dq = float(cmd.dq[i])
        m.kp = float(cmd.kp[i])
        m.kd = float(cmd.kd[i])
        m.tau = float(cmd.tau[i])


def read_lowcmd(msg: Any, spec: RobotSpec) -> tuple[JointCommand, np.ndarray]:
    """The command for each joint, and which joints' motors are enabled."""
    motors = msg.motor_cmd
    slots = spec.motor_slots

    def col(attr: str) -> FloatArray:
        return np.array([getattr(motors[s], attr) for s in slots], dtype=np.float64)

    enabled = np.array([motors[s].mode == motor_mode(spec, s) for s in slots])
    return JointCommand(q=col("q"), dq=col("dq"), kp=col("kp"), kd=col("kd"), tau=col("tau")), enabled


# ----------------------------------------------------------------------------- wireless remote
# LowState_.wireless_remote (40 bytes, the same on G1 and H1): bytes 2-3 hold the keys as a
# little-endian uint16, bit i set while key REMOTE_KEYS[i] is held; float32 sticks follow
# (lx at 4, rx at 8, ry at 12, the L2 trigger at 16, ly at 20). From Unitree's SDK examples.

REMOTE_BYTES = 40
REMOTE_KEYS: tuple[str, ...] = (
    "R1", "L1", "Start", "Select", "R2", "L2", "F1", "F2", "A", "B", "X", "Y", "Up", "Right", "Down", "Left",
)  # fmt: skip
_KEYS_AT = 2
_STICKS = (("lx", 4), ("rx", 8), ("ry", 12), ("l2", 16), ("ly", 20))


@dataclass(frozen=True)
class RemoteState:
    """The Unitree remote as the robot reports it: keys held and stick positions (-1..1)."""

    keys: frozenset[str]
    lx: float = 0.0
    rx: float = 0.0
    ry: float = 0.0
    l2: float = 0.0
    ly: float = 0.0


def parse_wireless_remote(data: bytes) -> RemoteState:
    """Keys and sticks from ``LowState_.wireless_remote``; fields the data is too short for read as
    not pressed / centred (a robot without a paired remote reports zeros)."""
    keys: frozenset[str] = frozenset()
    if len(data) >= _KEYS_AT + 2:
        (bits,) = struct.unpack_from("<H", data, _KEYS_AT)
        keys = frozenset(name for i, name in enumerate(REMOTE_KEYS) if bits >> i & 1)
    sticks = {
        name: struct.unpack_from("<f", data, offset)[0] if len(data) >= offset + 4 else 0.0 for name, offset in _STICKS
    }
    return RemoteState(keys=keys, **sticks)


def encode_wireless_remote(keys: frozenset[str] | set[str] = frozenset(), **sticks: float) -> bytes:
    """The 40 bytes a robot would report with ``keys`` held and the given stick positions
    (for the simulator and tests: the inverse of :func:`parse_wireless_remote`)."""
    unknown = set(keys) - set(REMOTE_KEYS)
    if unknown:
        raise ValueError(f"unknown remote keys {sorted(unknown)}; the remote has {list(REMOTE_KEYS)}")
    data = bytearray(REMOTE_BYTES)
    struct.pack_into("<H", data, _KEYS_AT, sum(1 << REMOTE_KEYS.index(k) for k in keys))
    offsets = dict(_STICKS)
    for name, value in sticks.items():
        if name not in offsets:
            raise ValueError(f"unknown stick {name!r}; the remote has {sorted(offsets)}")
        struct.pack_into("<f", data, offsets[name], value)
    return bytes(data)
