"""The G1 as a kinematic MuJoCo model: forward kinematics of frames q = (root pos, root quat, joints).

The MJCF is holosoma's g1_29dof.xml, read where its package installed it (``parkour_core.assets``).
Its contact pairs name a geom ``floor``, so we add one; nothing else changes.
"""

from __future__ import annotations

from functools import cache

import mujoco
import numpy as np
from numpy.typing import NDArray

from parkour_core.assets import resolve
from parkour_core.robots import G1

FOOT_BODIES = ("left_ankle_roll_link", "right_ankle_roll_link")
JOINT_NAMES: tuple[str, ...] = tuple(j.name for j in G1.joints)


def g1_spec() -> mujoco.MjSpec:
    spec = mujoco.MjSpec.from_file(str(resolve(G1.mjcf_asset)))
    spec.worldbody.add_geom(
        name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 0.05], rgba=[0.35, 0.4, 0.45, 1]
    )
    return spec


def add_box(spec: mujoco.MjSpec, name: str, center, half_size, yaw: float, rgba=None) -> None:
    """A box turned ``yaw`` about z, as a world geom of ``spec``."""
    extra = {} if rgba is None else {"rgba": rgba}
    spec.worldbody.add_geom(
        name=name, type=mujoco.mjtGeom.mjGEOM_BOX, pos=[float(x) for x in center], size=[float(x) for x in half_size],
        quat=[float(np.cos(yaw / 2)), 0.0, 0.0, float(np.sin(yaw / 2))], **extra,
    )  # fmt: skip


@cache
def g1_model() -> mujoco.MjModel:
    model = g1_spec().compile()
    # joint 0 is the floating base; the 29 hinges follow in the MJCF order, which must be the G1 spec's.
    names = [model.joint(i + 1).name for i in range(29)]
    if tuple(names) != JOINT_NAMES:
        raise RuntimeError(f"G1 MJCF joint order {names} differs from parkour_core.robots.G1")
    return model


def joint_limits() -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    m = g1_model()
    rng = m.jnt_range[1:30]
    return rng[:, 0].copy(), rng[:, 1].copy()


def forward_bodies(
    root_pos: NDArray[np.float64], root_quat: NDArray[np.float64], joints: NDArray[np.float64], bodies: tuple[str, ...]
) -> NDArray[np.float64]:
    """World positions (T, len(bodies), 3) of named bodies for every frame."""
    m = g1_model()
    d = mujoco.MjData(m)
    ids = [m.body(b).id for b in bodies]
    out = np.empty((len(root_pos), len(ids), 3))
    for t in range(len(root_pos)):
        d.qpos[:3] = root_pos[t]
        d.qpos[3:7] = root_quat[t]
        d.qpos[7:] = joints[t]
        mujoco.mj_kinematics(m, d)
        out[t] = d.xpos[ids]
    return out
