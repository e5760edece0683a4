"""Observation terms as pure functions, and the builder that orders them from a manifest.

Training and the policy node call the same functions: the order, dims, scale and clip of
each term are data in the bundle manifest, never hidden in code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from parkour_core.math3d import projected_gravity

FloatArray = NDArray[np.float64]


@dataclass
class ObsInput:
    """Everything a term may read, in policy joint order, at one control tick."""

    q: FloatArray  # joint positions (rad)
    dq: FloatArray  # joint velocities (rad/s)
    quat_wxyz: FloatArray  # base orientation
    gyro: FloatArray  # base angular velocity in the body frame (rad/s)
    command: FloatArray  # (vx m/s, vy m/s, yaw rate rad/s) in the body frame
    last_action: FloatArray  # raw policy output of the previous tick
    default_q: FloatArray
    gait_phase: FloatArray  # per-foot phase (rad); empty when the policy has no gait clock
    # (speed level, heading sector) from parkour_core.command; empty when the policy has none
    command_discrete: FloatArray = field(default_factory=lambda: np.zeros(0))


@dataclass(frozen=True)
class ObsTerm:
    name: str
    dims: int
    scale: float = 1.0
    clip: float | None = None

    @staticmethod
    def from_dict(d: dict) -> ObsTerm:
        unknown = set(d) - {"name", "dims", "scale", "clip"}
        if unknown:
            raise ValueError(f"observation term {d.get('name')!r}: unknown keys {sorted(unknown)}")
        name = d["name"]
        if name not in TERMS:
            raise ValueError(f"observation term {name!r} is not known; known terms: {', '.join(sorted(TERMS))}")
        clip = d.get("clip")
        return ObsTerm(name, int(d["dims"]), float(d.get("scale", 1.0)), None if clip is None else float(clip))

    def to_dict(self) -> dict:
        return {"name": self.name, "dims": self.dims, "scale": self.scale, "clip": self.clip}


def _actions(o: ObsInput) -> FloatArray:
    return o.last_action


def _base_ang_vel(o: ObsInput) -> FloatArray:
    return o.gyro


def _projected_gravity(o: ObsInput) -> FloatArray:
    return projected_gravity(o.quat_wxyz)


def _command_lin_vel(o: ObsInput) -> FloatArray:
    return o.command[..., :2]


def _command_ang_vel(o: ObsInput) -> FloatArray:
    return o.command[..., 2:3]


def _command_discrete(o: ObsInput) -> FloatArray:
    return o.command_discrete


def _dof_pos(o: ObsInput) -> FloatArray:
    return o.q - o.default_q


def _dof_vel(o: ObsInput) -> FloatArray:
    return o.dq


def _sin_phase(o: ObsInput) -> FloatArray:
    return np.sin(o.gait_phase)


def _cos_phase(o: ObsInput) -> FloatArray:
    return np.cos(o.gait_phase)


TERMS: dict[str, Callable[[ObsInput], FloatArray]] = {
    "actions": _actions,
    "base_ang_vel": _base_ang_vel,
    "command_ang_vel": _command_ang_vel,
    "command_discrete": _command_discrete,
    "command_lin_vel": _command_lin_vel,
    "cos_phase": _cos_phase,
    "dof_pos": _dof_pos,
    "dof_vel": _dof_vel,
    "projected_gravity": _projected_gravity,
    "sin_phase": _sin_phase,
}


def observation_size(terms: Sequence[ObsTerm]) -> int:
    return sum(t.dims for t in terms)


def build_observation(
    terms: Sequence[ObsTerm], o: ObsInput, out: NDArray[np.float32] | None = None
) -> NDArray[np.float32]:
    """Concatenate the scaled (and clipped) terms in the given order into one float32 vector.

    Every field of ``o`` may carry the same leading batch axes (training builds all its environments
    at once): the result is then [..., size], each row what the row's own inputs give.
    """
    size = observation_size(terms)
    batch = np.shape(o.q)[:-1]
    if out is None:
        out = np.empty((*batch, size), dtype=np.float32)
    start = 0
    for term in terms:
        value = TERMS[term.name](o)
        if value.shape != (*batch, term.dims):
            raise ValueError(
                f"observation term {term.name!r} gave shape {value.shape}, the manifest says "
                f"({', '.join(map(str, (*batch, term.dims)))},)"
            )
        scaled = value * term.scale
        if term.clip is not None:
            scaled = np.clip(scaled, -term.clip, term.clip)
        out[..., start : start + term.dims] = scaled
        start += term.dims
    return out
