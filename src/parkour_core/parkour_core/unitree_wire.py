"""rt/lowstate and rt/lowcmd as serialized bytes, written and read field-wise with numpy.

The same samples :mod:`parkour_core.unitree` builds through the SDK's IDL objects (``fill_lowcmd``,
``read_lowstate`` and the SDK's CRC), byte for byte, in a fraction of the time: each encoder keeps
one serialized template (the SDK's defaults, the robot family's header and stop targets) and writes
only the fields that change; the CRC runs in zlib. ``DdsLink.raw_writer``/``raw_reader`` carry the
bytes. The tests compare both paths on random messages of both families.
"""

from __future__ import annotations

import numpy as np

from parkour_core.cdr import Layout, crc32_words
from parkour_core.obs import FloatArray
from parkour_core.robots import RobotSpec
from parkour_core.safety import JointCommand
from parkour_core.unitree import (
    REMOTE_BYTES,
    LowStateView,
    imu_in_base_frame,
    message_types,
    motor_mode,
    new_lowcmd,
    new_lowstate,
)


class _Wire:
    def __init__(self, layout: Layout, template: bytes, spec: RobotSpec) -> None:
        self.layout = layout
        self.spec = spec
        self.slots = np.asarray(spec.motor_slots, dtype=np.intp)
        self.buf = np.frombuffer(bytearray(template), dtype=np.uint8)  # the sample being written
        self.has_mode_machine = "mode_machine" in layout.fields

    def crc(self, data: bytes | np.ndarray) -> int:
        return crc32_words(self.layout.to_c_struct(data))

    def crc_ok(self, data: bytes | np.ndarray) -> bool:
        return int(self.layout.read(data, "crc")) == self.crc(data)

    def _seal(self, with_crc: bool) -> bytes:
        if with_crc:
            self.layout.write(self.buf, "crc", self.crc(self.buf))
        return self.buf.tobytes()


class LowStateWire(_Wire):
    """rt/lowstate of ``spec``'s message family."""

    def __init__(self, spec: RobotSpec) -> None:
        state_type, _ = message_types(spec)
        super().__init__(Layout(state_type), new_lowstate(spec).serialize(), spec)

    def encode(
        self,
        q: FloatArray,
        dq: FloatArray,
        tau: FloatArray,
        quat_wxyz: FloatArray,
        gyro: FloatArray,
        accel: FloatArray,
        tick: int,
        wireless_remote: bytes | None = None,
        with_crc: bool = True,
    ) -> bytes:
        """As ``fill_lowstate`` + the SDK's CRC on a persistent message (the IMU as the robot's reports it:
        on the H1, the torso's; ``decode`` gives the base's): the remote's bytes stay as they
        were when None. ``with_crc`` False leaves the crc field as it is (Unitree's simulators)."""
        w, L, slots = self.buf, self.layout, self.slots
        L.write(w, "motor_state.q", q, slots)
        L.write(w, "motor_state.dq", dq, slots)
        L.write(w, "motor_state.tau_est", tau, slots)
        L.write(w, "imu_state.quaternion", quat_wxyz)
        L.write(w, "imu_state.gyroscope", gyro)
        L.write(w, "imu_state.accelerometer", accel)
        L.write(w, "tick", int(tick) & 0xFFFFFFFF)
        if wireless_remote is not None:
            L.write(
                w, "wireless_remote", np.frombuffer(wireless_remote.ljust(REMOTE_BYTES, b"\0")[:REMOTE_BYTES], np.uint8)
            )
        return self._seal(with_crc)

    def decode(self, data: bytes | np.ndarray) -> LowStateView:
        """As ``read_lowstate`` of the deserialized sample: the IMU in the base's frame."""
        L, slots = self.layout, self.slots
        raw = data if isinstance(data, np.ndarray) else np.frombuffer(data, dtype=np.uint8)
        if raw.size < L.size:
            raise ValueError(f"rt/lowstate sample of {raw.size} bytes; a {L.typename} has {L.size}")
        q = L.read(raw, "motor_state.q", slots).astype(np.float64)
        dq = L.read(raw, "motor_state.dq", slots).astype(np.float64)
        quat, gyro, accel = imu_in_base_frame(
            self.spec,
            q,
            dq,
            L.read(raw, "imu_state.quaternion").astype(np.float64),
            L.read(raw, "imu_state.gyroscope").astype(np.float64),
            L.read(raw, "imu_state.accelerometer").astype(np.float64),
        )
        return LowStateView(
            q=q,
            dq=dq,
            tau=L.read(raw, "motor_state.tau_est", slots).astype(np.float64),
            quat_wxyz=quat,
            gyro=gyro,
            accel=accel,
            tick=int(L.read(raw, "tick")),
            mode_machine=int(L.read(raw, "mode_machine")) if self.has_mode_machine else 0,
            wireless_remote=L.read(raw, "wireless_remote").tobytes(),
        )


class LowCmdWire(_Wire):
    """rt/lowcmd of ``spec``'s message family."""

    def __init__(self, spec: RobotSpec) -> None:
        _, cmd_type = message_types(spec)
        super().__init__(Layout(cmd_type), new_lowcmd(spec).serialize(), spec)
        layout = self.layout
        self.modes = np.array([motor_mode(spec, s) for s in spec.motor_slots], dtype=np.uint8)
        if spec.motor_modes:  # every slot's mode, as fill_lowcmd writes them (the H1)
            layout.write(self.buf, "motor_cmd.mode", np.asarray(spec.motor_modes, dtype=np.uint8))
        layout.write(self.buf, "motor_cmd.mode", self.modes, self.slots)
        if self.has_mode_machine:
            layout.write(self.buf, "mode_pr", 0)

    def encode(self, cmd: JointCommand, mode_machine: int, with_crc: bool = True) -> bytes:
        """As ``fill_lowcmd`` + ``crc = CRC().Crc(msg)`` on a persistent message."""
        w, L, slots = self.buf, self.layout, self.slots
        if self.has_mode_machine:
            L.write(w, "mode_machine", mode_machine)
        for name in ("q", "dq", "kp", "kd", "tau"):
            L.write(w, f"motor_cmd.{name}", getattr(cmd, name), slots)
        return self._seal(with_crc)

    def decode(self, data: bytes | np.ndarray) -> tuple[JointCommand, np.ndarray]:
        """As ``read_lowcmd``: the command per joint and which joints' motors are enabled."""
        L, slots = self.layout, self.slots
        raw = data if isinstance(data, np.ndarray) else np.frombuffer(data, dtype=np.uint8)
        if raw.size < L.size:
            raise ValueError(f"rt/lowcmd sample of {raw.size} bytes; a {L.typename} has {L.size}")
        cols = {n: L.read(raw, f"motor_cmd.{n}", slots).astype(np.float64) for n in ("q", "dq", "kp", "kd", "tau")}
        enabled = L.read(raw, "motor_cmd.mode", slots) == self.modes
        return JointCommand(**cols), enabled
