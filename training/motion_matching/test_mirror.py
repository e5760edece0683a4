import numpy as np

from training.motion_matching.kinematics import JOINT_NAMES, forward_bodies, g1_model
from training.motion_matching.mirror import joint_mirror_map, mirror_frames, mirror_joints
from training.motion_matching.quat import from_rotvec, normalize


def test_mirror_twice_is_identity():
    rng = np.random.default_rng(0)
    rp = rng.normal(size=(20, 3))
    rq = normalize(rng.normal(size=(20, 4)))
    jp = rng.normal(size=(20, 29))
    back = mirror_frames(*mirror_frames(rp, rq, jp))
    for a, b in zip(back, (rp, rq, jp), strict=True):
        np.testing.assert_allclose(a, b)


def test_left_right_map():
    twin, sign = joint_mirror_map()
    names = list(JOINT_NAMES)
    i = names.index("left_hip_roll_joint")
    assert names[twin[i]] == "right_hip_roll_joint" and sign[i] == -1
    i = names.index("right_knee_joint")
    assert names[twin[i]] == "left_knee_joint" and sign[i] == 1
    i = names.index("waist_yaw_joint")
    assert twin[i] == i and sign[i] == -1
    i = names.index("waist_pitch_joint")
    assert twin[i] == i and sign[i] == 1


def test_mirrored_frame_is_the_reflection_of_every_body():
    """FK of the mirrored frame = the reflected FK with left and right bodies swapped (G1 is symmetric)."""
    m = g1_model()
    bodies = tuple(m.body(i).name for i in range(1, m.nbody))
    rng = np.random.default_rng(1)
    rp = np.array([[0.3, 0.2, 0.8]])
    rq = from_rotvec(np.array([[0.1, -0.2, 0.6]]))
    jp = rng.uniform(-0.3, 0.3, size=(1, 29))
    a = forward_bodies(rp, rq, jp, bodies)[0]
    b = forward_bodies(*mirror_frames(rp, rq, jp), bodies)[0]
    swap = [bodies.index(n.replace("left_", "@").replace("right_", "left_").replace("@", "right_")) for n in bodies]
    np.testing.assert_allclose(b[swap] * [1, -1, 1], a, atol=2e-3)


def test_mirror_joints_shape():
    assert mirror_joints(np.zeros((3, 29))).shape == (3, 29)
