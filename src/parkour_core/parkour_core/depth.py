"""Depth preprocessing shared by the RealSense node, the simulated camera and training.

One function, :func:`preprocess_depth`, turns a metric depth frame of any resolution into the
policy's image (58x87 float32 by default):

1. holes (0, negative or non-finite) become ``far_m``: a RealSense reports 0 where it has no
   stereo match, and training injects holes the same way, so both map identically;
2. clip to the trained range ``[near_m, far_m]``;
3. crop the border (fractions of the frame, so one setting fits every D435 resolution; the
   left band of a D435 depth frame has no stereo overlap);
4. resize by area averaging (each output pixel is the exact mean of the input area it covers,
   so it is anti-aliased and cheap: two small matrix products with weights cached per shape);
5. normalise to ``[-0.5, 0.5]``: ``(d - near) / (far - near) - 0.5``.

No Gaussian blur: at speed it erases thin obstacles and edges the policy needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

Float32Array = NDArray[np.float32]


D435_CROP = (0.0, 0.03, 0.05, 0.03)


@dataclass(frozen=True)
class DepthSpec:
    """What the policy was trained on; stored in the bundle manifest under ``depth``."""

    height: int = 58
    width: int = 87
    near_m: float = 0.0
    far_m: float = 2.0
    # top, bottom, left, right: fractions of the source frame removed before resizing. The default
    # removes the D435 border: the left band has no stereo overlap, the edges are noisy.
    crop: tuple[float, float, float, float] = D435_CROP

    def __post_init__(self) -> None:
        if self.height < 1 or self.width < 1:
            raise ValueError(f"depth size must be positive, got {self.height}x{self.width}")
        if not (0.0 <= self.near_m < self.far_m):
            raise ValueError(f"depth range must satisfy 0 <= near_m < far_m, got [{self.near_m}, {self.far_m}]")
        top, bottom, left, right = self.crop
        if min(self.crop) < 0.0 or top + bottom >= 1.0 or left + right >= 1.0:
            raise ValueError(f"depth crop {self.crop} must be >= 0 and leave part of the frame (top+bottom < 1)")

    def to_dict(self) -> dict[str, Any]:
        return {
            "height": self.height,
            "width": self.width,
            "near_m": self.near_m,
            "far_m": self.far_m,
            "crop": list(self.crop),
        }

    @staticmethod
    def from_dict(d: dict[str, Any]) -> DepthSpec:
        unknown = set(d) - {"height", "width", "near_m", "far_m", "crop"}
        if unknown:
            raise ValueError(f"depth: unknown keys {sorted(unknown)}")
        crop = tuple(float(x) for x in d.get("crop", D435_CROP))
        if len(crop) != 4:
            raise ValueError(f"depth.crop needs 4 values (top, bottom, left, right), got {len(crop)}")
        return DepthSpec(
            height=int(d.get("height", 58)),
            width=int(d.get("width", 87)),
            near_m=float(d.get("near_m", 0.0)),
            far_m=float(d.get("far_m", 2.0)),
            crop=(crop[0], crop[1], crop[2], crop[3]),
        )


@lru_cache(maxsize=32)
def area_weights(n_in: int, n_out: int) -> Float32Array:
    """(n_out, n_in) matrix whose row i averages the input span [i, i+1) * n_in / n_out."""
    if n_in < 1 or n_out < 1:
        raise ValueError(f"cannot resize {n_in} pixels to {n_out}")
    edges = np.arange(n_out + 1, dtype=np.float64) * (n_in / n_out)
    lo = edges[:-1, None]
    hi = edges[1:, None]
    pixel = np.arange(n_in, dtype=np.float64)[None, :]
    overlap = np.clip(np.minimum(hi, pixel + 1.0) - np.maximum(lo, pixel), 0.0, None)
    weights = (overlap / (n_in / n_out)).astype(np.float32)
    weights.flags.writeable = False  # cached and shared: nobody may change it
    return weights


def crop_pixels(shape: tuple[int, int], crop: tuple[float, float, float, float]) -> tuple[slice, slice]:
    """Rows and columns kept after removing the crop fractions (rounded to whole pixels)."""
    rows, cols = shape
    top, bottom, left, right = (round(f * n) for f, n in zip(crop, (rows, rows, cols, cols), strict=True))
    if rows - top - bottom < 1 or cols - left - right < 1:
        raise ValueError(f"crop {crop} leaves no pixels of a {rows}x{cols} frame")
    return slice(top, rows - bottom), slice(left, cols - right)


def preprocess_depth(
    depth: NDArray[Any], spec: DepthSpec, depth_scale_m: float = 1.0, out: Float32Array | None = None
) -> Float32Array:
    """Metric depth (H, W) -> normalised policy image (spec.height, spec.width), float32.

    ``depth`` may be z16 (uint16 with ``depth_scale_m`` metres per unit, 0.001 on a D435) or
    float metres (``depth_scale_m`` 1). The input is not modified.
    """
    if depth.ndim != 2:
        raise ValueError(f"depth must be a 2D image, got shape {depth.shape}")
    rows, cols = crop_pixels((depth.shape[0], depth.shape[1]), spec.crop)
    metres = depth[rows, cols].astype(np.float32)
    if depth_scale_m != 1.0:
        metres *= np.float32(depth_scale_m)
    holes = ~(metres > 0.0)  # catches 0, negatives and NaN
    metres[holes] = spec.far_m
    np.clip(metres, spec.near_m, spec.far_m, out=metres)  # +inf -> far
    if metres.shape != (spec.height, spec.width):
        rows_w, cols_w = area_weights(metres.shape[0], spec.height), area_weights(metres.shape[1], spec.width)
        metres = np.asarray(rows_w @ metres @ cols_w.T, dtype=np.float32)
    scale = np.float32(1.0 / (spec.far_m - spec.near_m))
    if out is None:
        out = np.empty((spec.height, spec.width), dtype=np.float32)
    np.subtract(metres, np.float32(spec.near_m), out=out)
    out *= scale
    out -= np.float32(0.5)
    return out


def denormalise_depth(image: Float32Array, spec: DepthSpec) -> Float32Array:
    """Policy image -> metres (for plots and checks); inverse of the normalisation step."""
    return ((image + np.float32(0.5)) * np.float32(spec.far_m - spec.near_m) + np.float32(spec.near_m)).astype(
        np.float32
    )
