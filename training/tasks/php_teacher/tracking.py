"""The CPU tracking environment's pieces for PHP's teacher, shared by the ``php_student`` task and the smoke chain.

PHP's teacher itself is the ``php_teacher`` task (:mod:`training.tasks.php_teacher.task`, rsl_rl's PPO
through the one runner). What is here: references, the env's config from the schema, the adaptive start
sampler's hook.

- **References**: `parkour mm synth` motions, cut to their first seconds (:func:`toy_references`):
  a short, easy task a few PPO iterations on two cores can make progress on. Each keeps its skill
  name, so the student can sample skills with equal probability.
- **Environment**: :class:`training.envs.tracking.TrackingEnv` configured from the typed
  :class:`~training.configs.schema.TrainConfig` (:func:`tracking_config`).
- **Adaptive start-state sampling** (PHP): start phases come from
  :class:`training.algorithms.sampling.AdaptiveStartSampler`, which is told after every finished
  episode where it started and whether it failed (terminated, not timed out).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from training.algorithms.sampling import AdaptiveStartSampler, SkillSampler
from training.configs.schema import RandomizationSection, TrainConfig
from training.envs.physics import warp_device
from training.envs.randomization import NOMINAL
from training.envs.randomization import RandomizationConfig as EnvRandomization
from training.envs.reference import Reference, load_reference
from training.envs.tracking import StartSampler, TrackingConfig, frames_from_phases

Log = Callable[[str], None]
Ints = NDArray[np.int64]


@dataclass(frozen=True)
class SkillReference:
    """A reference and the skill its motion was synthesized around (for equal skill sampling)."""

    skill: str
    reference: Reference


def cut_reference(reference: Reference, frames: int) -> Reference:
    """The first ``frames`` frames of a reference (its velocities were differenced on the whole motion)."""
    n = reference.num_frames
    frames = max(2, min(frames, n))
    values: dict[str, Any] = {}
    for f in dataclasses.fields(reference):
        value = getattr(reference, f.name)
        if isinstance(value, np.ndarray) and value.shape[:1] == (n,):
            value = value[:frames]
        values[f.name] = value
    return dataclasses.replace(reference, **values)


def toy_references(mm_dir: Path, seconds: float) -> list[SkillReference]:
    """Every ``motion_*.npz`` in ``mm_dir``, cut to its first ``seconds`` (the toy-sized task)."""
    paths = sorted(Path(mm_dir).glob("motion_*.npz"))
    if not paths:
        raise FileNotFoundError(f"{mm_dir} holds no motion_*.npz (run `parkour mm synth --out {mm_dir}` first)")
    out = []
    for path in paths:
        with np.load(path) as z:
            skill = str(z["skill"])
        ref = load_reference(path)
        out.append(SkillReference(skill, cut_reference(ref, round(seconds * ref.fps) + 1)))
    return out


def env_randomization(r: RandomizationSection) -> EnvRandomization:
    """The schema's domain randomization in the CPU env's terms (friction, restitution, CoM, pushes).

    The CPU env pushes with forces on the torso (its own magnitudes); the schema's velocity kicks,
    encoder biases and action delay have no counterpart there yet.
    """
    if not r.enabled:
        return NOMINAL
    x, y, z = r.base_com_offset_m
    return EnvRandomization(
        static_friction=(r.static_friction[0], r.static_friction[1]),
        kinetic_friction=(r.dynamic_friction[0], r.dynamic_friction[1]),
        restitution=(r.restitution[0], min(r.restitution[1], 0.99)),
        torso_com_offset_m=((-x, x), (-y, y), (-z, z)),
    )


def tracking_config(cfg: TrainConfig, seed: int, termination_m: float | None = None) -> TrackingConfig:
    """The tracking env's settings from a TrainConfig (reward and termination included)."""
    return TrackingConfig(
        num_envs=cfg.env.num_envs,
        physics_dt_s=cfg.env.physics_dt_s,
        decimation=cfg.env.decimation,
        termination_m=cfg.termination.tracking_error_m if termination_m is None else termination_m,
        randomization=env_randomization(cfg.randomization),
        rewards=cfg.reward,
        seed=seed,
        backend=cfg.env.backend,
        device=warp_device(cfg.run.device),
    )


def phase_start_sampler(
    sampler: AdaptiveStartSampler, references: Sequence[Reference], min_episode_frames: int
) -> StartSampler:
    """A TrackingEnv start sampler drawing start phases from ``sampler`` (adaptive or uniform)."""

    def draw(env_ids: NDArray[np.int64], ref_ids: NDArray[np.int64], rng: np.random.Generator) -> NDArray[np.int64]:
        phases = sampler.sample(len(env_ids), rng)
        return frames_from_phases(references, ref_ids, phases, min_episode_frames)

    return draw


def skill_ref_sampler(references: Sequence[SkillReference]):
    """TrackingEnv ref sampler: a skill uniformly (SkillSampler), then one of its references uniformly."""
    skills = sorted({r.skill for r in references})
    sampler = SkillSampler(skills)
    by_skill = [np.array([i for i, r in enumerate(references) if r.skill == s]) for s in skills]

    def draw(env_ids: Ints, rng: np.random.Generator) -> Ints:
        chosen = sampler.sample(len(env_ids), rng)
        return np.array([by_skill[s][rng.integers(len(by_skill[s]))] for s in chosen], dtype=np.int64)

    return draw
