"""The batched backend's terrain slots collide like a compiled box: the same steps as ``RobotSim``.

What this guards: the world body's bounding-volume tree is built around the parked slots, so unless
it follows a box that ``set_terrain`` moves, the midphase culls every foot-box contact and the feet go
through the box.
"""

import numpy as np

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
