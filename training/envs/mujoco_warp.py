"""The batched MuJoCo-Warp backend: :class:`~training.envs.mujoco_cpu.BatchedMujoco`'s scene and interface on
``mujoco_warp``, every environment a world of one ``mjw.Data``, on a GPU (or warp's CPU device in tests).

The model is ``BatchedMujoco``'s own (the same scene, box slots, PD servos and options; the midphase is on,
as MuJoCo-Warp requires, and MuJoCo's own CPU results do not depend on it). The task's MDP stays on the host in
numpy: a control step uploads the targets, runs ``decimation`` physics steps on the device, refreshes positions,
velocities and sensors at the final state (as the CPU backend does) and downloads what the task reads in one
copy per field. Per-environment model fields (friction, masses, gains) are batched in the device model the first
time a task sets one. Installed by ``make warp`` (``requirements/warp.txt``); nothing else imports it.
"""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np
from numpy.typing import NDArray

from parkour_core.robots import G1, RobotSpec
from training.envs.mujoco_cpu import STATE_SPEC, BatchedMujoco

F = NDArray[np.float64]

# Every model field an environment may set for itself (MuJoCo-Warp batches fields whose shape starts with "*").
BATCHABLE = ("geom_friction", "body_mass", "body_ipos", "actuator_gainprm", "actuator_biasprm", "geom_pos",
             "geom_quat", "geom_size", "geom_aabb", "geom_rbound")  # fmt: skip
CONTACTS_PER_ENV = 64  # contact and constraint capacity per world
CONSTRAINTS_PER_ENV = 512


class WarpMujoco:
    """N robots as N worlds of MuJoCo-Warp; the subset of ``BatchedMujoco``'s interface a task's MDP uses
    (:class:`training.envs.physics.Physics`). ``device``: warp's device name (``cuda:0``, ``cpu``)."""

    def __init__(
        self,
        num_envs: int,
        robot: RobotSpec = G1,
        physics_dt_s: float = 0.002,
        decimation: int = 10,
        kp: F | None = None,
        kd: F | None = None,
        max_boxes: int = 1,
        push_body: str | None = None,
        robot_model: str = "",
        device: str = "cpu",
    ) -> None:
        import mujoco_warp as mjw
        import warp as wp

        self._wp, self._mjw = wp, mjw
        # The CPU backend builds the scene and holds the host copies: one environment, one thread.
        host = BatchedMujoco(1, robot, physics_dt_s, decimation, kp, kd, max_boxes, 1, push_body, robot_model)
        self._host = host
        self.robot, self.num_envs, self.decimation, self.physics_dt_s = robot, num_envs, decimation, physics_dt_s
        for name in ("joint_ids", "qpos_adr", "qvel_adr", "actuators", "tau_limit", "kp", "kd", "gyro_adr", "nstate",
                     "box_geoms", "base_body", "push_body"):  # fmt: skip
            setattr(self, name, getattr(host, name))
        self.target_bounds: tuple[F, F] | None = None
        model = host.base_model
        model.opt.disableflags &= ~int(mujoco.mjtDisableBit.mjDSBL_MIDPHASE)
        self.base_model = model
        self.device = device
        self._scratch = mujoco.MjData(model)  # converts full-physics states to fields and back
        self._model_fields: dict[str, np.ndarray] = {}  # batched host copies of the fields set per environment
        with wp.ScopedDevice(device):
            self._m = mjw.put_model(model)
            self._d = mjw.make_data(model, nworld=num_envs, nconmax=CONTACTS_PER_ENV, njmax=CONSTRAINTS_PER_ENV)
        self._state = {f: np.tile(getattr(self._scratch, f), (num_envs, 1)) for f in ("qpos", "qvel", "ctrl", "act")}
        self._state["time"] = np.zeros(num_envs)
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
            for f, values in self._model_fields.items():
                getattr(self._m, f).assign(values)
            self._refresh()
        self._dirty = False

    def _refresh(self) -> None:
        mjw, m, d = self._mjw, self._m, self._d
        mjw.fwd_position(m, d)
        mjw.sensor_pos(m, d)
        mjw.fwd_velocity(m, d)
        mjw.sensor_vel(m, d)

    def _pull(self) -> None:
        for f, values in self._state.items():
            if values.size:
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

    def set_model(self, i: int, field: str, index: Any, value: Any) -> None:
        """Environment ``i``'s ``<field>[index] = value`` in the device model (its field batched per world)."""
        if field not in self._model_fields:
            if field not in BATCHABLE:
                raise ValueError(f"model field {field!r} is not set per environment on mujoco_warp: {BATCHABLE}")
            with self._wp.ScopedDevice(self.device):
                self._m = self._mjw.put_model(self.base_model, batch_sizes={
                    **dict.fromkeys(self._model_fields, self.num_envs), field: self.num_envs})  # fmt: skip
            self._model_fields[field] = np.tile(getattr(self.base_model, field), (self.num_envs,) + (1,) * getattr(
                self.base_model, field).ndim)  # fmt: skip
        self._model_fields[field][i][index] = value
        self._dirty = True

    def add_qvel(self, i: int, index: Any, dv: F) -> None:
        self._state["qvel"][i, index] += dv
        self._dirty = True

    # -- stepping -----------------------------------------------------------------------------

    def step(self, q_targets: F, push_force_w: F | None = None) -> None:
        if push_force_w is not None:
            raise NotImplementedError("push forces are not wired on mujoco_warp; kick the velocity (add_qvel)")
        if self.target_bounds is not None:
            q_targets = np.clip(q_targets, *self.target_bounds)
        self._state["ctrl"][:, self.actuators] = q_targets
        self._dirty = True
        self._flush()
        wp, mjw = self._wp, self._mjw
        with wp.ScopedDevice(self.device):
            for _ in range(self.decimation):
                mjw.step(self._m, self._d)
            self._refresh()
        self._pull()

    # -- reading ------------------------------------------------------------------------------

    def read(self, fields: dict[str, tuple[str, Any]]) -> dict[str, F]:
        self._flush()
        arrays = {f: getattr(self._d, f).numpy() for f in {f for f, _ in fields.values()}}
        return {name: arrays[f][(slice(None), *np.index_exp[index])].astype(np.float64)
                for name, (f, index) in fields.items()}  # fmt: skip

    def contact_parts(self, geom_part: NDArray[np.int64], parts: int, other_geom: int) -> NDArray[np.bool_]:
        self._flush()
        count = int(self._d.nacon.numpy()[0])
        g = self._d.contact.geom.numpy()[:count]
        world = self._d.contact.worldid.numpy()[:count]
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
