"""The batched plain-MuJoCo backend (CPU): N robots, each with its own MjModel copy, stepped by ``mujoco.rollout``.

Each environment owns its copy of one model layout (every model has the same size, as
``mujoco.rollout`` requires), so domain randomization and terrain are per environment. The motors
are PD servos like the robot's (:func:`make_pd_servos`); the scene, its box slots and the stepping:
:class:`BatchedMujoco`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import mujoco
import numpy as np
from mujoco import rollout
from numpy.typing import NDArray

from parkour_core.robots import G1, RobotSpec
from parkour_sim.depth_camera import SimDepthCamera
from parkour_sim.scene import build_model
from training.envs.reference import Terrain
from training.motion_matching import quat

F = NDArray[np.float64]

MAX_BOXES = 8
BOX_PREFIX = "terrain_box"
PARKED_POS = (0.0, 0.0, -50.0)
PARKED_HALF = (0.01, 0.01, 0.01)
STATE_SPEC = mujoco.mjtState.mjSTATE_FULLPHYSICS
FACE_NORMAL_Z = 0.7  # a box contact whose normal's |z| is below this is on a side face, above it on the top
CONTROL_SPEC = mujoco.mjtState.mjSTATE_CTRL | mujoco.mjtState.mjSTATE_XFRC_APPLIED


def _slot_scene(max_boxes: int) -> dict:
    return {
        "boxes": [
            {"name": f"{BOX_PREFIX}{i}", "pos": list(PARKED_POS), "half_size": list(PARKED_HALF)}
            for i in range(max_boxes)
        ]
    }


def make_pd_servos(model: mujoco.MjModel, actuators: NDArray[np.int64], kp: F, kd: F, tau_limit: F) -> None:
    """Turn torque motors into ``tau = clamp(kp (ctrl - q) - kd dq, +-tau_limit)`` position servos.

    The robot's gains, evaluated at every physics step (500 Hz) in C: the law
    ``parkour_sim.physics.RobotSim`` applies in Python, with zero feed-forward torque and target velocity.
    """
    model.actuator_gaintype[actuators] = mujoco.mjtGain.mjGAIN_FIXED
    model.actuator_gainprm[actuators, :] = 0.0
    model.actuator_gainprm[actuators, 0] = kp
    model.actuator_biastype[actuators] = mujoco.mjtBias.mjBIAS_AFFINE
    model.actuator_biasprm[actuators, :] = 0.0
    model.actuator_biasprm[actuators, 1] = -kp
    model.actuator_biasprm[actuators, 2] = -kd
    model.actuator_ctrllimited[actuators] = 0
    model.actuator_forcelimited[actuators] = 1
    model.actuator_forcerange[actuators, 0] = -tau_limit
    model.actuator_forcerange[actuators, 1] = tau_limit


def state_time_index(model: mujoco.MjModel) -> int:
    """Where the time lies in a full-physics state vector."""
    d = mujoco.MjData(model)
    d.time = 12.5
    state = np.zeros(mujoco.mj_stateSize(model, STATE_SPEC))
    mujoco.mj_getState(model, d, state, STATE_SPEC)
    return int(np.flatnonzero(state == 12.5)[0])


def body_velocities(pos: F, cvel: F, root_com: F) -> tuple[F, F]:
    """Linear velocity of each body frame's origin and angular velocity, world frame, from MuJoCo's ``cvel``: the
    spatial velocity (angular, linear) at the subtree CoM of the body's root body (``root_com``)."""
    ang = cvel[..., 0:3]
    return cvel[..., 3:6] + np.cross(ang, pos - root_com), ang


class BatchedMujoco:
    """N robots on one model layout. Arrays are in the robot's joint order.

    - Scene: ``parkour_sim.scene.build_model`` (the robot's MJCF, the floor, the depth camera at the
      mount) with ``max_boxes`` box slots. An environment's terrain is written into its slots
      (:meth:`set_terrain`); unused slots are parked far below the floor with collisions off.
    - The policy runs every ``decimation`` physics steps (10: 50 Hz).
    - Stepping: one ``Rollout.rollout`` call per policy step over the batch (``nthread`` threads), then
      each environment's data is refreshed at the final state (positions, velocities and sensors; no
      constraint solve), so observations and rewards see the state after the step, not the one before
      its last integration. Every intermediate physics state is kept (:attr:`substep_states`): the
      student's camera exposes on its own clock from them.
    - The solver warm start is zero at the start of each policy step (``rollout`` does not return it),
      which keeps results independent of how the batch is split across threads.
    """

    def __init__(
        self,
        num_envs: int,
        robot: RobotSpec = G1,
        physics_dt_s: float = 0.002,
        decimation: int = 10,
        kp: F | None = None,
        kd: F | None = None,
        max_boxes: int = MAX_BOXES,
        nthread: int = 2,
        push_body: str | None = None,
        robot_model: str = "",
    ) -> None:
        if num_envs < 1 or decimation < 1 or nthread < 1:
            raise ValueError(f"num_envs, decimation and nthread must be >= 1 ({num_envs}, {decimation}, {nthread})")
        self.robot = robot
        self.num_envs = num_envs
        self.decimation = decimation
        self.physics_dt_s = physics_dt_s
        base = build_model(robot, _slot_scene(max_boxes), physics_dt_s, robot_model)
        self.joint_ids = np.array([base.joint(n).id for n in robot.joint_names])
        self.qpos_adr = base.jnt_qposadr[self.joint_ids]
        self.qvel_adr = base.jnt_dofadr[self.joint_ids]
        act_for_joint = {int(base.actuator_trnid[a, 0]): a for a in range(base.nu)}
        missing = [n for n, j in zip(robot.joint_names, self.joint_ids, strict=True) if int(j) not in act_for_joint]
        if missing:
            raise ValueError(f"the {robot.name} model has no actuator for joints {missing}")
        self.actuators = np.array([act_for_joint[int(j)] for j in self.joint_ids])
        self.tau_limit = np.abs(base.actuator_ctrlrange[self.actuators, 1]).copy()
        # (low, high) the PD targets are clamped to before they reach the motors, as the supervisor clamps
        # them on the robot; None: the targets go to the motors as given.
        self.target_bounds: tuple[F, F] | None = None
        self.kp = np.asarray(robot.kp_stand if kp is None else kp, dtype=np.float64)
        self.kd = np.asarray(robot.kd_stand if kd is None else kd, dtype=np.float64)
        make_pd_servos(base, self.actuators, self.kp, self.kd, self.tau_limit)
        # The world body's bounding-volume tree is built at compile time around the parked slots and
        # is not rebuilt when set_terrain moves them: the midphase would cull every robot-box contact
        # (feet walked through boxes). Without the midphase, geom AABBs (which set_terrain updates) decide.
        base.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_MIDPHASE
        # One robot is one constraint island, so island discovery only costs; the sparse Jacobian suits the
        # 29 joint friction-loss rows. Neither changes the steps (test_terrain_contact: RobotSim's, to 1e-6).
        base.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_ISLAND
        base.opt.jacobian = mujoco.mjtJacobian.mjJAC_SPARSE
        self.box_geoms = np.array([base.geom(f"{BOX_PREFIX}{i}").id for i in range(max_boxes)])
        # The slots compile unrotated, so MuJoCo marks their frame the world body's and would keep taking the
        # body's orientation for theirs: a yawed box set by set_terrain would collide and be seen unrotated.
        base.geom_sameframe[self.box_geoms] = mujoco.mjtSameFrame.mjSAMEFRAME_NONE
        self.is_box_geom = np.isin(np.arange(base.ngeom), self.box_geoms)
        self.max_boxes = max_boxes
        self._box_contype = int(base.geom_contype[self.box_geoms[0]])
        self._box_conaffinity = int(base.geom_conaffinity[self.box_geoms[0]])
        self.base_model = base
        self.models = [copy.copy(base) for _ in range(num_envs)]
        self.datas = [mujoco.MjData(m) for m in self.models]
        self.terrains: list[Terrain] = [Terrain() for _ in range(num_envs)]
        for i in range(num_envs):
            self.set_terrain(i, Terrain())
        self.base_body = base.body(robot.base_body).id
        self.push_body = base.body(push_body or robot.torso_body).id
        self.robot_geom = base.geom_bodyid != 0
        gyro = base.sensor("base_gyro")
        self.gyro_adr = int(gyro.adr[0])
        self.nstate = mujoco.mj_stateSize(base, STATE_SPEC)
        # (N, decimation, ctrl + xfrc_applied): rollout's unchecked path needs every step spelled out.
        self._control = np.zeros((num_envs, decimation, base.nu + 6 * base.nbody))
        self._nu = base.nu
        self._initial = np.zeros((num_envs, self.nstate))
        self._warmstart = np.zeros((num_envs, base.nv))
        self.substep_states = np.zeros((num_envs, decimation, self.nstate))
        self._rollout = rollout.Rollout(nthread=nthread)
        self._thread_data = [mujoco.MjData(base) for _ in range(nthread)]

    def close(self) -> None:
        self._rollout.close()

    # -- setup ------------------------------------------------------------------------------

    def set_terrain(self, i: int, terrain: Terrain) -> None:
        """Write ``terrain``'s boxes into environment ``i``'s slots (the rest parked, collisions off)."""
        if len(terrain) > self.max_boxes:
            raise ValueError(f"terrain has {len(terrain)} boxes; the backend has {self.max_boxes} slots")
        m = self.models[i]
        for k, g in enumerate(self.box_geoms):
            used = k < len(terrain)
            half = terrain.half_size[k] if used else np.array(PARKED_HALF)
            m.geom_pos[g] = terrain.center[k] if used else PARKED_POS
            m.geom_quat[g] = quat.from_yaw(terrain.yaw[k]) if used else (1.0, 0.0, 0.0, 0.0)
            m.geom_size[g] = half
            m.geom_aabb[g] = np.concatenate([np.zeros(3), half])
            m.geom_rbound[g] = float(np.linalg.norm(half))
            m.geom_contype[g] = self._box_contype if used else 0
            m.geom_conaffinity[g] = self._box_conaffinity if used else 0
        self.terrains[i] = terrain

    def set_state(
        self, i: int, root_pos: F, root_quat: F, q: F, root_lin_vel_w: F, root_ang_vel_w: F, dq: F, time_s: float = 0.0
    ) -> None:
        """Place robot ``i`` (world-frame root velocities; the free joint takes angular velocity in the body)."""
        m, d = self.models[i], self.datas[i]
        mujoco.mj_resetData(m, d)
        d.time = time_s
        d.qpos[0:3] = root_pos
        d.qpos[3:7] = quat.normalize(np.asarray(root_quat, dtype=np.float64))
        d.qpos[self.qpos_adr] = q
        d.qvel[0:3] = root_lin_vel_w
        d.qvel[3:6] = quat.rotate(quat.conj(d.qpos[3:7].copy()), np.asarray(root_ang_vel_w, dtype=np.float64))
        d.qvel[self.qvel_adr] = dq
        d.ctrl[self.actuators] = q
        self.refresh(i)

    def refresh(self, i: int) -> None:
        """Positions, contacts, velocities and sensors at the current state (no constraint solve)."""
        m, d = self.models[i], self.datas[i]
        mujoco.mj_fwdPosition(m, d)
        mujoco.mj_sensorPos(m, d)
        mujoco.mj_fwdVelocity(m, d)
        mujoco.mj_sensorVel(m, d)

    # -- stepping ---------------------------------------------------------------------------

    def step(self, q_targets: F, push_force_w: F | None = None) -> None:
        """One policy step of every environment: hold the targets (and push force) for ``decimation`` physics steps."""
        if self.target_bounds is not None:
            q_targets = np.clip(q_targets, *self.target_bounds)
        self._control[:, :, self.actuators] = np.asarray(q_targets)[:, None, :]
        self._control[:, :, self._nu :] = 0.0
        if push_force_w is not None:
            start = self._nu + 6 * self.push_body
            self._control[:, :, start : start + 3] = np.asarray(push_force_w)[:, None, :]
        for i, (m, d) in enumerate(zip(self.models, self.datas, strict=True)):
            mujoco.mj_getState(m, d, self._initial[i], STATE_SPEC)
        self._rollout.rollout(
            self.models,
            self._thread_data,
            self._initial,
            self._control,
            control_spec=CONTROL_SPEC,
            nstep=self.decimation,
            initial_warmstart=self._warmstart,
            state=self.substep_states,
            skip_checks=True,
        )
        for i, (m, d) in enumerate(zip(self.models, self.datas, strict=True)):
            mujoco.mj_setState(m, d, self.substep_states[i, -1], STATE_SPEC)
            d.ctrl[self.actuators] = q_targets[i]
            self.refresh(i)

    def load_substep(self, i: int, k: int, data: mujoco.MjData) -> None:
        """Environment ``i``'s state after physics step ``k`` of the last step into ``data`` (kinematics only)."""
        mujoco.mj_setState(self.models[i], data, self.substep_states[i, k], STATE_SPEC)
        mujoco.mj_kinematics(self.models[i], data)
        mujoco.mj_camlight(self.models[i], data)

    # -- reading ----------------------------------------------------------------------------

    def _stack(self, get: Callable[[mujoco.MjData], F]) -> F:
        return np.stack([get(d) for d in self.datas])

    @property
    def time_s(self) -> F:
        return np.array([d.time for d in self.datas])

    @property
    def q(self) -> F:
        return self._stack(lambda d: d.qpos[self.qpos_adr])

    @property
    def dq(self) -> F:
        return self._stack(lambda d: d.qvel[self.qvel_adr])

    @property
    def root_pos(self) -> F:
        return self._stack(lambda d: d.qpos[0:3])

    @property
    def root_quat(self) -> F:
        return self._stack(lambda d: d.qpos[3:7])

    @property
    def root_lin_vel_w(self) -> F:
        return self._stack(lambda d: d.qvel[0:3])

    @property
    def gyro(self) -> F:
        """The IMU's angular velocity (body frame), as the robot reports it."""
        return self._stack(lambda d: d.sensordata[self.gyro_adr : self.gyro_adr + 3])

    def bodies(self, body_ids: NDArray[np.int64]) -> tuple[F, F, F, F]:
        """World position, quaternion, linear velocity (of the body frame's origin) and angular velocity, (N, B, .)."""
        ids = np.asarray(body_ids)
        pos = self._stack(lambda d: d.xpos[ids])
        rot = self._stack(lambda d: d.xquat[ids])
        cvel = self._stack(lambda d: d.cvel[ids])
        com = self._stack(lambda d: d.subtree_com[self.base_model.body_rootid[ids]])
        return (pos, rot, *body_velocities(pos, cvel, com))

    def box_face_contacts(self, body_ids: NDArray[np.int64]) -> F:
        """How many of ``body_ids`` touch a box on a side face (the contact normal within
        :data:`FACE_NORMAL_Z` of horizontal), per environment: a foot or shin hitting a box's face."""
        body_of_geom, is_box = self.base_model.geom_bodyid, self.is_box_geom
        watched = np.isin(body_of_geom, body_ids)
        out = np.zeros(self.num_envs)
        for i, d in enumerate(self.datas):
            contact = d.contact  # its arrays hold the d.ncon active contacts
            a, b = contact.geom.T
            touching = (is_box[a] & watched[b]) | (is_box[b] & watched[a])
            if touching.any():  # most steps: no watched body on a box, so the normals are not read
                hit = touching & (np.abs(contact.frame[:, 2]) < FACE_NORMAL_Z)
                out[i] = len(np.unique(body_of_geom[np.where(is_box[a], b, a)[hit]]))
        return out

    # -- the backend-neutral reads and writes (training.envs.physics.Physics) ------------------

    def read(self, fields: dict[str, tuple[str, Any]]) -> dict[str, F]:
        """``name -> (MjData field, index)``: each field's indexed part of every environment, stacked [N, ...]."""
        out = {name: np.empty((self.num_envs, *np.shape(getattr(self.datas[0], f)[index])))
               for name, (f, index) in fields.items()}  # fmt: skip
        for i, d in enumerate(self.datas):
            for name, (f, index) in fields.items():
                out[name][i] = getattr(d, f)[index]
        return out

    def contact_parts(self, geom_part: NDArray[np.int64], parts: int, other_geom: int) -> NDArray[np.bool_]:
        """[N, parts]: whether a geom of each part (``geom_part``: each geom's part, -1 none) touches ``other_geom``."""
        out = np.zeros((self.num_envs, parts), dtype=bool)
        for i, d in enumerate(self.datas):
            if d.ncon:
                g = d.contact.geom[: d.ncon]
                on_other = g[(g[:, 0] == other_geom) | (g[:, 1] == other_geom)]
                part = geom_part[on_other.sum(axis=1) - other_geom]
                out[i] = np.bincount(part[part >= 0], minlength=parts)[:parts] > 0
        return out

    def add_qvel(self, i: int, index: Any, dv: F) -> None:
        """Add ``dv`` to environment ``i``'s ``qvel[index]`` (a push; the next step integrates from it)."""
        self.datas[i].qvel[index] += dv

    def set_model(self, i: int, field: str, index: Any, value: Any) -> None:
        """Environment ``i``'s ``MjModel.<field>[index] = value`` (per-environment physics)."""
        getattr(self.models[i], field)[index] = value

    def get_states(self) -> F:
        """Every environment's full physics state (``mjSTATE_FULLPHYSICS``), [N, nstate]."""
        states = np.zeros((self.num_envs, self.nstate))
        for i, (m, d) in enumerate(zip(self.models, self.datas, strict=True)):
            mujoco.mj_getState(m, d, states[i], STATE_SPEC)
        return states

    def set_states(self, states: F) -> None:
        """:meth:`get_states`' inverse; positions, velocities and sensors refreshed."""
        for i, (m, d) in enumerate(zip(self.models, self.datas, strict=True)):
            mujoco.mj_setState(m, d, states[i], STATE_SPEC)
            self.refresh(i)

    # -- the depth camera --------------------------------------------------------------------

    def add_depth_camera(self, width: int, height: int) -> None:
        """Each environment's z-depth images of the robot's depth camera (``parkour_sim.depth_camera``, ray-cast at
        the terrain), through its own model (its camera mount, its boxes)."""
        self._depth_cameras = [SimDepthCamera(m, width, height, "raycast") for m in self.models]
        self._depth_data = mujoco.MjData(self.base_model)
        self._time_index = state_time_index(self.base_model)

    @property
    def substep_time_s(self) -> F:
        """[N, decimation]: each environment's time after each physics step of the last control step."""
        return self.substep_states[:, :, self._time_index]

    def depth_images(self, requests: list[tuple[int, int]]) -> list[NDArray[np.float32]]:
        """The depth image of each ``(environment, physics step)``: after that step of the last control step, or
        at the current state for step -1. 0 where no return lies within range."""
        images, data = [], self._depth_data
        for i, k in requests:
            if k < 0:
                state = np.zeros(self.nstate)
                mujoco.mj_getState(self.models[i], self.datas[i], state, STATE_SPEC)
                mujoco.mj_setState(self.models[i], data, state, STATE_SPEC)
                mujoco.mj_kinematics(self.models[i], data)
                mujoco.mj_camlight(self.models[i], data)
            else:
                self.load_substep(i, k, data)
            images.append(self._depth_cameras[i].capture(data))
        return images

    def self_contacts(self) -> F:
        """Number of contacts between two of the robot's own geoms, per environment."""
        out = np.zeros(self.num_envs)
        for i, d in enumerate(self.datas):
            if d.ncon:
                g = d.contact.geom[: d.ncon]
                out[i] = np.count_nonzero(self.robot_geom[g[:, 0]] & self.robot_geom[g[:, 1]])
        return out
