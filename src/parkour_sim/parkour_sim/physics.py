"""The simulated robot: MuJoCo stepped with the motors' PD law.

``pd_law``: ``every_step`` (the default) is the robot's motor drivers: each physics step computes
tau = tau_ff + kp (q* - q) + kd (dq* - dq) from the most recent command, clamped to the actuator's
torque range, whether or not a new command arrived. ``on_command`` is Unitree's own simulators:
the torque is computed once, when a command arrives, and held until the next one.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from parkour_core.math3d import tilt_rad, yaw_of
from parkour_core.obs import FloatArray
from parkour_core.robots import RobotSpec
from parkour_core.safety import JointCommand
from parkour_sim.models import IMU_ACCEL, IMU_GYRO
from parkour_sim.scene import BAND, build_model

# The base this low or this tilted counts as a fall (reports and evaluation, not safety logic).
FALL_HEIGHT_M = 0.45
FALL_TILT_RAD = 1.0


@dataclass(frozen=True)
class ElasticBand:
    """A soft weld holding the pelvis upright at a height, as Unitree's simulators hang the robot: the
    constraint's time constant and damping ratio (MuJoCo's solref)."""

    time_constant_s: float = 0.05
    damping_ratio: float = 1.0


PD_LAWS = ("every_step", "on_command")


class RobotSim:
    def __init__(
        self,
        spec: RobotSpec,
        scene: str | dict,
        physics_dt_s: float,
        base_height_m: float = 0.0,
        robot_model: str = "",
        pd_law: str = "every_step",
    ) -> None:
        if pd_law not in PD_LAWS:
            raise ValueError(f"pd_law {pd_law!r} is not one of {PD_LAWS}")
        self.spec = spec
        self.pd_law = pd_law
        self.model = build_model(spec, scene, physics_dt_s, robot_model, band=True)
        self.data = mujoco.MjData(self.model)
        m = self.model
        joint_ids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) for n in spec.joint_names]
        if min(joint_ids) < 0:
            missing = [n for n, j in zip(spec.joint_names, joint_ids, strict=True) if j < 0]
            raise ValueError(f"the {spec.name} model lacks joints {missing}")
        self.qpos_adr = np.array([m.jnt_qposadr[j] for j in joint_ids])
        self.qvel_adr = np.array([m.jnt_dofadr[j] for j in joint_ids])
        act_for_joint = {int(m.actuator_trnid[a, 0]): a for a in range(m.nu)}
        self.actuator = np.array([act_for_joint[j] for j in joint_ids])
        self.tau_limit = np.abs(m.actuator_ctrlrange[self.actuator, 1])
        self.base_body = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, spec.base_body)
        self.gyro_adr = self._sensor_adr("base_gyro")
        self.accel_adr = self._sensor_adr("base_accel")
        self._mount_imu()
        self.base_height_m = base_height_m or spec.standing_base_height_m
        self.band: ElasticBand | None = None
        self.band_anchor = np.zeros(3)
        self._band_eq = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_EQUALITY, BAND)
        self._band_mocap = int(self.model.body_mocapid[mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, BAND)])
        self.command = JointCommand(*(np.zeros(spec.num_joints) for _ in range(5)))
        self.enabled = np.zeros(spec.num_joints, dtype=bool)
        self.tau = np.zeros(spec.num_joints)
        self.external_force_n = np.zeros(3)  # world-frame force on the base (a push)
        self.reset()

    def _sensor_adr(self, name: str) -> int:
        sid = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_SENSOR, name)
        if sid < 0:
            raise ValueError(f"the {self.spec.name} model has no sensor {name!r}")
        return int(self.model.sensor_adr[sid])

    def _mount_imu(self) -> None:
        """Find the robot's IMU (what rt/lowstate reports): the base's sensors, or the ``imu_gyro`` and
        ``imu_accel`` of a site on ``spec.imu_body``, a child of the base on the hinge ``spec.imu_joint``
        (the H1's torso on torso_joint)."""
        spec, m = self.spec, self.model
        self.imu_on_base = not spec.imu_joint
        if self.imu_on_base:
            return
        self.imu_accel_adr = self._sensor_adr(IMU_ACCEL)
        site = int(m.sensor_objid[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SENSOR, IMU_GYRO)])
        body = int(m.site_bodyid[site])
        joint = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, spec.imu_joint)
        base_joint = int(m.body_jntadr[self.base_body])
        mounted = (
            m.body(body).name == spec.imu_body
            and int(m.body_parentid[body]) == self.base_body
            and int(m.body_jntnum[body]) == 1
            and int(m.body_jntadr[body]) == joint
            and m.jnt_type[joint] == mujoco.mjtJoint.mjJNT_HINGE
            and base_joint >= 0
            and m.jnt_type[base_joint] == mujoco.mjtJoint.mjJNT_FREE
        )
        if not mounted:
            raise ValueError(
                f"the {spec.name} model's IMU ({IMU_GYRO!r} on {m.body(body).name!r}) is not on {spec.imu_body!r}, "
                f"a child of the free base {spec.base_body!r} on the hinge {spec.imu_joint!r}"
            )
        # The IMU's frame: base (the free joint's quaternion) * body_quat * hinge rotation * site_quat, as
        # MuJoCo's kinematics compose it (imu_quat_wxyz, imu_gyro).
        self._imu_body_quat = m.body_quat[body].copy()
        self._imu_axis = m.jnt_axis[joint].copy()
        self._imu_qpos_adr = int(m.jnt_qposadr[joint])
        self._imu_qpos0 = float(m.qpos0[self._imu_qpos_adr])
        self._imu_dof_adr = int(m.jnt_dofadr[joint])
        self._imu_site_quat = m.site_quat[site].copy()

    def reset(self, q: FloatArray | None = None, base_xy_yaw: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> None:
        mujoco.mj_resetData(self.model, self.data)
        x, y, yaw = base_xy_yaw
        self.data.qpos[0:3] = [x, y, self.base_height_m]
        self.data.qpos[3:7] = [np.cos(yaw / 2), 0, 0, np.sin(yaw / 2)]
        self.data.qpos[self.qpos_adr] = self.spec.default_q if q is None else q
        self.band_anchor = self.data.qpos[0:3].copy()
        self.band = None  # mj_resetData leaves the band's weld inactive
        mujoco.mj_forward(self.model, self.data)

    def hang(self, band: ElasticBand | None = ElasticBand(), anchor_z_m: float | None = None) -> None:
        """Hold the robot on the elastic band (None releases it), upright at its heading, over its base:
        at ``anchor_z_m`` (world z), or at ``base_height_m`` (the height it is reset to) by default."""
        self.band = band
        self.band_anchor = np.array([*self.data.qpos[0:2], self.base_height_m if anchor_z_m is None else anchor_z_m])
        d, m = self.data, self.model
        d.eq_active[self._band_eq] = band is not None
        if band is not None:
            d.mocap_pos[self._band_mocap] = self.band_anchor
            w, _, _, z = d.qpos[3:7]  # upright, at the base's heading
            heading = np.array([w, 0.0, 0.0, z]) / max(float(np.hypot(w, z)), 1e-9)
            d.mocap_quat[self._band_mocap] = heading
            m.eq_solref[self._band_eq] = [band.time_constant_s, band.damping_ratio]

    def set_command(self, cmd: JointCommand, enabled: FloatArray) -> None:
        self.command = cmd
        self.enabled = np.asarray(enabled, dtype=bool)
        if self.pd_law == "on_command":
            self.tau = self._pd_torque()

    def _pd_torque(self) -> FloatArray:
        c, d = self.command, self.data
        tau = c.tau + c.kp * (c.q - d.qpos[self.qpos_adr]) + c.kd * (c.dq - d.qvel[self.qvel_adr])
        return np.where(self.enabled, np.clip(tau, -self.tau_limit, self.tau_limit), 0.0)

    def _apply_push(self) -> None:
        d = self.data
        d.xfrc_applied[self.base_body] = 0.0
        d.xfrc_applied[self.base_body, 0:3] = self.external_force_n  # a push (fault injection)

    def step(self) -> None:
        d = self.data
        if self.pd_law == "every_step":
            self.tau = self._pd_torque()
        d.ctrl[self.actuator] = self.tau
        self._apply_push()
        mujoco.mj_step(self.model, d)

    # The robot's state: joints, and the base's (pelvis's) orientation, gyro and accelerometer, as the stack
    # reads them once rt/lowstate is decoded (parkour_core.unitree.imu_in_base_frame).
    @property
    def q(self) -> FloatArray:
        return self.data.qpos[self.qpos_adr].copy()

    @property
    def dq(self) -> FloatArray:
        return self.data.qvel[self.qvel_adr].copy()

    @property
    def quat_wxyz(self) -> FloatArray:
        return self.data.qpos[3:7].copy()

    @property
    def gyro(self) -> FloatArray:
        return self.data.sensordata[self.gyro_adr : self.gyro_adr + 3].copy()

    @property
    def accel(self) -> FloatArray:
        return self.data.sensordata[self.accel_adr : self.accel_adr + 3].copy()

    # The robot's IMU as rt/lowstate carries it (the bridge sends these): the base's on the G1, the
    # torso's on the H1 (RobotSpec.imu_body). On the H1 the orientation and the gyro are the IMU site's at
    # the current state, composed as MuJoCo's kinematics compose them (the base's quaternion and angular
    # velocity, qpos and qvel, through the waist's angle and rate), so the reading and the joints sent with
    # it are of one instant, as on the robot; MuJoCo's ``imu_gyro`` sensor reads the same after a forward
    # pass, but after mj_step it holds the state before the step, and the waist's rate sent beside it would
    # be a step ahead. The accelerometer is that sensor's (``imu_accel``), as the base's is.
    def _imu_mount(self) -> FloatArray:
        """The IMU site's orientation on the base: body_quat * hinge(waist) * site_quat."""
        hinge, body, mount = np.empty(4), np.empty(4), np.empty(4)
        mujoco.mju_axisAngle2Quat(hinge, self._imu_axis, self.data.qpos[self._imu_qpos_adr] - self._imu_qpos0)
        mujoco.mju_mulQuat(body, self._imu_body_quat, hinge)
        mujoco.mju_mulQuat(mount, body, self._imu_site_quat)
        return mount

    @property
    def imu_quat_wxyz(self) -> FloatArray:
        if self.imu_on_base:
            return self.quat_wxyz
        quat = np.empty(4)
        mujoco.mju_mulQuat(quat, self.data.qpos[3:7], self._imu_mount())
        return quat

    @property
    def imu_gyro(self) -> FloatArray:
        if self.imu_on_base:
            return self.gyro
        # The base's angular velocity (the free joint's, in the base's frame) plus the waist's about its
        # axis (in the torso's), both in the IMU site's frame.
        inverse, site_inverse = np.empty(4), np.empty(4)
        mujoco.mju_negQuat(inverse, self._imu_mount())
        mujoco.mju_negQuat(site_inverse, self._imu_site_quat)
        base, waist = np.empty(3), np.empty(3)
        mujoco.mju_rotVecQuat(base, self.data.qvel[3:6], inverse)
        mujoco.mju_rotVecQuat(waist, self._imu_axis * self.data.qvel[self._imu_dof_adr], site_inverse)
        return base + waist

    @property
    def imu_accel(self) -> FloatArray:
        if self.imu_on_base:
            return self.accel
        return self.data.sensordata[self.imu_accel_adr : self.imu_accel_adr + 3].copy()

    # Ground truth, for reports only.
    @property
    def base_pos(self) -> FloatArray:
        return self.data.qpos[0:3].copy()

    @property
    def base_lin_vel_world(self) -> FloatArray:
        return self.data.qvel[0:3].copy()

    @property
    def yaw(self) -> float:
        return yaw_of(self.data.qpos[3:7])

    @property
    def tilt(self) -> float:
        return tilt_rad(self.data.qpos[3:7])

    def fallen(self) -> bool:
        return bool(self.data.qpos[2] < FALL_HEIGHT_M or self.tilt > FALL_TILT_RAD)

    @property
    def time(self) -> float:
        return float(self.data.time)
