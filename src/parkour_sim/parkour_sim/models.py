"""The MuJoCo models a robot can be simulated with (``bridge.robot_model``, ``--robot-model``).

Each robot has two, written by different people, so a controller tuned on one and run on the other
tests how much it depends on one model's numbers. G1: holosoma's ``g1_29dof.xml`` (the default, the
walking policy's) and mjlab's ``g1.xml`` (joints, masses and capsules only; mjlab sets armature and
gains at run time). H1: Unitree's own MJCF as mujoco_menagerie ships it (``unitree``, the default)
and ``simplified``, primitive shapes written here from published numbers (``sim/robots/h1/h1.xml``).
Where a file leaves something to its own trainer or names things its own way, the adapter here adds
what the sim reads: joints and motors under the robot spec's names, one torque motor per joint
(effort limits), armature from Unitree's motor data (mjlab's G1), a gyro and accelerometer on the
pelvis (``base_gyro``, ``base_accel``) and, where the robot's IMU is elsewhere (the H1's, on the torso:
``RobotSpec.imu_body``), on the IMU's site (``imu_gyro``, ``imu_accel``), a site at each sole
(``left_foot``, ``right_foot``), no self collisions (mjlab's G1; Unitree's H1 keeps its own), and
visual meshes out of the depth camera's geom group.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import mujoco

from parkour_core.robots import RobotSpec

DEFAULT = ""  # the robot spec's own model (RobotSpec.mjcf_asset)


@dataclass(frozen=True)
class RobotModel:
    name: str
    asset: str  # parkour_core.assets reference
    adapt: Callable[[mujoco.MjSpec, RobotSpec], None] | None = None


def _reflected_inertia(rotor: tuple[float, float, float], gears: tuple[float, float, float]) -> float:
    """Inertia at the output of a two-stage planetary gearbox: each stage's rotor inertia times the
    square of the reduction after it (the first stage turns at motor speed)."""
    return rotor[0] * (gears[1] * gears[2]) ** 2 + rotor[1] * gears[2] ** 2 + rotor[2]


# Unitree's G1 motors: rotor inertias (kg m^2) of the three stages and the gear ratios.
_MOTORS = {
    "5020": _reflected_inertia((0.139e-4, 0.017e-4, 0.169e-4), (1.0, 1.0 + 46 / 18, 1.0 + 56 / 16)),
    "7520_14": _reflected_inertia((0.489e-4, 0.098e-4, 0.533e-4), (1.0, 4.5, 1.0 + 48 / 22)),
    "7520_22": _reflected_inertia((0.489e-4, 0.109e-4, 0.738e-4), (1.0, 4.5, 5.0)),
    "4010": _reflected_inertia((0.068e-4, 0.0, 0.0), (1.0, 5.0, 5.0)),
}
# Which motor drives which joint; the ankles and the waist's pitch and roll are 4-bar linkages driven
# by two 5020s (nominally 1:1, so twice one motor's inertia).
_G1_ARMATURE = (
    (r".*_(elbow|shoulder_pitch|shoulder_roll|shoulder_yaw|wrist_roll)_joint", _MOTORS["5020"]),
    (r".*_(hip_pitch|hip_yaw)_joint|waist_yaw_joint", _MOTORS["7520_14"]),
    (r".*_(hip_roll|knee)_joint", _MOTORS["7520_22"]),
    (r".*_(wrist_pitch|wrist_yaw)_joint", _MOTORS["4010"]),
    (r"waist_(pitch|roll)_joint|.*_ankle_(pitch|roll)_joint", 2 * _MOTORS["5020"]),
)
_VISUAL_GROUP_IN_FILE = 2  # the depth camera's terrain group (parkour_sim.depth_camera): moved out
_VISUAL_GROUP = 1


def joint_armature(joint: str) -> float:
    for pattern, value in _G1_ARMATURE:
        if re.fullmatch(pattern, joint):
            return value
    raise ValueError(f"no G1 motor known for joint {joint!r}")


def _adapt_mjlab_g1(mj: mujoco.MjSpec, spec: RobotSpec) -> None:
    for joint in spec.joints:
        j = mj.joint(joint.name)
        if j is None:
            raise ValueError(f"mjlab's G1 has no joint {joint.name!r}")
        j.armature = joint_armature(joint.name)
        mj.add_actuator(
            name=joint.name, target=joint.name, trntype=mujoco.mjtTrn.mjTRN_JOINT,
            ctrllimited=True, ctrlrange=[-joint.tau_max, joint.tau_max],
        )  # fmt: skip
    for geom in mj.geoms:
        if geom.group == _VISUAL_GROUP_IN_FILE:
            geom.group = _VISUAL_GROUP
        elif geom.contype:  # collision capsules: against the world, not each other
            geom.contype = 0
            geom.conaffinity = 1
    mj.add_sensor(name="base_gyro", type=mujoco.mjtSensor.mjSENS_GYRO, objtype=mujoco.mjtObj.mjOBJ_SITE,
                  objname="imu_in_pelvis")  # fmt: skip
    mj.add_sensor(name="base_accel", type=mujoco.mjtSensor.mjSENS_ACCELEROMETER, objtype=mujoco.mjtObj.mjOBJ_SITE,
                  objname="imu_in_pelvis")  # fmt: skip


# The sole of Unitree's H1 foot: three capsules (radius 0.014 m) whose lowest points, 0.070 m below the ankle axis,
# are the heel at x = -0.035 m, the toe at 0.115 m and the toe bar at 0.14 m; the site sits mid-way on that plane.
_H1_SOLE = (0.05, 0.0, -0.07)


# The sensors on the robot's IMU where it is not on the base (RobotSpec.imu_body): RobotSim reads them.
IMU_GYRO = "imu_gyro"
IMU_ACCEL = "imu_accel"
_H1_IMU_SITE = "imu"  # mujoco_menagerie's, on torso_link


def _adapt_unitree_h1(mj: mujoco.MjSpec, spec: RobotSpec) -> None:
    """mujoco_menagerie's unitree_h1: joints and motors are named without Unitree's ``_joint`` suffix, its IMU
    site is on the torso (where the real H1's is), visual meshes are in geom group 2. Joints and motors get the
    spec's names (the motors and their torque ranges are Unitree's, unchanged), the meshes group 1, the
    torso's IMU site a gyro and accelerometer (the robot's IMU, ``imu_gyro``, ``imu_accel``), the pelvis a
    site with its own (``base_gyro``, ``base_accel``) and each foot a sole site. Masses, inertias, armature,
    damping, joint ranges and collision geoms stay as Unitree wrote them."""
    renamed = {}
    for joint in spec.joints:
        j = mj.joint(joint.name.removesuffix("_joint"))
        if j is None:
            raise ValueError(f"Unitree's H1 model has no joint {joint.name.removesuffix('_joint')!r}")
        renamed[j.name] = joint.name
        j.name = joint.name
    for act in mj.actuators:
        if act.target not in renamed:
            raise ValueError(f"Unitree's H1 model has a motor {act.name!r} on an unknown joint {act.target!r}")
        act.name = act.target = renamed[act.target]
    for geom in mj.geoms:
        if geom.group == _VISUAL_GROUP_IN_FILE:
            geom.group = _VISUAL_GROUP
    pelvis = mj.body(spec.base_body)
    pelvis.add_site(name="imu_in_pelvis", pos=[0.0, 0.0, 0.0], group=4)
    for foot, site in zip(spec.foot_bodies, ("left_foot", "right_foot"), strict=True):
        mj.body(foot).add_site(name=site, pos=list(_H1_SOLE), group=4)
    mj.add_sensor(name="base_gyro", type=mujoco.mjtSensor.mjSENS_GYRO, objtype=mujoco.mjtObj.mjOBJ_SITE,
                  objname="imu_in_pelvis")  # fmt: skip
    mj.add_sensor(name="base_accel", type=mujoco.mjtSensor.mjSENS_ACCELEROMETER, objtype=mujoco.mjtObj.mjOBJ_SITE,
                  objname="imu_in_pelvis")  # fmt: skip
    imu = mj.site(_H1_IMU_SITE)
    if imu is None or imu.parent.name != spec.imu_body:
        raise ValueError(f"Unitree's H1 model has no IMU site {_H1_IMU_SITE!r} on {spec.imu_body!r}")
    mj.add_sensor(name=IMU_GYRO, type=mujoco.mjtSensor.mjSENS_GYRO, objtype=mujoco.mjtObj.mjOBJ_SITE,
                  objname=_H1_IMU_SITE)  # fmt: skip
    mj.add_sensor(name=IMU_ACCEL, type=mujoco.mjtSensor.mjSENS_ACCELEROMETER, objtype=mujoco.mjtObj.mjOBJ_SITE,
                  objname=_H1_IMU_SITE)  # fmt: skip


# Each robot's default model (its RobotSpec.mjcf_asset), named, with what the sim adds to it.
DEFAULTS: dict[str, tuple[str, Callable[[mujoco.MjSpec, RobotSpec], None] | None]] = {
    "g1": ("holosoma", None),
    "h1": ("unitree", _adapt_unitree_h1),
}
# The others, by robot. The simplified H1 is ours: no meshes, armature and damping rough stand-ins.
MODELS: dict[str, dict[str, RobotModel]] = {
    "g1": {"mjlab": RobotModel("mjlab", "mjlab:asset_zoo/robots/unitree_g1/xmls/g1.xml", _adapt_mjlab_g1)},
    "h1": {"simplified": RobotModel("simplified", "repo:sim/robots/h1/h1.xml")},
}


def robot_model(spec: RobotSpec, name: str = DEFAULT) -> RobotModel:
    """The model ``name`` of ``spec``'s robot ("" or the default's name: the spec's own)."""
    default_name, adapt = DEFAULTS.get(spec.name, ("default", None))
    default = RobotModel(default_name, spec.mjcf_asset, adapt)
    if name in (DEFAULT, default.name):
        return default
    known = MODELS.get(spec.name, {})
    if name not in known:
        raise ValueError(f"the {spec.name} has no model {name!r}; known: {[default.name, *known]}")
    return known[name]
