import numpy as np

from parkour_core.robots import G1
from training.envs import privileged
from training.motion_matching import quat


def _input(pelvis_pos, yaw=0.0, boxes=()) -> privileged.PrivilegedInput:
    n, j, k = 1, G1.num_joints, 4
    center = np.zeros((n, k, 3))
    half = np.full((n, k, 3), privileged.NO_BOX)
    for b, (c, h) in enumerate(boxes):
        center[0, b], half[0, b] = c, h
    q = quat.from_yaw(np.array([yaw]))
    return privileged.PrivilegedInput(
        ref_joint_pos=np.tile(G1.default_q, (n, 1)), ref_joint_vel=np.zeros((n, j)),
        ref_anchor_pos=np.array([pelvis_pos]), ref_anchor_quat=q,
        pelvis_pos=np.array([pelvis_pos]), pelvis_quat=q, pelvis_lin_vel_w=np.zeros((n, 3)),
        pelvis_ang_vel_b=np.zeros((n, 3)), joint_pos=np.tile(G1.default_q, (n, 1)), joint_vel=np.zeros((n, j)),
        default_q=G1.default_q, last_action=np.zeros((n, j)),
        box_center=center, box_half=half, box_yaw=np.zeros((n, k)),
    )  # fmt: skip


def test_dims_and_order() -> None:
    assert privileged.privileged_size() == 29 * 5 + 3 + 6 + 3 + 6 + 3 + 3 + 121 == 290
    obs = privileged.build_privileged(_input([0.0, 0.0, 0.75]))
    assert obs.shape == (1, 290) and obs.dtype == np.float32
    s = privileged.term_slices()
    assert list(s)[-1] == "height_scan" and s["height_scan"] == slice(169, 290)
    np.testing.assert_allclose(obs[0, s["anchor_pos_error_b"]], 0.0)
    np.testing.assert_allclose(obs[0, s["anchor_ori_error_b"]], [1, 0, 0, 0, 1, 0], atol=1e-12)
    np.testing.assert_allclose(obs[0, s["pelvis_pos_w"]], [0.0, 0.0, 0.75])


def test_height_scan_spans_0p7_m_and_sees_a_box_where_it_is() -> None:
    grid = privileged.scan_grid()
    assert grid.shape == (121, 2) and np.ptp(grid[:, 0]) == np.ptp(grid[:, 1]) == np.float64(0.7)
    s = privileged.term_slices()["height_scan"]
    flat = privileged.build_privileged(_input([0.0, 0.0, 0.75]))[0, s]
    np.testing.assert_allclose(flat, 0.75, atol=1e-6)
    # A 0.3 m box covering x > 0.1 (world), pelvis at the origin facing +x: the front points see it.
    box = ([0.6, 0.0, 0.15], [0.5, 1.0, 0.15])
    scan = privileged.build_privileged(_input([0.0, 0.0, 0.75], boxes=[box]))[0, s]
    front = grid[:, 0] > 0.1 + 1e-9
    np.testing.assert_allclose(scan[front], 0.45, atol=1e-6)
    np.testing.assert_allclose(scan[~front], 0.75, atol=1e-6)
    # Facing +y the grid turns with the pelvis: the box is now on the grid's right (y < -0.1 local).
    turned = privileged.build_privileged(_input([0.0, 0.0, 0.75], yaw=np.pi / 2, boxes=[box]))[0, s]
    right = grid[:, 1] < -0.1 - 1e-9
    np.testing.assert_allclose(turned[right], 0.45, atol=1e-6)
    np.testing.assert_allclose(turned[~right], 0.75, atol=1e-6)
