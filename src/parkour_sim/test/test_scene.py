import mujoco
import pytest

from parkour_core.robots import G1
from parkour_sim.scene import SceneError, build_model


def test_flat_scene_has_floor_and_robot():
    model = build_model(G1, "flat", 0.002)
    assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "floor") >= 0
    assert model.nu == G1.num_joints
    assert model.opt.timestep == pytest.approx(0.002)


def test_box_course_places_boxes_with_their_height():
    model = build_model(G1, "box_course", 0.002)
    gid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "platform_10cm")
    assert gid >= 0
    assert model.geom_size[gid][2] == pytest.approx(0.05)


def test_unknown_scene_names_the_known_ones():
    with pytest.raises(SceneError, match="flat"):
        build_model(G1, "no_such_scene", 0.002)
