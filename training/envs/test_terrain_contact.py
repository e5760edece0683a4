"""The batched backend's terrain slots collide like a compiled box: the same steps as ``RobotSim``.

What this guards: the world body's bounding-volume tree is built around the parked slots, so unless
it follows a box that ``set_terrain`` moves, the midphase culls every foot-box contact and the feet go
through the box.
"""

import numpy as np
import pytest

from parkour_core.robots import G1
from parkour_sim.physics import RobotSim
from training.envs.mujoco_cpu import BatchedMujoco
from training.envs.reference import Terrain

BOX_CENTER, BOX_HALF = (0.1, 0.0, 0.05), (0.4, 1.5, 0.05)


def test_robot_standing_on_a_moved_slot_box_steps_like_robot_sim():
    rng = np.random.default_rng(0)
    kp, kd = np.asarray(G1.kp_stand), np.asarray(G1.kd_stand)
    reference = RobotSim(G1, {"boxes": [{"name": "b", "pos": list(BOX_CENTER), "half_size": list(BOX_HALF)}]}, 0.002)
    reference.enabled[:] = True
    q0 = G1.default_q + rng.normal(0, 0.05, G1.num_joints)
    reference.reset(q0)
    reference.data.qpos[2] += 2 * BOX_HALF[2]  # standing on the box
    batched = BatchedMujoco(1, G1, 0.002, 10, kp, kd, nthread=1)
    batched.set_terrain(0, Terrain(np.array([BOX_CENTER]), np.array([BOX_HALF]), np.zeros(1)))
    batched.set_state(0, reference.base_pos, reference.quat_wxyz, q0, np.zeros(3), np.zeros(3), np.zeros(29))
    try:
        for _ in range(25):
            targets = G1.default_q + rng.normal(0, 0.1, G1.num_joints)
            reference.command.q[:], reference.command.kp[:], reference.command.kd[:] = targets, kp, kd
            for _ in range(10):
                reference.step()
            batched.step(targets[None])
        # Through the box, the base would sink about 10 cm.
        assert abs(batched.root_pos[0, 2] - reference.base_pos[2]) < 1e-6
        assert np.abs(batched.q[0] - reference.q).max() < 1e-6
        assert reference.base_pos[2] > 0.7
    finally:
        batched.close()


@pytest.mark.parametrize("yaw", [0.0, 0.4, -1.2])
def test_a_slot_box_stands_where_a_compiled_box_does_yaw_included(yaw):
    """Each slot compiles unrotated at the world body's frame; once ``set_terrain`` moves and turns it, its
    world pose (what contacts and the depth camera read) is the compiled scene's box's."""
    terrain = Terrain(np.array([BOX_CENTER]), np.array([BOX_HALF]), np.array([yaw]))
    reference = RobotSim(G1, terrain.scene(), 0.002)
    batched = BatchedMujoco(1, G1, 0.002, 10, nthread=1)
    batched.set_terrain(0, terrain)
    batched.set_state(0, reference.base_pos, reference.quat_wxyz, G1.default_q, np.zeros(3), np.zeros(3),
                      np.zeros(G1.num_joints))  # fmt: skip
    try:
        box = reference.model.geom_bodyid == 0
        box[reference.model.geom("floor").id] = False
        g = batched.box_geoms[0]
        np.testing.assert_allclose(batched.datas[0].geom_xpos[g], reference.data.geom_xpos[box][0], atol=1e-12)
        np.testing.assert_allclose(batched.datas[0].geom_xmat[g], reference.data.geom_xmat[box][0], atol=1e-12)
    finally:
        batched.close()


def test_box_face_contacts_count_a_toe_in_a_face_not_a_sole_on_a_top():
    """A box whose near face cuts through both toes of a foot lifted 10 cm (as in a step up) counts both
    feet; soles 1 mm into its top, or into the floor with the box a metre ahead, none (tops are not faces).
    A toe at floor level is as close to the box's bottom face as to its near one: no case there."""
    kp, kd = np.asarray(G1.kp_stand), np.asarray(G1.kd_stand)
    batched = BatchedMujoco(3, G1, 0.002, 10, kp, kd, nthread=1)
    m = batched.base_model
    feet = np.array([m.body(f"{side}_ankle_roll_link").id for side in ("left", "right")])
    soles = np.flatnonzero(np.isin(m.geom_bodyid, feet) & (m.geom_contype > 0))
    upright, zero = np.array([1.0, 0, 0, 0]), np.zeros(3)
    stand = np.array([0.0, 0.0, G1.standing_base_height_m])
    try:
        batched.set_state(0, stand, upright, G1.default_q, zero, zero, np.zeros(29))
        d = batched.datas[0]
        sole_z = np.min(d.geom_xpos[soles, 2] - m.geom_size[soles, 0])  # capsules: size[0] is the radius
        toe_x = np.max(d.geom_xpos[soles, 0] + m.geom_size[soles, 1])  # lying along x: size[1] the half length
        half = np.array([0.4, 1.5, 0.15])
        up = np.array([0.0, 0.0, 1.0])
        on_floor = stand - (sole_z + 0.001) * up
        cases = {
            0: (np.array([toe_x - 0.02 + half[0], 0.0, half[2]]), on_floor + 0.1 * up),  # its face 2 cm into the toes
            1: (np.array([0.0, 0.0, half[2]]), on_floor + 2 * half[2] * up),  # on its top
            2: (np.array([toe_x + 1.0 + half[0], 0.0, half[2]]), on_floor),  # a metre ahead
        }
        for i, (center, base) in cases.items():
            batched.set_terrain(i, Terrain(center[None], half[None], np.zeros(1)))
            batched.set_state(i, base, upright, G1.default_q, zero, zero, np.zeros(29))
            assert batched.datas[i].ncon > 0  # the soles touch the box or the floor
        np.testing.assert_array_equal(batched.box_face_contacts(feet), [2.0, 0.0, 0.0])
    finally:
        batched.close()
