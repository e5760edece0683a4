"""Observation terms as pure functions, and the builder that orders them from a manifest.

Training and the policy node call the same functions: the order, dims, scale and clip of
each term are data in the bundle manifest, never hidden in code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from parkour_core.command import DiscreteCommandSpec, discrete_command
from parkour_core.math3d import projected_gravity, projected_gravity_one

FloatArray = NDArray[np.float64]
_FLOAT64 = np.dtype(np.float64)


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


class ObservationWriter:
    """:func:`build_observation` for one robot, compiled once from the terms into preallocated buffers.

    Each term's raw value goes into its slice of one float64 staging vector; the whole vector is then
    scaled and clipped elementwise and cast into ``out`` (float32). That is the builder's float64
    arithmetic in the builder's order (``value * scale``, clip, cast), so every element is bit for bit
    the builder's, without its dozens of small numpy calls and arrays, which cost a control step more
    than the network does. Build it with :meth:`compile`, which declines what it does not cover.
    """

    def __init__(
        self, terms: Sequence[ObsTerm], default_q: FloatArray, command_spec: DiscreteCommandSpec | None,
        phases: int, out: NDArray[np.float32],
    ) -> None:  # fmt: skip
        size = observation_size(terms)
        self.out = out
        self.default_q = default_q
        self.command_spec = command_spec
        self._shapes = ((len(default_q),), (4,), (3,), (phases,))
        self._src = np.zeros(size)
        views: dict[str, list[FloatArray]] = {name: [] for name in TERMS}
        scale, low, high = np.ones(size), np.full(size, -np.inf), np.full(size, np.inf)
        start = 0
        for term in terms:
            part = slice(start, start + term.dims)
            views[term.name].append(self._src[part])
            scale[part] = term.scale
            if term.clip is not None:
                low[part], high[part] = -term.clip, term.clip
            start += term.dims
        self._dof_pos, self._dof_vel, self._actions = views["dof_pos"], views["dof_vel"], views["actions"]
        self._ang_vel, self._gravity = views["base_ang_vel"], views["projected_gravity"]
        self._lin, self._yaw = views["command_lin_vel"], views["command_ang_vel"]
        self._discrete = views["command_discrete"]
        self._sin, self._cos = views["sin_phase"], views["cos_phase"]
        self._scale = None if np.all(scale == 1.0) else scale  # x * 1.0 is x: skipped
        self._clip = None if np.all(np.isinf(high)) else (low, high)
        self._planar: tuple[float, float] | None = None  # the (vx, vy) behind _discrete_value
        self._discrete_value = (0.0, 0.0)

    @staticmethod
    def compile(
        terms: Sequence[ObsTerm], default_q: FloatArray, command_spec: DiscreteCommandSpec | None,
        phases: int, out: NDArray[np.float32],
    ) -> ObservationWriter | None:  # fmt: skip
        """The writer for these terms, or None where :func:`build_observation` must run instead: a term
        the writer does not know, or dims other than the robot's inputs give (the builder refuses those).

        ``phases``: the gait clock's phase count (0 without one); ``command_spec``: the discrete command's.
        """
        n = len(default_q)
        dims = {"actions": n, "base_ang_vel": 3, "command_ang_vel": 1, "command_discrete": 2 if command_spec else 0,
                "command_lin_vel": 2, "cos_phase": phases, "dof_pos": n, "dof_vel": n, "projected_gravity": 3,
                "sin_phase": phases}  # fmt: skip
        if out.shape != (observation_size(terms),) or any(dims.get(t.name) != t.dims for t in terms):
            return None
        return ObservationWriter(terms, default_q, command_spec, phases, out)

    def accepts(
        self, q: object, dq: object, quat_wxyz: object, gyro: object, command: object, last_action: object,
        gait_phase: object,
    ) -> bool:  # fmt: skip
        """Whether :meth:`write` takes these: float64 arrays of one robot's shapes (the arithmetic it
        repeats is the builder's on float64; anything else goes to the builder)."""
        joints, quat, three, phases = self._shapes
        f64 = _FLOAT64
        return (
            type(q) is np.ndarray and q.dtype == f64 and q.shape == joints
            and type(dq) is np.ndarray and dq.dtype == f64 and dq.shape == joints
            and type(last_action) is np.ndarray and last_action.dtype == f64 and last_action.shape == joints
            and type(quat_wxyz) is np.ndarray and quat_wxyz.dtype == f64 and quat_wxyz.shape == quat
            and type(gyro) is np.ndarray and gyro.dtype == f64 and gyro.shape == three
            and type(command) is np.ndarray and command.dtype == f64 and command.shape == three
            and type(gait_phase) is np.ndarray and gait_phase.dtype == f64 and gait_phase.shape == phases
        )  # fmt: skip

    def write(
        self, q: FloatArray, dq: FloatArray, quat_wxyz: FloatArray, gyro: FloatArray, command: FloatArray,
        last_action: FloatArray, gait_phase: FloatArray,
    ) -> NDArray[np.float32]:  # fmt: skip
        """``out``, filled from inputs that :meth:`accepts`."""
        for v in self._dof_pos:
            np.subtract(q, self.default_q, out=v)
        for v in self._dof_vel:
            np.copyto(v, dq)
        for v in self._actions:
            np.copyto(v, last_action)
        for v in self._ang_vel:
            np.copyto(v, gyro)
        if self._gravity:
            gx, gy, gz = projected_gravity_one(*quat_wxyz.tolist())
            for v in self._gravity:
                v[0], v[1], v[2] = gx, gy, gz
        vx, vy, yaw_rate = command.tolist()
        for v in self._lin:
            v[0], v[1] = vx, vy
        for v in self._yaw:
            v[0] = yaw_rate
        if self._discrete and self.command_spec is not None:
            if self._planar != (vx, vy):  # a pure function of (vx, vy): recomputed only when they change
                self._discrete_value = discrete_command(vx, vy, self.command_spec)
                self._planar = (vx, vy)
            for v in self._discrete:
                v[0], v[1] = self._discrete_value
        for v in self._sin:
            np.sin(gait_phase, out=v)
        for v in self._cos:
            np.cos(gait_phase, out=v)
        src = self._src
        if self._scale is not None:
            np.multiply(src, self._scale, out=src)
        if self._clip is not None:  # np.clip's own loop, max then min (NaN stays NaN), without its wrapper
            np.maximum(src, self._clip[0], out=src)
            np.minimum(src, self._clip[1], out=src)
        np.copyto(self.out, src)
        return self.out
