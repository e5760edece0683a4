"""The simulated D435i against hand-computed geometry, across both methods, on real MuJoCo models."""

import dataclasses
import math

import mujoco
import numpy as np
import pytest

from parkour_core.config import SimCameraConfig
from parkour_core.depth import DepthSpec, preprocess_depth
from parkour_core.robots import G1
from parkour_core.robots.spec import CameraMount
from parkour_sim.depth_camera import (
    D435_FOV_DEG,
    DEPTH_CAMERA_NAME,
    TERRAIN_GEOM_GROUP,
    SimDepthCamera,
    SimDepthSensor,
    add_depth_camera,
    ray_directions,
)
from parkour_sim.physics import RobotSim
from parkour_sim.scene import build_model

METHODS = ("raycast", "render")
G1_PITCH = G1.camera.rpy[1]


def _rig(mount: CameraMount, boxes=(), floor: bool = True) -> tuple[mujoco.MjModel, mujoco.MjData]:
    """A static camera body at the origin with the D435 mounted on it, a floor and boxes (terrain)."""
    spec = mujoco.MjSpec()
    head = spec.worldbody.add_body(name=mount.body)
    add_depth_camera(head, mount)
    if floor:
        spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 0.05])
    for pos, half in boxes:
        spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, pos=list(pos), size=list(half))
    for geom in spec.geoms:
        geom.group = TERRAIN_GEOM_GROUP
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    return model, data


def _capture(model, data, method: str, width: int = 87, height: int = 58, **kw) -> np.ndarray:
    camera = SimDepthCamera(model, width, height, method, **kw)
    try:
        return camera.capture(data)
    finally:
        camera.close()


@pytest.mark.parametrize("method", METHODS)
def test_box_face_reads_its_z_distance(method):
    # Camera 1 m up looking along +x; a box whose front face is the plane x = 2.5 fills the view.
    mount = CameraMount("head", (0.1, 0.0, 1.0), (0.0, 0.0, 0.0))
    model, data = _rig(mount, boxes=[((3.0, 0.0, 1.0), (0.5, 5.0, 5.0))], floor=False)
    depth = _capture(model, data, method)
    assert depth.shape == (58, 87) and depth.dtype == np.float32
    # z-depth, not range: a face square to the optical axis reads the same at every pixel.
    assert depth[29, 43] == pytest.approx(2.4, abs=1e-4)
    np.testing.assert_allclose(depth, 2.4, atol=1e-4)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(("face_m", "reads_m"), [(0.05, 0.0), (0.15, 0.15), (9.0, 9.0), (12.0, 0.0)])
def test_returns_outside_the_sensor_range_are_holes(method, face_m, reads_m):
    # Closer than the minimum z (0.1 m) or beyond the range (10 m): 0, as a D435 reports; in between
    # the renderer's clip planes must not cut the geometry (the box spans the model, so its extent is large).
    mount = CameraMount("head", (0.0, 0.0, 1.0), (0.0, 0.0, 0.0))
    model, data = _rig(mount, boxes=[((face_m + 0.5, 0.0, 1.0), (0.5, 20.0, 20.0))], floor=False)
    depth = _capture(model, data, method)
    np.testing.assert_allclose(depth, reads_m, atol=1e-4)


@pytest.mark.parametrize("method", METHODS)
def test_floor_seen_by_the_pitched_g1_mount_matches_the_hand_formula(method):
    # Pixel (x, y, -1) in the camera frame points along f + x r + y u (forward, right, up). With the
    # camera h above the floor, pitched down by p: the ray's z slope is y cos p - sin p, so the floor
    # is at ray parameter (= z-depth) h / (sin p - y cos p); columns do not matter.
    h, p = 1.2, G1_PITCH
    width, height = 9, 7  # odd: the centre pixel lies on the optical axis
    model, data = _rig(CameraMount("head", (0.0, 0.0, h), (0.0, p, 0.0)))
    depth = _capture(model, data, method, width, height)
    assert depth[3, 4] == pytest.approx(h / math.sin(p), abs=1e-4)
    half_h = math.tan(math.radians(D435_FOV_DEG[1] / 2))
    y = (1.0 - (np.arange(height) + 0.5) / height * 2.0) * half_h
    expected = h / (math.sin(p) - y * math.cos(p))
    np.testing.assert_allclose(depth, np.repeat(expected[:, None], width, axis=1), rtol=1e-5)
    assert depth[0, 4] > depth[-1, 4]  # row 0 is the top of the image: farther floor


@pytest.mark.parametrize("method", METHODS)
def test_image_left_is_the_cameras_left(method):
    mount = CameraMount("head", (0.0, 0.0, 1.0), (0.0, 0.0, 0.0))
    # A box 2 m ahead on the camera's left (+y), nothing else in view.
    model, data = _rig(mount, boxes=[((2.0, 1.0, 1.0), (0.1, 0.5, 0.5))], floor=False)
    depth = _capture(model, data, method)
    cols = np.nonzero((depth > 0).any(axis=0))[0]
    assert len(cols) > 0 and cols.max() < 87 // 2


def test_ray_directions_span_the_d435_field_of_view():
    d = ray_directions(87, 58)
    assert d.shape == (58 * 87, 3) and np.all(d[:, 2] == -1.0)
    # Pixel centres: the outermost lie half a pixel inside the 87 x 58 deg frustum edges.
    half_w, half_h = math.tan(math.radians(43.5)), math.tan(math.radians(29.0))
    assert d[:, 0].max() == pytest.approx(half_w * (1 - 1 / 87))
    assert d[:, 1].max() == pytest.approx(half_h * (1 - 1 / 58))
    assert d[0, 0] < 0 < d[0, 1]  # first pixel: left, top


def _g1_in_front_of_the_step() -> RobotSim:
    sim = RobotSim(G1, "box_course", 0.002)
    sim.reset(base_xy_yaw=(2.8, 0.0, 0.0))  # the 5 cm step, the 10 cm platform and the side block in view
    return sim


def test_raycast_and_render_agree_on_the_g1_scene():
    sim = _g1_in_front_of_the_step()
    ray = _capture(sim.model, sim.data, "raycast")
    render = _capture(sim.model, sim.data, "render")
    valid = (ray > 0) & (render > 0)
    assert valid.mean() > 0.9
    assert np.abs(ray - render)[valid].max() < 1e-3
    assert np.mean((ray > 0) != (render > 0)) < 0.005
    # The step's edge is in view: the image is not just a floor.
    assert np.ptp(np.diff(ray, axis=0)) > 0.1


@pytest.mark.parametrize("method", METHODS)
def test_the_robot_does_not_see_itself(method):
    # The camera turned straight down at the legs, with the floor moved out of the terrain group:
    # with the terrain group alone nothing is in view; with the robot's groups the legs are.
    down = dataclasses.replace(G1, camera=dataclasses.replace(G1.camera, rpy=(0.0, math.pi / 2, 0.0)))
    model = build_model(down, "flat", 0.002)
    floor = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "floor")
    model.geom_group[floor] = 0
    sim_data = mujoco.MjData(model)
    sim_data.qpos[2] = G1.standing_base_height_m
    mujoco.mj_forward(model, sim_data)
    assert np.all(_capture(model, sim_data, method) == 0.0)
    # The robot's visual meshes (holosoma G1: group 1; its collision capsules, group 3, enclose the camera).
    with_robot = _capture(model, sim_data, method, geom_groups=(1,))
    assert (with_robot > 0).mean() > 0.05


def test_unknown_method_and_missing_camera_are_refused():
    model, _ = _rig(CameraMount("head", (0.0, 0.0, 1.0), (0.0, 0.0, 0.0)))
    with pytest.raises(ValueError, match="raycast"):
        SimDepthCamera(model, 87, 58, "lidar")
    with pytest.raises(ValueError, match="no camera"):
        SimDepthCamera(model, 87, 58, camera="no_such_camera")


def test_scene_puts_the_camera_on_the_mount_and_only_the_terrain_in_its_group():
    model = build_model(G1, "box_course", 0.002)
    cam = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, DEPTH_CAMERA_NAME)
    body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, G1.camera.body)
    assert model.cam_bodyid[cam] == body
    np.testing.assert_allclose(model.cam_pos[cam], G1.camera.xyz)
    world = model.geom_bodyid == 0
    assert world.sum() == 5  # floor + 4 boxes
    np.testing.assert_array_equal(model.geom_group[world], TERRAIN_GEOM_GROUP)
    assert not np.any(model.geom_group[~world] == TERRAIN_GEOM_GROUP)


@pytest.mark.parametrize("method", METHODS)
def test_sensor_publishes_the_policy_image_of_the_noisy_frame(method):
    sim = _g1_in_front_of_the_step()
    cfg = SimCameraConfig(method=method, hz=30.0, latency_min_s=0.06, latency_max_s=0.08, seed=3)
    spec = DepthSpec()
    sensor = SimDepthSensor(sim.model, cfg, spec, strip_every_s=0.1, strip_max=4)
    published = []
    try:
        for step in range(250):  # 0.5 s of sim time; the robot stands still (time is all that moves)
            sim.data.time = (step + 1) * 0.002
            published += sensor.tick(sim.data)
    finally:
        sensor.close()
    # Exposures at the grid points 0, 1/30, ..., 15/30 = 0.5 s; published those up to 0.5 s - latency.
    assert 13 <= len(published) <= 14
    for f in published:
        np.testing.assert_array_equal(f.frame.policy, preprocess_depth(f.frame.metres, spec))
        assert f.frame.policy.shape == (spec.height, spec.width)
        assert f.exposure_s == f.frame.exposure_s
    stamps = [f.exposure_s for f in published]
    assert stamps == sorted(stamps)
    stats = sensor.stats()
    assert stats["frames_rendered"] == 16 and stats["frames_published"] == len(published)
    assert 60.0 <= stats["published_age_ms"]["p50"] <= 82.0
    assert stats["published_fps"] == pytest.approx(30.0, rel=0.05)
    assert [round(f.exposure_s, 3) for f in sensor.strip] == [0.002, 0.1, 0.2, 0.3]
    # Noise was applied: the published metres differ from a clean capture.
    clean = _capture(sim.model, sim.data, method)
    assert np.abs(published[-1].frame.metres - clean)[clean > 0].mean() > 0.005
