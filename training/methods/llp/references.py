"""LLP's toy task: each synthesized motion cut around its skill, so approach, skill and exit all appear.

PHP's smoke cuts each motion to its first seconds (``training.pipeline.teacher.toy_references``), which
often ends before the skill starts. LLP trains and scores the transitions, so here each motion is cut
from ``before_s`` ahead of the skill's first frame to ``after_s`` past its last, and keeps its
per-frame phase (0 approach, 1 skill, 2 exit: the transition prior's group) and the skill's frames in
the cut's own numbering (the entry/exit windows of the evaluation).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from training.envs.reference import Reference, load_reference
from training.pipeline.teacher import SkillReference


@dataclass(frozen=True)
class LLPReference:
    skill_reference: SkillReference
    phase: np.ndarray  # (T,) int: 0 approach, 1 skill, 2 exit
    entry_frame: int  # the skill's first frame in this cut
    end_frame: int  # the skill's last frame in this cut

    @property
    def reference(self) -> Reference:
        return self.skill_reference.reference


def slice_reference(reference: Reference, start: int, stop: int) -> Reference:
    """Frames ``[start, stop)`` of a reference (velocities stay those differenced on the whole motion)."""
    n = reference.num_frames
    start, stop = max(0, start), min(n, stop)
    if stop - start < 2:
        raise ValueError(f"{reference.name}: slice [{start}, {stop}) keeps fewer than 2 frames")
    values: dict[str, Any] = {}
    for f in dataclasses.fields(reference):
        value = getattr(reference, f.name)
        if isinstance(value, np.ndarray) and value.shape[:1] == (n,):
            value = value[start:stop]
        values[f.name] = value
    return dataclasses.replace(reference, **values)


def skill_references(mm_dir: Path, before_s: float, after_s: float) -> list[LLPReference]:
    """Every ``motion_*.npz`` in ``mm_dir`` cut to ``[entry - before_s, end + after_s]``."""
    paths = sorted(Path(mm_dir).glob("motion_*.npz"))
    if not paths:
        raise FileNotFoundError(f"{mm_dir} holds no motion_*.npz (run `parkour mm synth --out {mm_dir}` first)")
    out = []
    for path in paths:
        with np.load(path) as z:
            skill = str(z["skill"])
            phase = np.asarray(z["phase"], dtype=np.int64)
            entry, end = int(z["skill_entry_frame"]), int(z["skill_end_frame"])
        ref = load_reference(path)
        start = max(0, entry - round(before_s * ref.fps))
        stop = min(ref.num_frames, end + round(after_s * ref.fps) + 1)
        cut = slice_reference(ref, start, stop)
        out.append(LLPReference(SkillReference(skill, cut), phase[start:stop].copy(), entry - start, end - start))
    return out
