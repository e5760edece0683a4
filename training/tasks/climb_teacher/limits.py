"""What limits the climbing teacher at 35-40 cm boxes, measured in its own training env.

The teacher (deterministic: the actor's mean residual on the walking policy) runs in ``ClimbEnv`` with every
environment pinned to one box height. Each box attempt is followed through its step-up window: from the leading
foot 0.3 m before the box's near face until both feet are on the top or the episode ends. In the window it records
how often each leg joint's target sits at the supervisor's clamp and each leg motor's torque at its limit (2 %),
the largest PD target error, each foot's clearance over the near edge in swing (its sole above the box top where
it spans the face), its stubs (contacts with the face, and how far below the top), shins touching the box, the
stance knee, the approach speed, and the pelvis at the window's end (at the fall, for falls). The summary compares the
falls in the step up with the passes per height, to tell the candidate limits apart: the PD (targets clamped,
torques saturated), foot clearance (stubbing the edge) or the posture of the step up.

    python -m training.tasks.climb_teacher.limits --teacher teacher.pt --out limits.json --episodes 48
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import torch
from numpy.typing import NDArray

from parkour_core.provenance import git_commit
from training.envs.mujoco_cpu import FACE_NORMAL_Z, STATE_SPEC
from training.envs.privileged import terrain_height
from training.envs.randomization import RandomizationConfig
from training.tasks.climb_teacher import rewards
from training.tasks.climb_teacher.env import ANKLE_ABOVE_SOLE_M, ClimbConfig, ClimbEnv
from training.tasks.climb_teacher.policy import Teacher, load_teacher

F = NDArray[np.float64]
Bools = NDArray[np.bool_]

LEG = np.arange(12)  # the G1's leg joints: left 0-5, right 6-11
LEG_JOINTS = ("hip_pitch", "hip_roll", "hip_yaw", "knee", "ankle_pitch", "ankle_roll")
KNEE, HIP_PITCH = 3, 0  # within a leg
WINDOW_BEFORE_M = 0.3  # the window opens with the leading foot this far before the near face
AT_CLAMP_RAD = 1e-3
AT_LIMIT = 0.98  # torque within 2 % of its limit
BEFORE_END_STEPS = 10  # the pelvis 0.2 s before the window's end


def _tuples(value: Any) -> Any:
    """Lists to tuples, nested (the config dataclasses' field types); anything else as it is."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list | tuple) else value


def teacher_config(teacher: Teacher, height_m: float, num_envs: int, seed: int, jitter_m: float) -> ClimbConfig:
    """The training env's config saved with the teacher, every environment at ``height_m`` (no flat courses)."""
    env: dict[str, Any] = {k: _tuples(v) for k, v in teacher.env.items()}
    env["randomization"] = RandomizationConfig(**{k: _tuples(v) for k, v in env["randomization"].items()})
    env["weights"] = rewards.Weights(**env["weights"])
    env |= {"num_envs": num_envs, "nthread": 1, "seed": seed, "levels": (height_m,), "start_level": 0,
            "flat_fraction": 0.0, "height_jitter_m": jitter_m}  # fmt: skip
    return ClimbConfig(**env)


class MeasuredClimbEnv(ClimbEnv):
    """``ClimbEnv`` whose ``step`` also returns :meth:`measure` of the state it reached (for an episode that ended
    in it, measured before its reset) as ``info["measured"]``."""

    def __init__(self, cfg: ClimbConfig) -> None:
        self._ended: dict[str, Any] | None = None
        self._ending = False
        super().__init__(cfg)
        m = self.sim.base_model
        self.scratch = mujoco.MjData(m)
        self.foot_of_geom = np.full(m.ngeom, -1)
        for f, body in enumerate(self.feet):
            self.foot_of_geom[(m.geom_bodyid == body) & (m.geom_contype > 0)] = f
        self.foot_geoms = [np.flatnonzero(self.foot_of_geom == f) for f in range(2)]
        self.floor = np.flatnonzero(m.geom_type == mujoco.mjtGeom.mjGEOM_PLANE)
        self.shin_of_geom = np.full(m.ngeom, -1)
        for f, name in enumerate(("left_knee_link", "right_knee_link")):
            self.shin_of_geom[(m.geom_bodyid == m.body(name).id) & (m.geom_contype > 0)] = f
        self.other_robot = (m.geom_bodyid != 0) & (self.foot_of_geom < 0) & (self.shin_of_geom < 0)
        self.low, self.high = self.sim.target_bounds  # type: ignore[misc]

    def step(self, residual: F) -> tuple[dict[str, NDArray[np.float32]], F, Bools, dict[str, Any]]:
        self.pre_q, self.pre_dq = self.sim.q, self.sim.dq
        self.passed_before = self.passed.copy()
        self._ended, self._ending = None, True
        obs, reward, done, info = super().step(residual)
        self._ending = False
        live = np.flatnonzero(~done)
        parts = [(live, self.measure(live))] + ([(np.flatnonzero(done), self._ended)] if self._ended else [])
        measured = {k: np.zeros((self.num_envs, *v.shape[1:]), v.dtype) for k, v in parts[0][1].items()}
        for ids, values in parts:
            for k, v in values.items():
                measured[k][ids] = v
        return obs, reward, done, info | {"measured": measured}

    def reset(self, ids: NDArray[np.int64]) -> None:
        if self._ending:
            self._ended = self.measure(ids)
        super().reset(ids)

    def measure(self, ids: NDArray[np.int64]) -> dict[str, NDArray[Any]]:
        """Environments ``ids`` after the step, about the box each was attempting before it (the first not passed):
        feet (along past its near face, on its top, swing clearance over its edge, substeps touching its face),
        shins and other bodies touching it, leg targets at the clamp, PD demand over the torque limit and target
        error per physics step, the pelvis and the knees."""
        n, d = len(ids), self.sim.decimation
        k = np.minimum(np.argmax(~self.passed_before[ids], axis=1), np.maximum(self.num_boxes[ids] - 1, 0))
        center, half, yaw = self.box_center[ids, k], self.box_half[ids, k], self.box_yaw[ids, k]
        top = center[:, 2] + half[:, 2]
        axis = np.stack([np.cos(yaw), np.sin(yaw)], axis=-1)
        root_pos, root_quat = self.sim.root_pos[ids], self.sim.root_quat[ids]
        feet = self.sim.bodies(self.feet)[0][ids]
        feet_s = np.einsum("nfk,nk->nf", feet[..., :2] - center[:, None, :2], axis) + half[:, :1]
        feet_ground = terrain_height(self.box_center[ids], self.box_half[ids], self.box_yaw[ids], feet[..., :2])
        sole_above = feet[..., 2] - ANKLE_ABOVE_SOLE_M - feet_ground
        on_top = (feet_ground >= top[:, None] - 1e-6) & (sole_above < 0.03)
        base_s = np.einsum("nk,nk->n", root_pos[:, :2] - center[:, :2], axis) + half[:, 0]
        w, x, y, z = root_quat.T
        pitch = np.arcsin(np.clip(2.0 * (w * y - z * x), -1.0, 1.0))  # positive: leaning forward
        roll = np.arctan2(2.0 * (w * x + y * z), 1.0 - 2.0 * (x * x + y * y))
        under = terrain_height(self.box_center[ids], self.box_half[ids], self.box_yaw[ids], root_pos[:, None, :2])[:, 0]
        v = self.sim.root_lin_vel_w[ids]
        q = self.sim.q[ids]
        targets = self.default_q + self.action_scale * np.clip(self.last_action[ids], -self.action_clip,
                                                               self.action_clip)  # fmt: skip
        clamped = np.clip(targets, self.low, self.high)
        tl = targets[:, LEG]
        at_high = tl >= self.high[LEG] - AT_CLAMP_RAD
        at_clamp = (tl <= self.low[LEG] + AT_CLAMP_RAD) | at_high
        # The state each physics step's PD law read: the one before it.
        sub_q, sub_dq = np.zeros((n, d, q.shape[1])), np.zeros((n, d, q.shape[1]))
        sub_q[:, 0], sub_dq[:, 0] = self.pre_q[ids], self.pre_dq[ids]
        clearance, face_depth = np.full((n, 2), np.inf), np.full((n, 2), np.inf)
        face = np.zeros((n, 2), dtype=np.int64)
        shin = np.zeros((n, 2), dtype=np.int64)
        other = np.zeros(n, dtype=np.int64)
        for r, i in enumerate(ids):
            model, data = self.sim.models[i], self.scratch
            box_geom = self.sim.box_geoms[k[r]]
            for s in range(d):
                mujoco.mj_setState(model, data, self.sim.substep_states[i, s], STATE_SPEC)
                if s + 1 < d:
                    sub_q[r, s + 1] = data.qpos[self.sim.qpos_adr]
                    sub_dq[r, s + 1] = data.qvel[self.sim.qvel_adr]
                mujoco.mj_kinematics(model, data)
                mujoco.mj_collision(model, data)
                contact = self._contacts(data, box_geom, top[r])
                face[r] += contact["face"]
                face_depth[r] = np.minimum(face_depth[r], contact["face_depth"])
                shin[r] += contact["shin"]
                other[r] += contact["other"]
                for f in range(2):
                    if not (contact["floor"][f] or contact["top"][f]):
                        c = self._edge_clearance(model, data, f, center[r], half[r], axis[r], top[r])
                        clearance[r, f] = min(clearance[r, f], c)
        demand = self.kp * (clamped[:, None, :] - sub_q) - self.kd * sub_dq
        return {
            "box": k, "passed": self.passed[ids, k], "height": 2.0 * half[:, 2], "feet_s": feet_s, "on_top": on_top,
            "sole_above": sole_above, "sole_z": feet[..., 2] - ANKLE_ABOVE_SOLE_M,
            "base_s": base_s, "pitch": pitch, "roll": roll, "base_z_above_top": root_pos[:, 2] - top,
            "height_above": root_pos[:, 2] - under, "v_along": np.einsum("nk,nk->n", v[:, :2], axis),
            "knee": q[:, [KNEE, 6 + KNEE]], "at_clamp": at_clamp, "at_high": at_high,
            "demand": (np.abs(demand) / self.sim.tau_limit)[..., LEG],
            "err": np.abs(clamped[:, None, :] - sub_q)[..., LEG],
            "clearance": clearance, "face": face, "face_depth": face_depth, "shin": shin, "other": other,
        }  # fmt: skip

    def _contacts(self, data: mujoco.MjData, box_geom: int, top: float) -> dict[str, Any]:
        """Per foot: touching the floor, the box's top, its faces (0/1) and the lowest face contact below the top;
        shins on the box; other bodies on it."""
        out: dict[str, Any] = {key: np.zeros(2, dtype=np.int64) for key in ("floor", "top", "face", "shin")}
        out |= {"other": 0, "face_depth": np.full(2, np.inf)}
        n = data.ncon
        for (g1, g2), normal_z, z in zip(data.contact.geom[:n], data.contact.frame[:n, 2], data.contact.pos[:n, 2],
                                         strict=True):  # fmt: skip
            robot, world = (g2, g1) if g1 == box_geom or g1 in self.floor else (g1, g2)
            foot = self.foot_of_geom[robot]
            if world in self.floor and foot >= 0:
                out["floor"][foot] = 1
            elif world == box_geom and foot >= 0:
                on_face = abs(normal_z) < FACE_NORMAL_Z
                out["face" if on_face else "top"][foot] = 1
                if on_face:
                    out["face_depth"][foot] = min(out["face_depth"][foot], z - top)
            elif world == box_geom and self.shin_of_geom[robot] >= 0:
                out["shin"][self.shin_of_geom[robot]] = 1
            elif world == box_geom and self.other_robot[robot]:
                out["other"] = 1
        return out

    def _edge_clearance(self, model: mujoco.MjModel, data: mujoco.MjData, foot: int, center: F, half: F, axis: F,
                        top: float) -> float:  # fmt: skip
        """The foot's sole above the box top at the near face, over the sole capsules that span the face (inf: none)."""
        best = np.inf
        for g in self.foot_geoms[foot]:
            r, h = model.geom_size[g, 0], model.geom_size[g, 1]
            ends = data.geom_xpos[g] + np.outer([-h, h], data.geom_xmat[g].reshape(3, 3)[:, 2])
            s = (ends[:, :2] - center[:2]) @ axis + half[0]
            if s.min() <= 0.0 <= s.max():
                t = s[0] / (s[0] - s[1]) if s[0] != s[1] else 0.0
                z = ends[0, 2] + t * (ends[1, 2] - ends[0, 2])
            else:
                continue
            best = min(best, z - r - top)
        return best


@dataclass
class Attempt:
    """One box attempt, accumulated per left/right leg; :meth:`record` reports it per leading/trailing leg (the
    leading leg: the first whose foot or shin touches the box, or whose foot spans its near face)."""

    episode: int
    box: int
    height_m: float
    command_mps: float
    approach_mps: float
    lead: int = -1  # 0 left, 1 right; -1 until a foot reaches the box
    outcome: str = "open"  # pass, fall, timeout
    window_open: bool = True  # until both feet are on the top
    reached_top: bool = False
    fall_phase: str = ""  # step_up (window open) or after
    steps: int = 0
    substeps: int = 0
    clamp_steps: F = field(default_factory=lambda: np.zeros(12))
    clamp_high_steps: F = field(default_factory=lambda: np.zeros(12))
    limit_substeps: F = field(default_factory=lambda: np.zeros(12))
    max_demand: F = field(default_factory=lambda: np.zeros(12))
    max_err: F = field(default_factory=lambda: np.zeros(12))
    clearance: F = field(default_factory=lambda: np.full(2, np.inf))
    face_substeps: F = field(default_factory=lambda: np.zeros(2))
    face_depth: F = field(default_factory=lambda: np.full(2, np.inf))
    shin_substeps: F = field(default_factory=lambda: np.zeros(2))
    other_substeps: int = 0
    stance_knee_max: float = -np.inf
    knee_alone_on_top_max: F = field(default_factory=lambda: np.full(2, np.nan))  # the foot on top, the other not
    pitch_max: float = -np.inf
    pitch_min: float = np.inf
    last_feet_s: F = field(default_factory=lambda: np.zeros(2))
    feet_on_top_max: int = 0
    # the reach: the window's steps before the leading leg reaches the box (its swing)
    reach_substeps: int = 0
    reach_limit_substeps: F = field(default_factory=lambda: np.zeros(12))
    reach_clamp_steps: F = field(default_factory=lambda: np.zeros(12))
    reach_steps: int = 0
    reach_sole_max: F = field(default_factory=lambda: np.full(2, -np.inf))
    reach_feet_s: F = field(default_factory=lambda: np.full(2, np.nan))  # past the near face when the lead reached
    reach_base_s: float = np.nan
    end: dict[str, float] = field(default_factory=dict)
    before_end: deque[dict[str, float]] = field(default_factory=lambda: deque(maxlen=BEFORE_END_STEPS + 1))

    def add(self, m: dict[str, Any]) -> None:
        """One policy step of the window (``m``: one environment's ``measure``)."""
        self.steps += 1
        self.substeps += len(m["demand"])
        self.clamp_steps += m["at_clamp"]
        self.clamp_high_steps += m["at_high"]
        self.limit_substeps += (m["demand"] >= AT_LIMIT).sum(axis=0)
        self.max_demand = np.maximum(self.max_demand, m["demand"].max(axis=0))
        self.max_err = np.maximum(self.max_err, m["err"].max(axis=0))
        self.clearance = np.minimum(self.clearance, m["clearance"])
        self.face_substeps += m["face"]
        self.face_depth = np.minimum(self.face_depth, m["face_depth"])
        self.shin_substeps += m["shin"]
        self.other_substeps += int(m["other"])
        if self.lead < 0:
            self.reach_steps += 1
            self.reach_substeps += len(m["demand"])
            self.reach_limit_substeps += (m["demand"] >= AT_LIMIT).sum(axis=0)
            self.reach_clamp_steps += m["at_clamp"]
            self.reach_sole_max = np.maximum(self.reach_sole_max, m["sole_z"])
            reached = (m["face"] > 0) | (m["shin"] > 0) | m["on_top"] | np.isfinite(m["clearance"])
            if reached.any():
                self.lead = int(np.argmax(np.where(reached, m["feet_s"], -np.inf)))
                self.reach_feet_s, self.reach_base_s = m["feet_s"].copy(), float(m["base_s"])
        self.feet_on_top_max = max(self.feet_on_top_max, int(m["on_top"].sum()))
        stance = int(np.argmin(m["sole_above"]))
        self.stance_knee_max = max(self.stance_knee_max, float(m["knee"][stance]))
        for f in range(2):
            if m["on_top"][f] and not m["on_top"][1 - f]:
                self.knee_alone_on_top_max[f] = np.nanmax([self.knee_alone_on_top_max[f], m["knee"][f]])
        self.pitch_max, self.pitch_min = max(self.pitch_max, m["pitch"]), min(self.pitch_min, m["pitch"])
        self.last_feet_s = m["feet_s"]
        self.before_end.append(pelvis(m))

    def close_window(self, m: dict[str, Any]) -> None:
        self.window_open = False
        self.reached_top = bool(m["on_top"].all())
        self.end = pelvis(m) | {"feet_on_top": float(m["on_top"].sum())}

    def record(self) -> dict[str, Any]:
        lead = self.lead if self.lead >= 0 else int(np.argmax(self.last_feet_s))
        sides = (lead, 1 - lead)

        def legs(values: F) -> dict[str, float]:
            return {f"{side}_{name}": float(values[6 * f + j]) for side, f in zip(("lead", "trail"), sides, strict=True)
                    for j, name in enumerate(LEG_JOINTS)}  # fmt: skip

        def feet(values: F, scale: float = 1.0) -> dict[str, float | None]:
            return {side: float(values[f] * scale) if np.isfinite(values[f]) else None
                    for side, f in zip(("lead", "trail"), sides, strict=True)}  # fmt: skip

        steps, substeps = max(self.steps, 1), max(self.substeps, 1)
        reach_steps, reach_substeps = max(self.reach_steps, 1), max(self.reach_substeps, 1)
        return {
            "episode": self.episode, "box": self.box, "height_m": self.height_m, "lead": "LR"[lead],
            "outcome": self.outcome, "fall_phase": self.fall_phase, "reached_top": self.reached_top,
            "command_mps": self.command_mps, "approach_mps": self.approach_mps, "window_s": self.steps * 0.02,
            "clamp_frac": legs(self.clamp_steps / steps),
            "clamp_high_frac": legs(self.clamp_high_steps / steps),  # at the upper bound
            "torque_limit_frac": legs(self.limit_substeps / substeps),
            "max_demand_over_limit": legs(self.max_demand), "max_err_rad": legs(self.max_err),
            # min(over the edge in swing, against the face): negative is a stub
            "clearance_m": feet(np.minimum(self.clearance, self.face_depth)),
            "stub_depth_m": feet(self.face_depth),
            "stubbed": {k: v is not None and v > 0 for k, v in feet(self.face_substeps).items()},
            "lead_hit_face": bool(self.face_substeps[lead] + self.shin_substeps[lead] > 0),  # foot or shin
            "shin_on_box": {k: v is not None and v > 0 for k, v in feet(self.shin_substeps).items()},
            "face_contact_s": feet(self.face_substeps, 0.002), "shin_contact_s": feet(self.shin_substeps, 0.002),
            "other_body_contact_s": self.other_substeps * 0.002,
            "stance_knee_max_rad": self.stance_knee_max,
            "lead_knee_alone_on_top_max_rad": feet(self.knee_alone_on_top_max)["lead"],
            "a_foot_got_on_top": self.feet_on_top_max >= 1,
            "reach_s": self.reach_steps * 0.02, "reach_sole_max_m": feet(self.reach_sole_max),
            "reach_feet_past_face_m": feet(self.reach_feet_s), "reach_base_past_face_m": self.reach_base_s,
            "reach_torque_limit_frac": legs(self.reach_limit_substeps / reach_substeps),
            "reach_clamp_frac": legs(self.reach_clamp_steps / reach_steps),
            "pitch_max_deg": float(np.rad2deg(self.pitch_max)), "pitch_min_deg": float(np.rad2deg(self.pitch_min)),
            "end": self.end, "before_end": self.before_end[0] if self.before_end else {},
        }  # fmt: skip


def pelvis(m: dict[str, Any]) -> dict[str, float]:
    stance = int(np.argmin(m["sole_above"]))
    return {"pitch_deg": float(np.rad2deg(m["pitch"])), "roll_deg": float(np.rad2deg(m["roll"])),
            "z_above_top_m": float(m["base_z_above_top"]),
            "height_above_m": float(m["height_above"]), "v_along_mps": float(m["v_along"]),
            "stance_knee_rad": float(m["knee"][stance]), "base_past_face_m": float(m["base_s"])}  # fmt: skip


def run_height(teacher: Teacher, height_m: float, num_envs: int, episodes: int, seed: int,
               jitter_m: float) -> dict[str, Any]:  # fmt: skip
    """``episodes`` episodes (the first ``ceil(episodes / num_envs)`` of every environment: no bias to short ones)."""
    env = MeasuredClimbEnv(teacher_config(teacher, height_m, num_envs, seed, jitter_m))
    quota = -(-episodes // num_envs)
    done_episodes = np.zeros(num_envs, dtype=np.int64)
    current: list[Attempt | None] = [None] * num_envs
    attempts: list[Attempt] = []
    falls_elsewhere = {"before_a_box": 0, "after_passing_a_box": 0}
    obs = env.observe()
    while done_episodes.min() < quota:
        with torch.no_grad():
            residual = teacher.actor(torch.as_tensor(obs["policy"])).numpy().astype(np.float64)
        command = env.command[:, 0].copy()
        obs, _, done, info = env.step(residual)
        measured = info["measured"]
        failed = info["fell"] | info["left_lane"] | info["refused"]
        for i in range(num_envs):
            m = {k: v[i] for k, v in measured.items()}
            a, k = current[i], int(m["box"])
            if a is None and not env.passed_before[i, k] and m["feet_s"].max() >= -WINDOW_BEFORE_M:
                a = current[i] = Attempt(int(done_episodes[i]), k, float(m["height"]), float(command[i]),
                                         float(m["v_along"]))  # fmt: skip
                attempts.append(a)
            if a is not None:
                if a.window_open:
                    a.add(m)
                    if m["on_top"].all():
                        a.close_window(m)
                if m["passed"]:
                    a.outcome = "pass"
                elif done[i]:
                    a.outcome = "fall" if failed[i] else "timeout"
                    a.fall_phase = ("step_up" if a.window_open else "after") if failed[i] else ""
                if a.outcome != "open" and a.window_open:
                    a.close_window(m)
                if a.outcome != "open":
                    current[i] = None
            elif done[i] and failed[i] and done_episodes[i] < quota:
                falls_elsewhere["after_passing_a_box" if env.passed_before[i].any() else "before_a_box"] += 1
            if done[i]:
                done_episodes[i] += 1
    env.close()
    kept = [a.record() for a in attempts if a.episode < quota and a.outcome != "open"]
    return {"height_m": height_m, "episodes": quota * num_envs, "falls_not_at_a_box": falls_elsewhere,
            "attempts": kept, "summary": summarize(kept)}  # fmt: skip


GROUPS = {
    "pass": lambda r: r["outcome"] == "pass",
    "fall_step_up": lambda r: r["outcome"] == "fall" and r["fall_phase"] == "step_up",
    "fall_after": lambda r: r["outcome"] == "fall" and r["fall_phase"] == "after",
    "timeout": lambda r: r["outcome"] == "timeout",
}


def flatten(record: dict[str, Any], prefix: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    for k, v in record.items():
        if isinstance(v, dict):
            out |= flatten(v, f"{prefix}{k}.")
        elif isinstance(v, bool | int | float) or v is None:
            out[f"{prefix}{k}"] = np.nan if v is None else float(v)
    return out


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per group: its count and the mean of every numeric quantity (NaN-free values only)."""
    out: dict[str, Any] = {}
    for name, test in GROUPS.items():
        rows = [flatten(r) for r in records if test(r)]
        means: dict[str, float | None] = {}
        for key in rows[0] if rows else []:
            values = np.array([r.get(key, np.nan) for r in rows], dtype=np.float64)
            values = values[np.isfinite(values)]
            means[key] = float(values.mean()) if len(values) else None
        out[name] = {"count": len(rows), "mean": means}
    return out


ROWS = (  # (label, flattened key, format) of the summary tables
    ("approach speed (m/s)", "approach_mps", ".2f"),
    ("commanded speed (m/s)", "command_mps", ".2f"),
    ("window (s)", "window_s", ".2f"),
    ("lead foot: clearance over the edge (m)", "clearance_m.lead", "+.3f"),
    ("trail foot: clearance over the edge (m)", "clearance_m.trail", "+.3f"),
    ("lead foot stubbed the face (fraction)", "stubbed.lead", ".2f"),
    ("trail foot stubbed the face (fraction)", "stubbed.trail", ".2f"),
    ("lead shin touched the box (fraction)", "shin_on_box.lead", ".2f"),
    ("trail shin touched the box (fraction)", "shin_on_box.trail", ".2f"),
    ("lead foot or shin hit the face (fraction)", "lead_hit_face", ".2f"),
    ("a foot got on top in the window (fraction)", "a_foot_got_on_top", ".2f"),
    ("reach: s before a foot reaches the box", "reach_s", ".2f"),
    ("reach: lead sole (ankle - 4 cm) max above the floor (m)", "reach_sole_max_m.lead", ".3f"),
    ("reach: trail (stance) ankle past the near face (m)", "reach_feet_past_face_m.trail", "+.3f"),
    ("reach: pelvis past the near face (m)", "reach_base_past_face_m", "+.3f"),
    ("reach: lead hip pitch torque at limit (fraction)", "reach_torque_limit_frac.lead_hip_pitch", ".3f"),
    ("reach: lead knee torque at limit (fraction)", "reach_torque_limit_frac.lead_knee", ".3f"),
    ("reach: trail (stance) knee torque at limit (fraction)", "reach_torque_limit_frac.trail_knee", ".3f"),
    ("reach: lead ankle pitch target at clamp (fraction)", "reach_clamp_frac.lead_ankle_pitch", ".3f"),
    ("stance knee, max (rad)", "stance_knee_max_rad", ".2f"),
    ("lead knee alone on top, max (rad)", "lead_knee_alone_on_top_max_rad", ".2f"),
    ("pelvis pitch, max in window (deg)", "pitch_max_deg", "+.1f"),
    ("end: pelvis pitch (deg)", "end.pitch_deg", "+.1f"),
    ("end: pelvis roll (deg)", "end.roll_deg", "+.1f"),
    ("end: pelvis above box top (m)", "end.z_above_top_m", "+.2f"),
    ("end: pelvis past near face (m)", "end.base_past_face_m", "+.2f"),
    ("end: forward speed (m/s)", "end.v_along_mps", "+.2f"),
    ("end: feet on top", "end.feet_on_top", ".2f"),
    ("0.2 s before end: pelvis pitch (deg)", "before_end.pitch_deg", "+.1f"),
    ("0.2 s before end: pelvis above box top (m)", "before_end.z_above_top_m", "+.2f"),
)
JOINT_ROWS = (
    ("torque at limit (fraction of physics steps)", "torque_limit_frac"),
    ("target at clamp (fraction of policy steps)", "clamp_frac"),
    ("max PD demand / torque limit", "max_demand_over_limit"),
    ("max target - q (rad)", "max_err_rad"),
)
TABLE_JOINTS = ("hip_pitch", "knee", "ankle_pitch")  # always shown; others where a fraction passes 1 %


def table(height: dict[str, Any]) -> str:
    """The summary's table for one height: each group's means."""
    groups = height["summary"]
    means = {g: s["mean"] for g, s in groups.items()}
    head = " | ".join(f"{g} (n={s['count']})" for g, s in groups.items())
    lines = [f"| quantity | {head} |", "|---" * (len(groups) + 1) + "|"]

    def row(label: str, key: str, fmt: str) -> None:
        cells = [format(v, fmt) if (v := means[g].get(key)) is not None else "-" for g in groups]
        lines.append(f"| {label} | {' | '.join(cells)} |")

    for label, key, fmt in ROWS:
        row(label, key, fmt)
    for label, prefix in JOINT_ROWS:
        for side in ("lead", "trail"):
            for joint in LEG_JOINTS:
                key = f"{prefix}.{side}_{joint}"
                fraction = prefix.endswith("frac")
                values = [v for g in groups if (v := means[g].get(key)) is not None]
                if joint in TABLE_JOINTS or (fraction and values and max(values) > 0.01):
                    row(f"{label}: {side} {joint}", key, ".3f" if fraction else ".2f")
    return "\n".join(lines)


def pass_rates(records: list[dict[str, Any]], edges: tuple[float, ...] = (0.0, 0.6, 0.9, 1.2, 9.0)) -> str:
    """Pass rates by the speed along the box when the window opened, and with or without the lead leg hitting the
    face."""
    cells = []
    for lo, hi in itertools.pairwise(edges):
        rows = [r for r in records if lo <= r["approach_mps"] < hi]
        passed = sum(r["outcome"] == "pass" for r in rows)
        cells.append(f"{lo:.1f}-{hi:.1f} m/s: {passed}/{len(rows)}")
    hit = [r["outcome"] == "pass" for r in records if r["lead_hit_face"]]
    clean = [r["outcome"] == "pass" for r in records if not r["lead_hit_face"]]
    return (f"Passes by approach speed: {', '.join(cells)}. Passes when the lead foot or shin hit the face: "
            f"{sum(hit)}/{len(hit)}; when neither did: {sum(clean)}/{len(clean)}")  # fmt: skip


def markdown(result: dict[str, Any]) -> str:
    parts = ["# What limits the climbing teacher at 35-40 cm", "", f"Teacher: `{result['teacher']}`; "
             f"{result['args']}", ""]  # fmt: skip
    for h in result["heights"]:
        passes = h["summary"]["pass"]["count"]
        title = (f"## {h['height_m']:.2f} m: {len(h['attempts'])} box attempts, {passes} passed; "
                 f"{h['episodes']} episodes; falls away from a box: {h['falls_not_at_a_box']}")  # fmt: skip
        parts += [title, "", table(h), "", pass_rates(h["attempts"]), ""]
    return "\n".join(parts)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--teacher", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--episodes", type=int, default=48, help="per height")
    p.add_argument("--heights", type=float, nargs="+", default=[0.30, 0.35, 0.40])
    p.add_argument("--num-envs", type=int, default=16)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--summary", type=Path, help="the markdown tables (default: --out with .md)")
    p.add_argument("--jitter", type=float, default=0.0, help="box height jitter (m); the training env's is 0.025")
    args = p.parse_args()
    torch.set_num_threads(1)
    teacher = load_teacher(args.teacher)
    result: dict[str, Any] = {
        "command": "python -m training.tasks.climb_teacher.limits " + " ".join(sys.argv[1:]),
        "git_commit": git_commit(),
        "teacher": str(args.teacher), "args": {k: str(v) for k, v in vars(args).items()}, "heights": [],
    }  # fmt: skip
    for h in args.heights:
        t0 = time.time()
        r = run_height(teacher, h, args.num_envs, args.episodes, args.seed, args.jitter)
        r["wall_s"] = round(time.time() - t0, 1)
        counts = {g: s["count"] for g, s in r["summary"].items()}
        print(f"{h:.2f} m: {len(r['attempts'])} attempts {counts}, {r['falls_not_at_a_box']} falls elsewhere, "
              f"{r['wall_s']} s", flush=True)  # fmt: skip
        result["heights"].append(r)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1, allow_nan=True) + "\n")
        (args.summary or args.out.with_suffix(".md")).write_text(markdown(result) + "\n")


if __name__ == "__main__":
    main()
