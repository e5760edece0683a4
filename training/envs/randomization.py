"""PHP's domain randomization on a MuJoCo model: friction, restitution, torso CoM, pushes.

Per episode (drawn at reset by :func:`draw_physics`, written into that environment's own MjModel copy
by :class:`ModelRandomizer`): friction, restitution as the contact's damping ratio, the torso's CoM.
During the episode, :class:`Pushes`: after a quiet time U[1, 5] s, a horizontal force of U[0, 30] N
in a random direction on the torso for U[1, 3] s (PHP's 1-3 s), then the next quiet time. The force
magnitudes and quiet times are ours.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import mujoco
import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from training.envs.physics import Physics

F = NDArray[np.float64]
Range = tuple[float, float]

FRICTION_CHOICES = ("kinetic", "static", "mean")


@dataclass(frozen=True)
class RandomizationConfig:
    static_friction: Range = (0.4, 1.3)
    kinetic_friction: Range = (0.4, 1.1)
    friction_used: str = "kinetic"
    restitution: Range = (0.0, 0.5)
    torso_com_offset_m: tuple[Range, Range, Range] = ((-0.025, 0.025), (-0.05, 0.05), (-0.05, 0.05))
    push_quiet_s: Range = (1.0, 5.0)
    push_duration_s: Range = (1.0, 3.0)
    push_force_n: Range = (0.0, 30.0)
    pushes: bool = True

    def __post_init__(self) -> None:
        if self.friction_used not in FRICTION_CHOICES:
            raise ValueError(f"friction_used must be one of {FRICTION_CHOICES}, got {self.friction_used!r}")
        ranges = {
            "static_friction": self.static_friction,
            "kinetic_friction": self.kinetic_friction,
            "restitution": self.restitution,
            "push_quiet_s": self.push_quiet_s,
            "push_duration_s": self.push_duration_s,
            "push_force_n": self.push_force_n,
            **{f"torso_com_offset_m[{i}]": r for i, r in enumerate(self.torso_com_offset_m)},
        }
        for name, (lo, hi) in ranges.items():
            if lo > hi:
                raise ValueError(f"randomization {name}: low {lo} > high {hi}")
        if self.restitution[0] < 0.0 or self.restitution[1] >= 1.0:
            raise ValueError(f"restitution must lie in [0, 1), got {self.restitution}")
        if self.push_duration_s[0] <= 0.0 or self.push_quiet_s[0] < 0.0:
            raise ValueError("push durations must be positive and quiet times non-negative")


NOMINAL = RandomizationConfig(
    static_friction=(1.0, 1.0),
    kinetic_friction=(1.0, 1.0),
    restitution=(0.0, 0.0),
    torso_com_offset_m=((0.0, 0.0), (0.0, 0.0), (0.0, 0.0)),
    pushes=False,
)
"""No randomization: friction 1, no bounce, nominal CoM, no pushes (tests, evaluation)."""


@dataclass(frozen=True)
class PhysicsDraw:
    """One episode's physics for each of N environments."""

    static_friction: F  # (N,)
    kinetic_friction: F  # (N,)
    friction: F  # (N,) what MuJoCo uses
    restitution: F  # (N,)
    dampratio: F  # (N,)
    torso_com_offset_m: F  # (N, 3)


def restitution_to_dampratio(e: F) -> F:
    """Damping ratio of a spring-damper contact whose bounce has restitution ``e`` (0 -> 1).

    A damped spring bounces back with ``e = exp(-zeta pi / sqrt(1 - zeta^2))``, so
    ``zeta = -ln e / sqrt(pi^2 + ln^2 e)`` (e = 0 -> zeta = 1, critically damped; e = 0.5 -> 0.22). It goes
    into ``solref = (timeconst, dampratio)``; the contact's impedance softens this, so the bounce is
    approximate; the time constant is kept.
    """
    e = np.asarray(e, dtype=np.float64)
    log_e = np.log(np.maximum(e, 1e-12))
    return np.where(e > 0.0, -log_e / np.sqrt(np.pi**2 + log_e**2), 1.0)


def draw_physics(cfg: RandomizationConfig, n: int, rng: np.random.Generator) -> PhysicsDraw:
    """One episode's draws for ``n`` environments.

    - Friction: PHP draws a static coefficient U[0.4, 1.3] and a kinetic one U[0.4, 1.1] (kinetic clipped
      to at most the static one, as PhysX materials require). MuJoCo has one sliding coefficient per geom
      and a soft contact model in which a loaded contact always creeps a little, so there is no separate
      sticking threshold to set: we use the kinetic draw as MuJoCo's sliding friction (the coefficient
      that bounds the tangential force while a foot slips, the case the policy must survive) and keep the
      static draw in the record. ``friction_used`` selects "static" or "mean" instead.
    - Restitution U[0, 0.5] becomes the contact's damping ratio (:func:`restitution_to_dampratio`).
    - Torso CoM offset: x U[-2.5, 2.5] cm, y and z U[-5, 5] cm (BeyondMimic's ranges: PHP names the
      randomization, not the numbers).
    """
    static = rng.uniform(*cfg.static_friction, size=n)
    kinetic = np.minimum(rng.uniform(*cfg.kinetic_friction, size=n), static)
    used = {"kinetic": kinetic, "static": static, "mean": 0.5 * (static + kinetic)}[cfg.friction_used]
    restitution = rng.uniform(*cfg.restitution, size=n)
    offset = np.stack([rng.uniform(lo, hi, size=n) for lo, hi in cfg.torso_com_offset_m], axis=-1)
    return PhysicsDraw(static, kinetic, used, restitution, restitution_to_dampratio(restitution), offset)


class ModelRandomizer:
    """Remembers a model's nominal contact and inertial values; writes draws relative to them."""

    def __init__(self, model: mujoco.MjModel, torso_body: str) -> None:
        self.contact_geoms = np.flatnonzero((model.geom_contype != 0) | (model.geom_conaffinity != 0))
        self.torso = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, torso_body)
        if self.torso < 0:
            raise ValueError(f"the model has no body {torso_body!r}")
        self.nominal_geom_solref = model.geom_solref.copy()
        self.nominal_pair_solref = model.pair_solref.copy()
        self.npair = model.npair
        self.nominal_ipos = model.body_ipos[self.torso].copy()

    def apply(self, physics: Physics, env: int, draw: PhysicsDraw, i: int) -> None:
        """Write draw ``i`` into environment ``env``'s model (``physics.set_model``: its own copy).

        The friction goes on every collision geom, robot and terrain alike (MuJoCo takes the larger of the
        two geoms' coefficients), and on the model's explicit contact pairs (the G1's feet against the
        floor); the CoM offset moves the torso's ``body_ipos``.
        """
        g, s = self.contact_geoms, physics
        s.set_model(env, "geom_friction", (g, 0), draw.friction[i])
        s.set_model(env, "geom_solref", (g, 0), self.nominal_geom_solref[g, 0])
        s.set_model(env, "geom_solref", (g, 1), draw.dampratio[i])
        if self.npair:
            s.set_model(env, "pair_friction", (slice(None), slice(0, 2)), draw.friction[i])
            s.set_model(env, "pair_solref", (slice(None), 0), self.nominal_pair_solref[:, 0])
            s.set_model(env, "pair_solref", (slice(None), 1), draw.dampratio[i])
        s.set_model(env, "body_ipos", self.torso, self.nominal_ipos + draw.torso_com_offset_m[i])


class Pushes:
    """Horizontal pushes on one body: quiet U[quiet] s, then a constant force for U[duration] s, repeat.

    ``forces(now_s)`` returns the (N, 3) world forces in effect at ``now_s`` and schedules the next
    push of every environment whose push has ended. Times are the environments' sim times.
    """

    def __init__(self, cfg: RandomizationConfig, n: int, rng: np.random.Generator) -> None:
        self.cfg, self.rng = cfg, rng
        self.start_s = np.full(n, np.inf)
        self.end_s = np.full(n, np.inf)
        self.force = np.zeros((n, 3))

    def reset(self, env_ids: NDArray[np.int64], now_s: F) -> None:
        self._schedule(np.asarray(env_ids), np.asarray(now_s, dtype=np.float64))

    def _schedule(self, ids: NDArray[np.int64], after_s: F) -> None:
        k = len(ids)
        if k == 0:
            return
        if not self.cfg.pushes:
            self.start_s[ids] = self.end_s[ids] = np.inf
            self.force[ids] = 0.0
            return
        self.start_s[ids] = after_s + self.rng.uniform(*self.cfg.push_quiet_s, size=k)
        self.end_s[ids] = self.start_s[ids] + self.rng.uniform(*self.cfg.push_duration_s, size=k)
        angle = self.rng.uniform(-np.pi, np.pi, size=k)
        magnitude = self.rng.uniform(*self.cfg.push_force_n, size=k)
        self.force[ids] = np.stack([magnitude * np.cos(angle), magnitude * np.sin(angle), np.zeros(k)], -1)

    def forces(self, now_s: F) -> F:
        now_s = np.asarray(now_s, dtype=np.float64)
        ended = np.flatnonzero(now_s >= self.end_s)
        if len(ended):
            self._schedule(ended, self.end_s[ended])
        active = (now_s >= self.start_s) & (now_s < self.end_s)
        return np.where(active[:, None], self.force, 0.0)
