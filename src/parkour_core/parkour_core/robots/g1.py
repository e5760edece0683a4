"""Unitree G1, 29 DoF (``unitree_hg`` messages, 35 motor slots).

Limits: position, velocity and effort from Unitree's G1 29-DoF description (as shipped in
holosoma's ``g1_29dof.urdf``). Default pose: the pose holosoma's walking policy was trained
around. Stand gains (the robot's defaults; ``supervisor.stand_gains`` overrides them per joint):
pure PD holds this bent-knee pose only with stiff ankles (kp 200; at 40-150 the robot tips forward
within 1.5 s). Why each kd is what it is: the comment above the joint table. Damping (DAMP) uses at
most these kd (safety.damp_command). parkour_sim.standup stands it up with these on both G1 models,
at 2 and 5 ms steps, with the torque applied every step or held, with 50 ms command gaps and with
commands lost at random (bench/standup: the success table).
"""

from __future__ import annotations

from parkour_core.robots.spec import CameraMount, JointSpec, RobotSpec

# The damping of the light joints is bounded by the peers the robot must stand up on, not by the robot:
# a PD torque computed once and held for a 5 ms step (Unitree's simulators) diverges when kd x dt exceeds
# about twice the joint's inertia (ankles and wrists: 0.004-0.01 kg m^2, where kd 10 and kd 2 gave
# 5-6.6 and 1.1-2.5), so the ankles have kd 0.5 and the wrists at most 0.3 (kd dt / J <= 0.4). A command
# lost for 50 ms holds the torque for ten such steps: there the hip yaw's kd 7.5 overspeeds the leg on
# mjlab's model during the stand-up (1.65 x its velocity limit), and the waist's kd 10 tips the torso past
# its pitch limit once the robot stands alone; they have kd 3 and 5. A controller the host starves loses
# commands at random, so a torque is held for 10-25 ms over and over, damped (DAMP) or standing: there the
# arms' and wrists' kd 2 and 0.3 and the knees' kd 10 overspeed the joint (shoulder yaw and elbow
# 0.03-0.04 kg m^2, knee 0.14, hanging), so they have kd 0.5, 0.1 and 5 (kd x 25 ms / J <= 0.4, 0.6 and
# 0.9). The ankles keep kd 0.5: at 0.3 they fail sooner. The rest keep 5 % of kp.
#            name                          q_min      q_max    dq_max tau_max default  kp      kd
_LEG = [
    ("hip_pitch_joint", -2.5307, 2.8798, 32.0, 88.0, -0.312, 150.0, 7.5),
    ("hip_roll_joint", None, None, 20.0, 139.0, 0.0, 150.0, 7.5),
    ("hip_yaw_joint", -2.7576, 2.7576, 32.0, 88.0, 0.0, 150.0, 3.0),
    ("knee_joint", -0.087267, 2.8798, 20.0, 139.0, 0.669, 200.0, 5.0),
    ("ankle_pitch_joint", -0.87267, 0.5236, 37.0, 50.0, -0.363, 200.0, 0.5),
    ("ankle_roll_joint", -0.2618, 0.2618, 37.0, 50.0, 0.0, 200.0, 0.5),
]
_HIP_ROLL_RANGE = {"left": (-0.5236, 2.9671), "right": (-2.9671, 0.5236)}
_WAIST = [
    ("waist_yaw_joint", -2.618, 2.618, 32.0, 88.0, 0.0, 200.0, 10.0),
    ("waist_roll_joint", -0.52, 0.52, 37.0, 50.0, 0.0, 200.0, 5.0),
    ("waist_pitch_joint", -0.52, 0.52, 37.0, 50.0, 0.0, 200.0, 5.0),
]
_ARM = [
    ("shoulder_pitch_joint", -3.0892, 2.6704, 37.0, 25.0, 0.2, 40.0, 2.0),
    ("shoulder_roll_joint", None, None, 37.0, 25.0, None, 40.0, 2.0),
    ("shoulder_yaw_joint", -2.618, 2.618, 37.0, 25.0, 0.0, 40.0, 0.5),
    ("elbow_joint", -1.0472, 2.0944, 37.0, 25.0, 0.6, 40.0, 0.5),
    ("wrist_roll_joint", -1.972222, 1.972222, 37.0, 25.0, 0.0, 40.0, 0.1),
    ("wrist_pitch_joint", -1.614430, 1.614430, 22.0, 5.0, 0.0, 40.0, 0.1),
    ("wrist_yaw_joint", -1.614430, 1.614430, 22.0, 5.0, 0.0, 40.0, 0.1),
]
_SHOULDER_ROLL = {"left": (-1.5882, 2.2515, 0.2), "right": (-2.2515, 1.5882, -0.2)}


def _side(rows: list[tuple], side: str) -> list[JointSpec]:
    out = []
    for name, q_min, q_max, dq_max, tau_max, default, kp, kd in rows:
        if name == "hip_roll_joint":
            q_min, q_max = _HIP_ROLL_RANGE[side]
        if name == "shoulder_roll_joint":
            q_min, q_max, default = _SHOULDER_ROLL[side]
        out.append(JointSpec(f"{side}_{name}", q_min, q_max, dq_max, tau_max, default, kp, kd))
    return out


def _joints() -> tuple[JointSpec, ...]:
    waist = [JointSpec(*row) for row in _WAIST]
    return tuple(_side(_LEG, "left") + _side(_LEG, "right") + waist + _side(_ARM, "left") + _side(_ARM, "right"))


G1 = RobotSpec(
    name="g1",
    dds_family="unitree_hg",
    num_motor_slots=35,
    joints=_joints(),
    motor_slots=tuple(range(29)),
    base_body="pelvis",
    torso_body="torso_link",
    standing_base_height_m=0.79,
    kd_damp=3.0,
    camera=CameraMount("torso_link", (0.0576235, 0.01753, 0.42987), (0.0, 0.8307767, 0.0)),
    mjcf_asset="holosoma:data/robots/g1/g1_29dof.xml",
    # rt/lowstate's IMU is the pelvis's (Unitree's deployers: ``imu_type: pelvis``; the torso IMU is a
    # second one, on another topic): its reading is the base's as it comes.
    imu_body="pelvis",
)
