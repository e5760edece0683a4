"""The batched MuJoCo-Warp backend: :class:`~training.envs.mujoco_cpu.BatchedMujoco`'s scene and interface on
``mujoco_warp``, every environment a world of one ``mjw.Data``, on a GPU (or warp's CPU device in tests).

The model is ``BatchedMujoco``'s own (the same scene, box slots, PD servos and options; the midphase is on,
as MuJoCo-Warp requires, and MuJoCo's own CPU results do not depend on it). The task's MDP stays on the host in
numpy: a control step uploads the targets, runs ``decimation`` physics steps on the device, refreshes positions,
velocities and sensors at the final state (as the CPU backend does) and downloads what the task reads in one
copy per field. Per-environment model fields (friction, masses, gains) are batched in the device model the first
time a task sets one. Installed by ``make setup`` (``requirements/training.txt``).
"""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np
from numpy.typing import NDArray

from parkour_core.robots import G1, RobotSpec
from training.envs.mujoco_cpu import (
    FACE_NORMAL_Z,
    PARKED_HALF,
    PARKED_POS,
    STATE_SPEC,
    BatchedMujoco,
    body_velocities,
    state_time_index,
)  # fmt: skip
from training.envs.reference import Terrain
from training.motion_matching import quat

F = NDArray[np.float64]

# Every model field an environment may set for itself (MuJoCo-Warp batches fields whose shape starts with "*").
BATCHABLE = ("geom_friction", "geom_solref", "pair_friction", "pair_solref", "body_mass", "body_ipos",
             "actuator_gainprm", "actuator_biasprm", "geom_pos", "geom_quat", "geom_size", "geom_aabb",
             "geom_rbound", "cam_pos", "cam_quat")  # fmt: skip
CONTACTS_PER_ENV = 64  # contact and constraint capacity per world
CONSTRAINTS_PER_ENV = 512


def gyro_is_base_rate(model: mujoco.MjModel) -> bool:
    """Whether the ``base_gyro`` sensor reads the free root body's angular velocity as MuJoCo holds it in
    ``qvel[3:6]`` (the body frame): its site is on that body and not turned against it. Then the reading is
    that state itself, without the sensor's float32 chain of rotations."""
    sensor = model.sensor("base_gyro")
    if int(sensor.objtype[0]) != mujoco.mjtObj.mjOBJ_SITE:
        return False
    site = int(sensor.objid[0])
    body = int(model.site_bodyid[site])
    free = model.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE and int(model.jnt_bodyid[0]) == body
    return bool(free and np.allclose(model.site_quat[site], [1.0, 0.0, 0.0, 0.0], atol=0.0))


class WarpMujoco:
    """N robots as N worlds of MuJoCo-Warp; the subset of ``BatchedMujoco``'s interface a task's MDP uses
    (:class:`training.envs.physics.Physics`). ``device``: warp's device name (``cuda:0``, ``cpu``)."""

    def __init__(self, num_envs: int, robot: RobotSpec = G1, device: str = "cpu", **scene: Any) -> None:
        """``scene``: ``BatchedMujoco``'s keyword arguments (physics step, decimation, gains, box slots, push body,
        robot model), which build the same model here."""
        import mujoco_warp as mjw
        import warp as wp

        self._wp, self._mjw = wp, mjw
        # The CPU backend builds the scene and holds the host copies: one environment, one thread.
        host = BatchedMujoco(1, robot, **{**scene, "nthread": 1})
        self._host = host
        self.robot, self.num_envs = robot, num_envs
        for name in ("decimation", "physics_dt_s", "joint_ids", "qpos_adr", "qvel_adr", "actuators", "tau_limit",
                     "kp", "kd", "gyro_adr", "nstate",
                     "box_geoms", "max_boxes", "base_body", "push_body", "robot_geom"):  # fmt: skip
            setattr(self, name, getattr(host, name))
        self.target_bounds: tuple[F, F] | None = None
        model = host.base_model
        self._gyro_is_base_rate = gyro_is_base_rate(model)
        model.opt.disableflags &= ~int(mujoco.mjtDisableBit.mjDSBL_MIDPHASE)
        self.base_model = model
        self.device = device
        self._scratch = mujoco.MjData(model)  # converts full-physics states to fields and back
        self._model_fields: dict[str, np.ndarray] = {}  # batched host copies of the fields set per environment
        self._model_edits: set[str] = set()  # fields edited since the last upload
        with wp.ScopedDevice(device):
            self._m = mjw.put_model(model)
            self._d = mjw.make_data(model, nworld=num_envs, nconmax=CONTACTS_PER_ENV, njmax=CONSTRAINTS_PER_ENV)
        self._state = {f: np.tile(getattr(self._scratch, f), (num_envs, 1)) for f in ("qpos", "qvel", "ctrl", "act")}
        self._state["time"] = np.zeros(num_envs)
        self._state["xfrc_applied"] = np.zeros((num_envs, model.nbody, 6))
        self.terrains: list[Terrain] = [Terrain() for _ in range(num_envs)]
        for i in range(num_envs):
            self.set_terrain(i, Terrain())
        self._substep_time_s = np.zeros((num_envs, self.decimation))
        self._camera: int | None = None
        self._dirty = True
        self._flush()

    def close(self) -> None:
        self._host.close()

    # -- state transfers ----------------------------------------------------------------------

    def _flush(self) -> None:
        """Upload the host's state and model edits, then refresh positions, velocities and sensors."""
        if not self._dirty:
            return
        with self._wp.ScopedDevice(self.device):
            for f, values in self._state.items():
                if values.size:
                    getattr(self._d, f).assign(values)
            if self._model_edits & {"geom_pos", "geom_quat"}:
                self._place_world_geoms()
            for f in self._model_edits:
                target, values = getattr(self._m, f), self._model_fields[f]
                whole = values.size != np.prod(target.shape)  # a vector element type: its components last
                target.assign(values.reshape(*target.shape, -1) if whole else values.reshape(target.shape))
            self._model_edits.clear()
            self._refresh()
        self._dirty = False

    def _place_world_geoms(self) -> None:
        """MuJoCo-Warp computes the world body's geom poses once, when the data is made: moved boxes get theirs
        here (the world frame is the body's; the robot's geoms are recomputed by the refresh that follows)."""
        w, x, y, z = np.moveaxis(self._model_fields["geom_quat"], -1, 0)  # mju_quat2Mat, over every geom
        rotation = np.stack([
            1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
            2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
            2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
        ], axis=-1)  # fmt: skip
        self._d.geom_xpos.assign(self._model_fields["geom_pos"])
        self._d.geom_xmat.assign(rotation.reshape(*rotation.shape[:2], 3, 3))

    def _refresh(self) -> None:
        mjw, m, d = self._mjw, self._m, self._d
        mjw.fwd_position(m, d)
        mjw.sensor_pos(m, d)
        mjw.fwd_velocity(m, d)
        mjw.sensor_vel(m, d)

    def _pull(self) -> None:
        for f, values in self._state.items():
            if values.size and f != "time":
                values[:] = getattr(self._d, f).numpy()

    # -- setup --------------------------------------------------------------------------------

    def set_state(
        self, i: int, root_pos: F, root_quat: F, q: F, root_lin_vel_w: F, root_ang_vel_w: F, dq: F, time_s: float = 0.0
    ) -> None:
        """``BatchedMujoco.set_state`` of environment ``i`` (the host's arithmetic, then copied)."""
        h = self._host
        h.set_state(0, root_pos, root_quat, q, root_lin_vel_w, root_ang_vel_w, dq, time_s)
        d = h.datas[0]
        for f in ("qpos", "qvel", "ctrl", "act"):
            self._state[f][i] = getattr(d, f)
        self._state["time"][i] = d.time
        self._dirty = True

    def refresh(self, i: int) -> None:
        self._dirty = True

    def set_terrain(self, i: int, terrain: Terrain) -> None:
        """``BatchedMujoco.set_terrain``: the boxes in environment ``i``'s slots. An unused slot is parked far below
        the floor and keeps its collision flags (MuJoCo-Warp shares them across worlds): the boxes are the world
        body's geoms, which never collide with each other or the floor, and nothing else reaches them."""
        if len(terrain) > self.max_boxes:
            raise ValueError(f"terrain has {len(terrain)} boxes; the backend has {self.max_boxes} slots")
        for k, g in enumerate(self.box_geoms):
            used = k < len(terrain)
            half = terrain.half_size[k] if used else np.array(PARKED_HALF)
            self.set_model(i, "geom_pos", g, terrain.center[k] if used else PARKED_POS)
            self.set_model(i, "geom_quat", g, quat.from_yaw(terrain.yaw[k]) if used else (1.0, 0.0, 0.0, 0.0))
            self.set_model(i, "geom_size", g, half)
            self.set_model(i, "geom_aabb", g, np.concatenate([np.zeros(3), half]))
            self.set_model(i, "geom_rbound", g, float(np.linalg.norm(half)))
        self.terrains[i] = terrain

    def set_model(self, i: int, field: str, index: Any, value: Any) -> None:
        """Environment ``i``'s ``<field>[index] = value`` in the device model (every :data:`BATCHABLE` field is
        one per world from the first such write)."""
        if field not in BATCHABLE:
            raise ValueError(f"model field {field!r} is not set per environment on mujoco_warp: {BATCHABLE}")
        if not self._model_fields:
            with self._wp.ScopedDevice(self.device):
                self._m = self._mjw.put_model(self.base_model, batch_sizes=dict.fromkeys(BATCHABLE, self.num_envs))
            for f in BATCHABLE:
                nominal = getattr(self.base_model, f)
                self._model_fields[f] = np.tile(nominal, (self.num_envs,) + (1,) * nominal.ndim)
        self._model_fields[field][i][index] = value
        self._model_edits.add(field)
        self._dirty = True

    def add_qvel(self, i: int, index: Any, dv: F) -> None:
        self._state["qvel"][i, index] += dv
        self._dirty = True

    # -- stepping -----------------------------------------------------------------------------

    def step(self, q_targets: F, push_force_w: F | None = None) -> None:
        if self.target_bounds is not None:
            q_targets = np.clip(q_targets, *self.target_bounds)
        self._state["ctrl"][:, self.actuators] = q_targets
        self._state["xfrc_applied"][:] = 0.0
        if push_force_w is not None:
            self._state["xfrc_applied"][:, self.push_body, 0:3] = push_force_w
        self._dirty = True
        self._flush()
        wp, mjw = self._wp, self._mjw
        with wp.ScopedDevice(self.device):
            for k in range(self.decimation):
                mjw.step(self._m, self._d)
                if self._camera is not None:  # the camera's pose after this step, for exposures within it
                    mjw.fwd_kinematics(self._m, self._d)
                    self._camera_pos[k] = self._torch(self._d.cam_xpos)[:, self._camera]
                    self._camera_rot[k] = self._torch(self._d.cam_xmat)[:, self._camera]
            self._refresh()
        self._pull()
        for k in range(self.decimation):  # the CPU's float64 clock (MuJoCo-Warp's is float32): the same times
            self._state["time"] += self.physics_dt_s
            self._substep_time_s[:, k] = self._state["time"]

    # -- the depth camera ---------------------------------------------------------------------

    def _torch(self, array: Any) -> Any:
        return self._wp.to_torch(array)

    def add_depth_camera(self, width: int, height: int) -> None:
        """``BatchedMujoco.add_depth_camera``: the same rays (``parkour_sim.depth_camera.ray_directions``) cast by
        MuJoCo-Warp in every world at once, from the camera's pose after each physics step (recorded as it steps)."""
        import torch

        from parkour_sim.depth_camera import (
            DEPTH_CAMERA_NAME,
            MAX_DEPTH_M,
            MIN_DEPTH_M,
            TERRAIN_GEOM_GROUP,
            geomgroup_mask,
            ray_directions,
        )  # fmt: skip

        wp, n, rays = self._wp, self.num_envs, width * height
        self._camera = mujoco.mj_name2id(self.base_model, mujoco.mjtObj.mjOBJ_CAMERA, DEPTH_CAMERA_NAME)
        self._image_shape, self._depth_range = (height, width), (MIN_DEPTH_M, MAX_DEPTH_M)
        with wp.ScopedDevice(self.device):
            torch_device = wp.device_to_torch(self.device)
            self._rays_cam = torch.as_tensor(ray_directions(width, height), dtype=torch.float32, device=torch_device)
            self._camera_pos = torch.zeros((self.decimation, n, 3), device=torch_device)
            self._camera_rot = torch.zeros((self.decimation, n, 3, 3), device=torch_device)
            mask = geomgroup_mask((TERRAIN_GEOM_GROUP,))[:6]  # MuJoCo-Warp's ray mask: the first six groups
            self._geomgroup = wp.types.vector(length=6, dtype=float)(*(float(g) for g in mask))
            self._bodyexclude = wp.full(rays, -1, dtype=int)
            self._ray_dist = wp.zeros((n, rays), dtype=float)
            self._ray_geom = wp.zeros((n, rays), dtype=int)
            self._ray_normal = wp.zeros((n, rays), dtype=wp.vec3)
        self._dirty = True

    @property
    def substep_time_s(self) -> F:
        return self._substep_time_s.copy()

    def depth_images(self, requests: list[tuple[int, int]]) -> list[NDArray[np.float32]]:
        """``BatchedMujoco.depth_images``: one cast of every world per physics step some request names."""
        wp, mjw = self._wp, self._mjw
        self._flush()
        images: dict[tuple[int, int], NDArray[np.float32]] = {}
        with wp.ScopedDevice(self.device):
            for k in sorted({k for _, k in requests}):
                if k < 0:
                    pos = self._torch(self._d.cam_xpos)[:, self._camera]
                    rot = self._torch(self._d.cam_xmat)[:, self._camera]
                else:
                    pos, rot = self._camera_pos[k], self._camera_rot[k]
                vec = (self._rays_cam @ rot.transpose(1, 2)).contiguous()  # (N, rays, 3): world-frame directions
                pnt = pos[:, None, :].expand_as(vec).contiguous()
                mjw.rays(self._m, self._d, wp.from_torch(pnt, dtype=wp.vec3), wp.from_torch(vec, dtype=wp.vec3),
                         self._geomgroup, True, self._bodyexclude, self._ray_dist, self._ray_geom,
                         self._ray_normal)  # fmt: skip
                worlds = sorted({i for i, kk in requests if kk == k})
                depth = self._ray_dist.numpy()[worlds]
                low, high = self._depth_range
                depth[~((depth >= low) & (depth <= high))] = 0.0  # misses and out of range read 0, as on the CPU
                for i, image in zip(worlds, depth, strict=True):
                    images[(i, k)] = image.astype(np.float32).reshape(self._image_shape)
        return [images[(i, k)] for i, k in requests]

    def follow(self, substep_states: F) -> None:
        """Take another backend's physics steps as this control step's (``substep_states``: [N, decimation,
        nstate], ``BatchedMujoco.substep_states``): the camera's pose after each, and the last as the state now.
        What a lockstep comparison of the two backends steps with."""
        index = state_time_index(self.base_model)
        for k in range(self.decimation):
            self.set_states(substep_states[:, k])
            self._flush()
            if self._camera is not None:
                self._camera_pos[k] = self._torch(self._d.cam_xpos)[:, self._camera]
                self._camera_rot[k] = self._torch(self._d.cam_xmat)[:, self._camera]
        self._substep_time_s[:] = substep_states[:, :, index]

    # -- reading ------------------------------------------------------------------------------

    def read(self, fields: dict[str, tuple[str, Any]]) -> dict[str, F]:
        self._flush()
        arrays = {f: getattr(self._d, f).numpy() for f in {f for f, _ in fields.values()}}
        return {name: arrays[f][(slice(None), *np.index_exp[index])].astype(np.float64)
                for name, (f, index) in fields.items()}  # fmt: skip

    @property
    def time_s(self) -> F:
        return self._state["time"].copy()

    @property
    def q(self) -> F:
        return self._state["qpos"][:, self.qpos_adr]

    @property
    def dq(self) -> F:
        return self._state["qvel"][:, self.qvel_adr]

    @property
    def root_pos(self) -> F:
        return self._state["qpos"][:, 0:3].copy()

    @property
    def root_quat(self) -> F:
        return self._state["qpos"][:, 3:7].copy()

    @property
    def root_lin_vel_w(self) -> F:
        return self._state["qvel"][:, 0:3].copy()

    @property
    def gyro(self) -> F:
        """The base gyro's reading: the free base's own angular velocity where the sensor's site turns with the
        base (``gyro_is_base_rate``), which is exact in float32; else MuJoCo-Warp's sensor."""
        if self._gyro_is_base_rate:
            return self._state["qvel"][:, 3:6].copy()
        return self.read({"gyro": ("sensordata", slice(self.gyro_adr, self.gyro_adr + 3))})["gyro"]

    def bodies(self, body_ids: NDArray[np.int64]) -> tuple[F, F, F, F]:
        """``BatchedMujoco.bodies``: world position, quaternion, linear and angular velocity, (N, B, .)."""
        ids = np.asarray(body_ids)
        r = self.read({"pos": ("xpos", ids), "rot": ("xquat", ids), "cvel": ("cvel", ids),
                       "com": ("subtree_com", self.base_model.body_rootid[ids])})  # fmt: skip
        return (r["pos"], r["rot"], *body_velocities(r["pos"], r["cvel"], r["com"]))

    def _contacts(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """The active contacts' geom pairs and worlds."""
        self._flush()
        count = int(self._d.nacon.numpy()[0])
        return self._d.contact.geom.numpy()[:count], self._d.contact.worldid.numpy()[:count]

    def box_face_contacts(self, body_ids: NDArray[np.int64]) -> F:
        """``BatchedMujoco.box_face_contacts``: how many of ``body_ids`` touch a box on a side face, per environment."""
        g, world = self._contacts()
        normal_z = self._d.contact.frame.numpy()[: len(g), 0, 2]
        body_of_geom = self.base_model.geom_bodyid
        is_box = np.isin(np.arange(self.base_model.ngeom), self.box_geoms)
        watched = np.isin(body_of_geom, body_ids)
        a, b = g.T
        touching = (is_box[a] & watched[b]) | (is_box[b] & watched[a])
        hit = touching & (np.abs(normal_z) < FACE_NORMAL_Z)
        bodies = body_of_geom[np.where(is_box[a], b, a)][hit]
        pairs = np.unique(np.stack([world[hit], bodies], axis=1), axis=0)
        return np.bincount(pairs[:, 0], minlength=self.num_envs).astype(np.float64)

    def self_contacts(self) -> F:
        """``BatchedMujoco.self_contacts``: contacts between two of the robot's own geoms, per environment."""
        g, world = self._contacts()
        mine = self.robot_geom[g[:, 0]] & self.robot_geom[g[:, 1]]
        return np.bincount(world[mine], minlength=self.num_envs).astype(np.float64)

    def contact_parts(self, geom_part: NDArray[np.int64], parts: int, other_geom: int) -> NDArray[np.bool_]:
        g, world = self._contacts()
        on_other = (g[:, 0] == other_geom) | (g[:, 1] == other_geom)
        part = geom_part[g[on_other].sum(axis=1) - other_geom]
        out = np.zeros((self.num_envs, parts), dtype=bool)
        keep = part >= 0
        out[world[on_other][keep], part[keep]] = True
        return out

    def get_states(self) -> F:
        """Full physics states in ``BatchedMujoco.get_states``' layout (``mjSTATE_FULLPHYSICS``)."""
        self._flush()
        s, m = self._scratch, self.base_model
        states = np.zeros((self.num_envs, self.nstate))
        for i in range(self.num_envs):
            for f in ("qpos", "qvel", "act"):
                getattr(s, f)[:] = self._state[f][i]
            s.time = self._state["time"][i]
            mujoco.mj_getState(m, s, states[i], STATE_SPEC)
        return states

    def set_states(self, states: F) -> None:
        s, m = self._scratch, self.base_model
        for i in range(self.num_envs):
            mujoco.mj_setState(m, s, states[i], STATE_SPEC)
            for f in ("qpos", "qvel", "act"):
                self._state[f][i] = getattr(s, f)
            self._state["time"][i] = s.time
        self._dirty = True
