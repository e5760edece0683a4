"""The robot contract: joint order, limits, default pose and gains, in one frozen record.

Joints are listed in Unitree SDK motor order; ``motor_slots`` says which slot of the
LowState_/LowCmd_ motor arrays each joint occupies (the message family has more slots
than the robot has joints).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class JointSpec:
    name: str
    q_min: float
    q_max: float
    dq_max: float
    tau_max: float
    default_q: float
    kp_stand: float
    kd_stand: float


@dataclass(frozen=True)
class CameraMount:
    """Depth camera pose on ``body``: position (m) and roll/pitch/yaw (rad)."""

    body: str
    xyz: tuple[float, float, float]
    rpy: tuple[float, float, float]


@dataclass(frozen=True)
class RobotSpec:
    name: str
    dds_family: str  # "unitree_hg" (G1, H1-2) or "unitree_go" (H1, Go2)
    num_motor_slots: int
    joints: tuple[JointSpec, ...]
    motor_slots: tuple[int, ...]
    base_body: str
    torso_body: str
    standing_base_height_m: float
    kd_damp: float
    camera: CameraMount
    # Which model files describe this robot; resolved by parkour_core.assets.
    mjcf_asset: str
    foot_bodies: tuple[str, str] = field(default=("left_ankle_roll_link", "right_ankle_roll_link"))
    # LowCmd_ motor_cmd[slot].mode for every slot of the message family (the value that enables a
    # used slot's motor); empty: 1 on the robot's slots, unused slots left at 0 (the G1).
    motor_modes: tuple[int, ...] = ()
    # Where the IMU of rt/lowstate (imu_state) is mounted: the base (the G1's pelvis) or a body that turns
    # on it about z through ``imu_joint`` (the H1's torso_link on torso_joint). The stack reads the base:
    # parkour_core.unitree turns a reading taken elsewhere into the base's frame as it decodes lowstate.
    imu_body: str = "pelvis"
    imu_joint: str = ""

    def __post_init__(self) -> None:
        if len(self.motor_slots) != len(self.joints):
            raise ValueError(f"{self.name}: {len(self.joints)} joints but {len(self.motor_slots)} motor slots")
        if len(set(self.motor_slots)) != len(self.motor_slots):
            raise ValueError(f"{self.name}: motor slots repeat: {self.motor_slots}")
        if max(self.motor_slots) >= self.num_motor_slots:
            raise ValueError(f"{self.name}: motor slot beyond the {self.num_motor_slots} slots of {self.dds_family}")
        if self.motor_modes and len(self.motor_modes) != self.num_motor_slots:
            raise ValueError(f"{self.name}: {len(self.motor_modes)} motor modes for {self.num_motor_slots} slots")
        if (self.imu_body == self.base_body) != (self.imu_joint == ""):
            raise ValueError(
                f"{self.name}: an IMU on {self.imu_body!r} needs the joint between it and the base "
                f"{self.base_body!r} (imu_joint {self.imu_joint!r}), and an IMU on the base none"
            )
        if self.imu_joint and self.imu_joint not in self.joint_names:
            raise ValueError(f"{self.name}: imu_joint {self.imu_joint!r} is not one of the robot's joints")
        for j in self.joints:
            if not (j.q_min < j.q_max and j.q_min <= j.default_q <= j.q_max):
                raise ValueError(
                    f"{self.name}: joint {j.name} has default {j.default_q} outside [{j.q_min}, {j.q_max}]"
                )

    @property
    def num_joints(self) -> int:
        return len(self.joints)

    @property
    def joint_names(self) -> tuple[str, ...]:
        return tuple(j.name for j in self.joints)

    @cached_property
    def imu_joint_index(self) -> int | None:
        """Index (in joint order) of the yaw joint between the base and the IMU; None: the IMU is on the base."""
        return self.joint_names.index(self.imu_joint) if self.imu_joint else None

    def _column(self, attr: str) -> FloatArray:
        # Built once per spec (the supervisor reads these every tick) and read-only, so no caller
        # can change the robot's limits by writing into a returned array.
        column = np.array([getattr(j, attr) for j in self.joints], dtype=np.float64)
        column.setflags(write=False)
        return column

    @cached_property
    def q_min(self) -> FloatArray:
        return self._column("q_min")

    @cached_property
    def q_max(self) -> FloatArray:
        return self._column("q_max")

    @cached_property
    def dq_max(self) -> FloatArray:
        return self._column("dq_max")

    @cached_property
    def tau_max(self) -> FloatArray:
        return self._column("tau_max")

    @cached_property
    def default_q(self) -> FloatArray:
        return self._column("default_q")

    @cached_property
    def kp_stand(self) -> FloatArray:
        return self._column("kp_stand")

    @cached_property
    def kd_stand(self) -> FloatArray:
        return self._column("kd_stand")
