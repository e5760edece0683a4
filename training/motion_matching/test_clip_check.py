import numpy as np
import pytest

from parkour_core.robots import G1
from training.motion_matching.clip_check import DEEP_M, clip_quality, markdown
from training.motion_matching.terrain import Boxes

T = 10
STAND = np.tile([0.0, 0.0, G1.standing_base_height_m], (T, 1))
UPRIGHT = np.tile([1.0, 0.0, 0.0, 0.0], (T, 1))
POSE = np.tile(G1.default_q, (T, 1))
SLAB = Boxes(np.array([[2.0, 0.0, 0.1]]), np.array([[0.4, 0.5, 0.1]]), np.array([0.0]))  # 20 cm, 1.6 m ahead


def test_standing_on_the_floor_goes_into_nothing_and_keeps_inside_the_limits():
    q = clip_quality("stand", False, STAND, UPRIGHT, POSE, SLAB, 50.0)
    assert q.penetration_max_m == 0.0 and q.penetrating_frames == 0.0 and q.beyond_limit_frames == 0.0
    assert q.joint_margin_min_rad > 0.0 and q.foot_skate_max_m == pytest.approx(0.0)


def test_a_robot_hovering_over_the_floor_has_no_sole_down():
    lifted = clip_quality("hover", False, STAND + np.array([0.0, 0.0, 0.1]), UPRIGHT, POSE, SLAB, 50.0)
    assert lifted.floating_frames == 1.0 and lifted.penetration_max_m == 0.0


def test_a_robot_sunk_into_the_floor_or_into_a_box_is_measured_by_depth_and_body():
    sunk = clip_quality("sunk", False, STAND - [0.0, 0.0, 0.1], UPRIGHT, POSE, SLAB, 50.0)
    assert sunk.penetration_max_m > 0.05 and sunk.penetrating_frames == 1.0
    assert sunk.penetration_body.endswith("ankle_roll_link")
    clearance = 0.1 - sunk.penetration_max_m  # the soles above the floor at STAND
    on_box = STAND + np.array([2.0, 0.0, 0.2 - clearance - 0.06])  # standing 6 cm into the slab's top
    boxed = clip_quality("boxed", False, on_box, UPRIGHT, POSE, SLAB, 50.0)
    assert boxed.penetration_max_m == pytest.approx(0.06, abs=0.01) and boxed.penetrating_frames == 1.0
    assert DEEP_M < 0.06


def test_joints_past_their_limits_and_a_sliding_foot_are_counted():
    past = POSE.copy()
    knee = G1.joint_names.index("left_knee_joint")
    past[::2, knee] = -0.3  # the knee bent backwards in every other frame
    q = clip_quality("past", False, STAND, UPRIGHT, past, SLAB, 50.0)
    assert q.beyond_limit_frames == 0.5 and q.joint_margin_joint == "left_knee_joint" and q.joint_margin_min_rad < 0
    assert q.legs_near_limit_frames >= 0.5 and q.arms_near_limit_frames < q.legs_near_limit_frames
    sliding = STAND + np.linspace(0.0, 0.2, T)[:, None] * [1.0, 0.0, 0.0]  # 2.2 cm a frame, feet down
    assert clip_quality("slide", False, sliding, UPRIGHT, POSE, SLAB, 50.0).foot_skate_max_m == pytest.approx(
        0.2 / (T - 1), abs=1e-6
    )
    assert "`past`" in markdown([q]) and "left_knee_joint" in markdown([q])
