"""The 27-D motion-matching feature of a frame, in the character's frame (yaw-only, at the root).

Layout (``FEATURE_LAYOUT``):
- 0:12  future root trajectory at +0.33, +0.67, +1.0 s: for each, planar position (x, y) and
        heading direction (cos, sin) relative to the current frame;
- 12:18 left and right foot (ankle roll link) positions relative to the root;
- 18:24 left and right foot velocities;
- 24:27 root velocity.
Normalisation is per dimension (z-score over the database) times a per-group weight, so that the
groups can be balanced without depending on units.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from training.motion_matching import quat

F = NDArray[np.float64]

HORIZONS_S = (0.33, 0.67, 1.0)
DIMS = 27
FEATURE_LAYOUT: dict[str, slice] = {
    "trajectory_position": slice(0, 12),  # interleaved with heading, see trajectory_slices
    "foot_position": slice(12, 18),
    "foot_velocity": slice(18, 24),
    "root_velocity": slice(24, 27),
}
DEFAULT_WEIGHTS: dict[str, float] = {
    "trajectory_position": 1.0,
    "trajectory_heading": 1.0,
    "foot_position": 0.75,
    "foot_velocity": 1.0,
    "root_velocity": 1.0,
}


def horizon_frames(fps: float) -> list[int]:
    return [round(h * fps) for h in HORIZONS_S]


def trajectory_dims() -> tuple[list[int], list[int]]:
    """Indices of the trajectory's (x, y) dims and (cos, sin) dims."""
    pos = [4 * k + i for k in range(len(HORIZONS_S)) for i in (0, 1)]
    head = [4 * k + i for k in range(len(HORIZONS_S)) for i in (2, 3)]
    return pos, head


def to_character(vec: F, heading: F) -> F:
    """Rotate world vectors (..., 3) or (..., 2) into the yaw-only frame of ``heading`` (...)."""
    c, s = np.cos(heading), np.sin(heading)
    x, y = vec[..., 0], vec[..., 1]
    planar = np.stack([c * x + s * y, -s * x + c * y], axis=-1)
    return np.concatenate([planar, vec[..., 2:]], axis=-1)


def trajectory_feature(rel_pos: F, rel_heading: F) -> F:
    """Pack K future (x, y) positions and K relative headings into 4K dims: x, y, cos, sin per horizon."""
    out = np.empty((*rel_pos.shape[:-2], 4 * rel_pos.shape[-2]))
    out[..., 0::4] = rel_pos[..., 0]
    out[..., 1::4] = rel_pos[..., 1]
    out[..., 2::4] = np.cos(rel_heading)
    out[..., 3::4] = np.sin(rel_heading)
    return out


def _time_derivative(x: F, fps: float) -> F:
    """Central differences inside the clip, one-sided at its ends (no wrap into a neighbouring clip)."""
    out = np.zeros_like(x)
    if len(x) < 2:
        return out
    out[1:-1] = (x[2:] - x[:-2]) * (fps / 2.0)
    out[0] = (x[1] - x[0]) * fps
    out[-1] = (x[-1] - x[-2]) * fps
    return out


def clip_features(root_pos: F, root_quat: F, feet_pos: F, fps: float) -> tuple[F, NDArray[np.bool_]]:
    """Raw (unnormalised) features (T, 27) of one clip, and which frames have a full 1 s future."""
    n = len(root_pos)
    heading = quat.yaw(root_quat)
    steps = horizon_frames(fps)
    idx = np.arange(n)
    rel_pos = np.empty((n, len(steps), 2))
    rel_head = np.empty((n, len(steps)))
    for k, s in enumerate(steps):
        j = np.minimum(idx + s, n - 1)
        rel_pos[:, k] = to_character(root_pos[j, :2] - root_pos[:, :2], heading)
        rel_head[:, k] = quat.wrap(heading[j] - heading)
    feats = np.empty((n, DIMS))
    feats[:, :12] = trajectory_feature(rel_pos, rel_head)
    feet_rel = to_character(feet_pos - root_pos[:, None, :], heading[:, None])
    feats[:, 12:18] = feet_rel.reshape(n, 6)
    feet_vel = _time_derivative(feet_pos, fps)
    feats[:, 18:24] = to_character(feet_vel, heading[:, None]).reshape(n, 6)
    root_vel = _time_derivative(root_pos, fps)
    feats[:, 24:27] = to_character(root_vel, heading)
    valid = idx + steps[-1] <= n - 1
    return feats, valid


@dataclass(frozen=True)
class Normalizer:
    mean: F
    scale: F  # per-dimension weight / std

    def __call__(self, x: F) -> F:
        return (x - self.mean) * self.scale


def weight_vector(weights: dict[str, float] | None = None) -> F:
    w = dict(DEFAULT_WEIGHTS, **(weights or {}))
    vec = np.empty(DIMS)
    pos, head = trajectory_dims()
    vec[pos] = w["trajectory_position"]
    vec[head] = w["trajectory_heading"]
    for group in ("foot_position", "foot_velocity", "root_velocity"):
        vec[FEATURE_LAYOUT[group]] = w[group]
    return vec


def fit_normalizer(x: F, weights: dict[str, float] | None = None, std_floor: float = 1e-3) -> Normalizer:
    """Per-dimension z-score over the rows of x, times the group weights."""
    mean = x.mean(axis=0)
    std = np.maximum(x.std(axis=0), std_floor)
    return Normalizer(mean, weight_vector(weights) / std)
