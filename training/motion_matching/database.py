"""The motion database: every frame q = (root position, root quaternion, 29 joint angles) of the
locomotion clips and the skill clips, each clip followed later by its mirror, with their features.

Row order is fixed and documented because the search's tie-break depends on it: locomotion clips
(sorted by name), then skill clips (sorted by skill name), then all their mirrors in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

import numpy as np
from numpy.typing import NDArray

from training.motion_matching import data, features, quat
from training.motion_matching.features import Normalizer
from training.motion_matching.kinematics import FOOT_BODIES, forward_bodies, g1_model
from training.motion_matching.mirror import mirror_frames
from training.motion_matching.retarget import retarget
from training.motion_matching.search import AabbIndex
from training.motion_matching.skills import BoxDecl, SkillDecl
from training.motion_matching.terrain import Boxes, box_from_vertices

F = NDArray[np.float64]
I64 = NDArray[np.int64]

FPS = 50.0


@cache
def foot_ground_height() -> float:
    """Height of the ankle-roll origin above the floor with the sole flat (G1 MJCF, zero pose)."""
    import mujoco

    m = g1_model()
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    body = m.body(FOOT_BODIES[0]).id
    lowest = min(
        d.geom_xpos[g][2] - (m.geom_size[g][0] if m.geom_type[g] == mujoco.mjtGeom.mjGEOM_CAPSULE else 0.0)
        for g in range(m.ngeom)
        if m.geom_bodyid[g] == body and m.geom_contype[g] | m.geom_conaffinity[g]
    )
    return float(d.xpos[body][2] - lowest)


@dataclass
class ClipInfo:
    name: str
    kind: str  # "locomotion" | "skill"
    mirrored: bool
    start: int  # first database row
    length: int
    source: str  # data reference (package:path) it was read from
    source_sha256: str
    skill: str | None = None


@dataclass
class SkillEntry:
    decl: SkillDecl
    clips: list[int]  # ClipInfo indices: original, mirror
    end_rows: dict[int, int]  # clip index -> database row of e_k
    boxes: dict[int, Boxes]  # clip index -> terrain in clip coordinates
    index: AabbIndex | None = None


@dataclass
class Database:
    fps: float
    root_pos: F
    root_quat: F
    joint_pos: F
    feet_pos: F  # (N, 2, 3)
    raw_features: F  # (N, 27)
    features: F  # normalised (N, 27)
    normalizer: Normalizer
    valid: NDArray[np.bool_]
    clip_of_row: I64
    clips: list[ClipInfo]
    skills: dict[str, SkillEntry] = field(default_factory=dict)
    loco_index: AabbIndex | None = None

    def heading(self, row: int) -> float:
        return float(quat.yaw(self.root_quat[row]))

    def clip_end(self, row: int) -> int:
        c = self.clips[int(self.clip_of_row[row])]
        return c.start + c.length - 1


@dataclass(frozen=True)
class ClipFrames:
    """One clip's frames at ``FPS`` (a skill's with its boxes, in the clip's own frame)."""

    name: str
    root_pos: F
    root_quat: F
    joint_pos: F
    source: str
    skill: SkillDecl | None = None
    boxes: Boxes | None = None


def _resample_g1(clip: data.RawG1Clip, fps: float) -> tuple[F, F, F]:
    if abs(clip.fps - fps) < 1e-9:
        return clip.root_pos, quat.normalize(clip.root_quat), clip.joint_pos
    raise data.DataError(f"{clip.name}: clips at {clip.fps} fps are not supported (database is {fps} fps)")


@cache
def _retargeted(
    ref: str, fps_in: float, scale: float, start_s: float, end_s: float, boxes: tuple[BoxDecl, ...] = (),
    floor: BoxDecl | None = None,
) -> tuple[F, F, F]:  # fmt: skip
    human = data.load_mocap(ref) - [0.0, 0.0, floor_m(floor, scale) / scale]
    a, b = round(start_s * fps_in), round(end_s * fps_in) + 1
    if b > len(human):
        raise data.DataError(f"{ref}: the skill asks for {end_s} s but the recording is {len(human) / fps_in:.2f} s")
    # The feet stand on the floor and the boxes as the retargeter puts them (at their clearance over the
    # surface under them): no shift afterwards, which would move the robot against the boxes.
    res = retarget(human[a:b], fps_in, FPS, scale, boxes=boxes_of(boxes, scale, floor))
    return res.root_pos, res.root_quat, res.joint_pos


def skill_boxes(decl: SkillDecl) -> Boxes:
    return boxes_of(decl.boxes, decl.source.scale, decl.floor)


def floor_m(floor: BoxDecl | None, scale: float) -> float:
    """The top of the box a recording starts on (scaled), which becomes the floor; 0 without one."""
    if floor is None:
        return 0.0
    assert floor.mesh is not None
    center, half, _ = box_from_vertices(data.load_obj_vertices(floor.mesh) * scale)
    return float(center[2] + half[2])


def boxes_of(declared: tuple[BoxDecl, ...], scale: float, floor: BoxDecl | None = None) -> Boxes:
    """The boxes a skill declares, a mesh's scaled by ``scale`` (the human's) and a given box as it is; all
    lowered by the ``floor`` box's top (a box the recording starts on)."""
    lower = np.array([0.0, 0.0, floor_m(floor, scale)])
    centers, halves, yaws = [], [], []
    for b in declared:
        if b.mesh is not None:
            c, h, y = box_from_vertices(data.load_obj_vertices(b.mesh) * scale)
            c = c - lower
        else:
            assert b.center is not None and b.half_size is not None
            c, h, y = np.array(b.center), np.array(b.half_size), float(np.deg2rad(b.yaw_deg))
        centers.append(c)
        halves.append(h)
        yaws.append(y)
    return Boxes(np.array(centers), np.array(halves), np.array(yaws))


def skill_frames(decl: SkillDecl) -> ClipFrames:
    src = decl.source
    if src.kind == "mocap_retarget":
        assert src.fps is not None
        rp, rq, jp = _retargeted(src.ref, src.fps, src.scale, src.start_s, src.end_s, decl.boxes, decl.floor)
    else:
        clip = data.load_amp_clip(src.ref)
        rp, rq, jp = _resample_g1(clip, FPS)
        a, b = round(src.start_s * FPS), round(src.end_s * FPS) + 1
        rp, rq, jp = rp[a:b], rq[a:b], jp[a:b]
    return ClipFrames(decl.name, rp, rq, jp, src.ref, decl, skill_boxes(decl))


def build_database(skills: list[SkillDecl], weights: dict[str, float] | None = None) -> Database:
    originals: list[ClipFrames] = []
    for ref in sorted(data.LOCOMOTION_CLIPS):
        clip = data.load_amp_clip(ref)
        rp, rq, jp = _resample_g1(clip, FPS)
        originals.append(ClipFrames(clip.name, rp, rq, jp, ref))
    for decl in sorted(skills, key=lambda s: s.name):
        originals.append(skill_frames(decl))
    mirrors = [
        ClipFrames(
            f.name + "_mirror",
            *mirror_frames(f.root_pos, f.root_quat, f.joint_pos),
            f.source,
            f.skill,
            None if f.boxes is None else f.boxes.mirrored(),
        )
        for f in originals
    ]
    all_frames = originals + mirrors
    clips: list[ClipInfo] = []
    parts: dict[str, list[F]] = {k: [] for k in ("rp", "rq", "jp", "feet", "feat")}
    valid_parts: list[NDArray[np.bool_]] = []
    row = 0
    for k, f in enumerate(all_frames):
        feet = forward_bodies(f.root_pos, f.root_quat, f.joint_pos, FOOT_BODIES)
        feat, valid = features.clip_features(f.root_pos, f.root_quat, feet, FPS)
        clips.append(
            ClipInfo(
                name=f.name,
                kind="skill" if f.skill is not None else "locomotion",
                mirrored=k >= len(originals),
                start=row,
                length=len(f.root_pos),
                source=f.source,
                source_sha256=data.file_sha256(f.source),
                skill=None if f.skill is None else f.skill.name,
            )
        )
        for key, arr in zip(
            ("rp", "rq", "jp", "feet", "feat"), (f.root_pos, f.root_quat, f.joint_pos, feet, feat), strict=True
        ):
            parts[key].append(arr)
        valid_parts.append(valid)
        row += len(f.root_pos)
    raw = np.concatenate(parts["feat"])
    valid_all = np.concatenate(valid_parts)
    clip_of_row = np.concatenate([np.full(c.length, i, dtype=np.int64) for i, c in enumerate(clips)])
    loco_rows = np.flatnonzero(
        valid_all & np.isin(clip_of_row, [i for i, c in enumerate(clips) if c.kind == "locomotion"])
    )
    normalizer = features.fit_normalizer(raw[loco_rows], weights)
    db = Database(
        fps=FPS,
        root_pos=np.concatenate(parts["rp"]),
        root_quat=np.concatenate(parts["rq"]),
        joint_pos=np.concatenate(parts["jp"]),
        feet_pos=np.concatenate(parts["feet"]),
        raw_features=raw,
        features=normalizer(raw),
        normalizer=normalizer,
        valid=valid_all,
        clip_of_row=clip_of_row,
        clips=clips,
    )
    db.loco_index = _index(db, loco_rows)
    for k, f in enumerate(all_frames):
        if f.skill is None:
            continue
        entry = db.skills.setdefault(f.skill.name, SkillEntry(f.skill, [], {}, {}))
        info = clips[k]
        end = f.skill.end_frame(FPS)
        if end >= info.length:
            raise data.DataError(f"skill {f.skill.name}: end frame {end} is past its clip ({info.length} frames)")
        entry.clips.append(k)
        entry.end_rows[k] = info.start + end
        assert f.boxes is not None
        entry.boxes[k] = f.boxes
    for entry in db.skills.values():
        rows = [
            np.arange(clips[k].start + a, clips[k].start + b + 1)
            for k in entry.clips
            for a, b in entry.decl.entry_frames(FPS)
        ]
        entry.index = _index(db, np.concatenate(rows))
    return db


def _index(db: Database, rows: I64) -> AabbIndex:
    """A search index over database rows; boxes never span two clips or a gap."""
    rows = np.unique(rows)
    breaks = np.flatnonzero((np.diff(rows) != 1) | (np.diff(db.clip_of_row[rows]) != 0)) + 1
    positions = np.split(np.arange(len(rows)), breaks)
    return AabbIndex(db.features[rows], rows, positions)
