import numpy as np

from training.motion_matching.terrain import Boxes, box_from_vertices, footprint_distance, ground_height, place


def _corners(c, half, yaw):
    pts = []
    for sx in (-1, 1):
        for sy in (-1, 1):
            for z in (0.0, 2 * half[2]):
                x, y = sx * half[0], sy * half[1]
                pts.append([c[0] + np.cos(yaw) * x - np.sin(yaw) * y, c[1] + np.sin(yaw) * x + np.cos(yaw) * y, z])
    return np.array(pts)


def test_box_from_vertices_recovers_an_oriented_box():
    c, half, yaw = box_from_vertices(_corners([0.3, -0.2], [0.2, 0.5, 0.35], 0.4))
    np.testing.assert_allclose(c, [0.3, -0.2, 0.35], atol=1e-9)
    np.testing.assert_allclose(half, [0.2, 0.5, 0.35], atol=1e-9)
    assert abs(yaw - 0.4) < 1e-9


def test_place_carries_the_matched_frame_onto_the_character():
    boxes = Boxes(np.array([[2.0, 0.0, 0.3]]), np.array([[0.2, 0.5, 0.3]]), np.array([0.0]))
    # matched clip frame: root at (1, 0) facing +x; character at (5, 5) facing +y, standing on 0.1 m
    placed = place(boxes, np.array([1.0, 0.0]), 0.0, np.array([5.0, 5.0]), np.pi / 2, 0.1)
    np.testing.assert_allclose(placed.center, [[5.0, 6.0, 0.4]], atol=1e-12)
    np.testing.assert_allclose(placed.yaw, [np.pi / 2])
    # the box stays the same distance ahead of the character
    d0 = footprint_distance(boxes, np.array([[1.0, 0.0]]))
    d1 = footprint_distance(placed, np.array([[5.0, 5.0]]))
    np.testing.assert_allclose(d0, d1, atol=1e-12)


def test_ground_height_and_mirror():
    boxes = Boxes(np.array([[0.0, 1.0, 0.35]]), np.array([[0.5, 0.5, 0.35]]), np.array([0.3]))
    h = ground_height(boxes, np.array([[0.0, 1.0], [0.0, -1.0], [3.0, 3.0]]))
    np.testing.assert_allclose(h, [0.7, 0.0, 0.0])
    m = boxes.mirrored()
    np.testing.assert_allclose(ground_height(m, np.array([[0.0, -1.0]])), [0.7])
    np.testing.assert_allclose(m.mirrored().center, boxes.center)
