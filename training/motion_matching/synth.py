"""``parkour mm synth``: long kinematic references chained by motion matching, each with its terrain.

One motion: start standing; follow a 2D command (speed in {1, 2} m/s, heading in {-90, -45, 0, 45, 90}
deg) through the locomotion database for U[0.1, 3] s; then enter the skill through its entry window,
play it verbatim to its end frame e_k; then 2 s more locomotion straight ahead. The skill's boxes are
placed from the matched frame, randomised, and distractor boxes are added off the path.

Every motion draws from its own generator seeded by (seed, index), and the files are written as
byte-reproducible npz archives, so the same seed always gives the same bytes (a golden test pins it).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from training.motion_matching import quat
from training.motion_matching.archive import write_npz
from training.motion_matching.database import Database, build_database, foot_ground_height
from training.motion_matching.features import horizon_frames, trajectory_feature
from training.motion_matching.inertialize import Offset, step, transition
from training.motion_matching.kinematics import FOOT_BODIES, JOINT_NAMES, forward_bodies, joint_limits
from training.motion_matching.quality import MotionQuality, summarize
from training.motion_matching.skills import SkillDecl, load_registry, select
from training.motion_matching.spring import position_spring, velocity_spring
from training.motion_matching.terrain import Boxes, footprint_distance, local_xy, place

F = NDArray[np.float64]

PHASE_LOCOMOTION, PHASE_SKILL, PHASE_AFTER = 0, 1, 2

# The keys of every motion file (documented in README.md; the manifest repeats them).
NPZ_KEYS: dict[str, str] = {
    "fps": "frames per second (50)",
    "joint_names": "(29,) G1 joint order of joint_pos",
    "root_pos": "(T, 3) float32 pelvis position, world, metres",
    "root_quat": "(T, 4) float32 pelvis orientation, world, w first",
    "joint_pos": "(T, 29) float32 joint angles, rad",
    "command_vel_world": "(T, 2) float32 commanded planar velocity, world frame, m/s",
    "command_vel_body": "(T, 2) float32 the same command in the character's heading frame",
    "command_heading": "(T,) float32 commanded heading, rad (world)",
    "phase": "(T,) int8 0 locomotion before the skill, 1 skill, 2 locomotion after",
    "source_clip": "(T,) int16 index into clip_names of the database clip each frame came from",
    "source_frame": "(T,) int32 frame within that clip",
    "clip_names": "(C,) database clip names (mirrors end in _mirror)",
    "switch_frames": "(S,) int32 frames where playback switched clips (inertialized)",
    "skill": "skill name",
    "skill_entry_frame": "first frame of the skill (int32)",
    "skill_end_frame": "last frame of the skill, e_k (int32)",
    "skill_entry_clip_frame": "matched frame inside the skill clip's entry window (int32)",
    "entry_distance_m": "planar distance from the root to the nearest skill box at skill entry",
    "terrain_box_center": "(B, 3) float32 box centres, world",
    "terrain_box_half_size": "(B, 3) float32 box half sizes",
    "terrain_box_yaw": "(B,) float32 box yaw, rad",
    "terrain_box_role": "(B,) int8 0 the skill's boxes, 1 distractor",
    "terrain_main_box": "index of the box the skill is about (int32)",
    "command_speed_mps": "sampled speed", "command_heading_deg": "sampled heading",
    "pre_entry_s": "sampled locomotion time before the skill",
}  # fmt: skip


@dataclass(frozen=True)
class SynthConfig:
    speeds_mps: tuple[float, ...] = (1.0, 2.0)
    headings_deg: tuple[float, ...] = (-90.0, -45.0, 0.0, 45.0, 90.0)
    pre_entry_s: tuple[float, float] = (0.1, 3.0)
    after_s: float = 2.0
    query_every: int = 10  # M: frames between searches (0.2 s at 50 fps)
    command_change_mps: float = 0.5  # a larger change of the command searches at once
    command_change_deg: float = 30.0
    trajectory_halflife_s: float = 0.3
    heading_halflife_s: float = 0.3
    inertialization_halflife_s: float = 0.1
    max_width_m: float = 1.5
    dim_jitter_m: float = 0.05
    distractor_yaw_deg: float = 45.0
    max_distractors: int = 3
    skills: tuple[str, ...] = field(default_factory=tuple)


def _pose(db: Database, row: int) -> F:
    """The inertialized part of a frame: 29 joints, root height, root tilt (rotation vector, yaw removed)."""
    q = db.root_quat[row]
    tilt = quat.to_rotvec(quat.mul(quat.conj(quat.from_yaw(quat.yaw(q))), q))
    return np.concatenate([db.joint_pos[row], db.root_pos[row, 2:3], tilt])


def _pose_vel(db: Database, row: int) -> F:
    end = db.clip_end(row)
    a, b = (row, row + 1) if row < end else (row - 1, row)
    return (_pose(db, b) - _pose(db, a)) * db.fps


def _query(db: Database, row: int, cmd_world: F, cmd_heading: float, world_heading: float, cfg: SynthConfig) -> F:
    """The query feature: the spring-predicted future trajectory from the current frame's root velocity
    and yaw rate toward the command, with the current frame's own feet and root-velocity terms."""
    raw = db.raw_features[row].copy()
    t = (np.array(horizon_frames(db.fps), dtype=np.float64) / db.fps)[:, None]
    v0 = raw[24:26]
    c, s = np.cos(world_heading), np.sin(world_heading)
    goal = np.array([c * cmd_world[0] + s * cmd_world[1], -s * cmd_world[0] + c * cmd_world[1]])
    pos, _, _ = velocity_spring(np.zeros(2), v0, np.zeros(2), goal, cfg.trajectory_halflife_s, t)
    end = db.clip_end(row)
    nxt = min(row + 1, end)
    prv = nxt - 1
    yaw_rate = float(quat.wrap(db.heading(nxt) - db.heading(prv))) * db.fps
    target = float(quat.wrap(cmd_heading - world_heading))
    head, _ = position_spring(np.zeros(1), np.array([yaw_rate]), np.array([target]), cfg.heading_halflife_s, t)
    raw[:12] = trajectory_feature(pos, head[:, 0])
    return db.normalizer(raw)


@dataclass
class Motion:
    arrays: dict[str, Any]
    quality: MotionQuality


class Synthesizer:
    def __init__(self, skills: list[SkillDecl], cfg: SynthConfig | None = None):
        self.cfg = cfg or SynthConfig()
        self.skills = sorted(skills, key=lambda s: s.name)
        self.db = build_database(self.skills)
        db = self.db
        # The standing start: the locomotion frame with the least root and foot speed.
        loco = db.loco_index
        assert loco is not None
        speed = np.linalg.norm(db.raw_features[loco.ids][:, 18:27], axis=1)
        self.stand_row = int(loco.ids[int(np.argmin(speed))])
        self.lo, self.hi = joint_limits()
        self.foot_h = foot_ground_height()

    def generate(self, seed: int, index: int) -> Motion:
        cfg, db = self.cfg, self.db
        rng = np.random.default_rng(np.random.SeedSequence([seed, index]))
        skill = self.skills[int(rng.integers(len(self.skills)))]
        speed = float(rng.choice(cfg.speeds_mps))
        heading_deg = float(rng.choice(cfg.headings_deg))
        heading = float(np.deg2rad(heading_deg))
        pre_s = float(rng.uniform(*cfg.pre_entry_s))
        n_pre = max(1, round(pre_s * db.fps))
        n_after = round(cfg.after_s * db.fps)
        dt = 1.0 / db.fps
        entry = db.skills[skill.name]

        cur = self.stand_row
        P = np.zeros(2)
        psi = 0.0
        ground = 0.0
        off = Offset.zeros(33)
        phase, in_phase = PHASE_LOCOMOTION, 0
        cmd_h = heading
        since_query = cfg.query_every
        last_cmd: tuple[F, float] | None = None
        end_row = -1
        skill_clip = -1
        entry_frame = entry_clip_frame = end_frame = -1
        boxes = Boxes.empty()
        rows: list[int] = []
        out: dict[str, list[Any]] = {k: [] for k in ("P", "psi", "ground", "off", "cmd", "cmd_h", "phase")}
        switches: list[int] = []

        def emit() -> None:
            rows.append(cur)
            out["P"].append(P.copy())
            out["psi"].append(psi)
            out["ground"].append(ground)
            out["off"].append(off.x.copy())
            out["cmd"].append(cmd.copy())
            out["cmd_h"].append(cmd_h)
            out["phase"].append(phase)

        cmd = speed * np.array([np.cos(cmd_h), np.sin(cmd_h)])
        emit()
        while True:
            t_out = len(rows)
            nxt: int | None = cur + 1 if cur < db.clip_end(cur) else None
            new: int | None = None
            if phase == PHASE_LOCOMOTION and in_phase + 1 >= n_pre:
                q = _query(db, cur, cmd, cmd_h, psi, cfg)
                assert entry.index is not None
                new, _ = entry.index.query(q)
                phase, in_phase = PHASE_SKILL, -1
                skill_clip = int(db.clip_of_row[new])
                end_row = entry.end_rows[skill_clip]
                entry_frame = t_out
                entry_clip_frame = new - db.clips[skill_clip].start
            elif phase == PHASE_SKILL and cur == end_row:
                # Hand back to locomotion on the surface the skill ended on, straight ahead.
                ground += float(db.feet_pos[end_row, :, 2].min()) - self.foot_h
                phase, in_phase = PHASE_AFTER, -1
                end_frame = t_out - 1
                cmd_h = psi
                cmd = speed * np.array([np.cos(cmd_h), np.sin(cmd_h)])
            if phase != PHASE_SKILL and new is None:
                changed = last_cmd is None or (
                    np.linalg.norm(cmd - last_cmd[0]) > cfg.command_change_mps
                    or abs(quat.wrap(cmd_h - last_cmd[1])) > np.deg2rad(cfg.command_change_deg)
                )
                if nxt is None or since_query >= cfg.query_every or changed:
                    q = _query(db, cur, cmd, cmd_h, psi, cfg)
                    assert db.loco_index is not None
                    best, cost = db.loco_index.query(q)
                    cont = np.inf
                    if nxt is not None and db.valid[nxt]:
                        d = db.features[nxt] - q
                        cont = float(d @ d)
                    if nxt is None or (best != nxt and cost < cont):
                        new = best
                    since_query, last_cmd = 0, (cmd.copy(), cmd_h)
            # Advance the character: the root moves by the played clip's own planar step.
            if new is not None:
                a, b = (
                    (cur, nxt)
                    if nxt is not None
                    else ((new - 1, new) if new > db.clips[int(db.clip_of_row[new])].start else (new, new))
                )
            else:
                assert nxt is not None
                a, b = cur, nxt
            dyaw = psi - db.heading(a)
            c, s = np.cos(dyaw), np.sin(dyaw)
            d_xy = db.root_pos[b, :2] - db.root_pos[a, :2]
            P = P + np.array([c * d_xy[0] - s * d_xy[1], s * d_xy[0] + c * d_xy[1]])
            psi = float(quat.wrap(psi + quat.wrap(db.heading(b) - db.heading(a))))
            if new is not None:
                src = nxt if nxt is not None else cur
                off = transition(off, _pose(db, src), _pose_vel(db, src), _pose(db, new), _pose_vel(db, new))
                switches.append(t_out)
                if phase == PHASE_SKILL and in_phase == -1:
                    boxes = self._terrain(rng, skill, entry.boxes[skill_clip], new, P, psi, ground)
                cur = new
            else:
                cur = b
            off = step(off, cfg.inertialization_halflife_s, dt)
            in_phase += 1
            since_query += 1
            emit()
            if phase == PHASE_AFTER and in_phase >= n_after:
                break
        return self._finish(
            rows, out, switches, skill, boxes, entry_frame, end_frame, entry_clip_frame, speed, heading_deg, pre_s, rng
        )

    def _terrain(
        self, rng: np.random.Generator, skill: SkillDecl, clip_boxes: Boxes, row: int, P: F, psi: float, ground: float
    ) -> Boxes:
        """The skill's boxes, randomised in the clip's frame (dims +-5 cm, the main box widened up to
        max_width_m, height kept in the skill's range), then placed from the matched frame."""
        cfg = self.cfg
        half = clip_boxes.half + rng.uniform(-cfg.dim_jitter_m / 2, cfg.dim_jitter_m / 2, clip_boxes.half.shape)
        m = skill.main_box
        wide = int(np.argmax(half[m, :2]))
        width = 2 * half[m, wide]
        if width < cfg.max_width_m:
            half[m, wide] = rng.uniform(width, cfg.max_width_m) / 2
        lo, hi = skill.height_range_m
        half[:, 2] = np.maximum(half[:, 2], 0.01)
        half[m, 2] = np.clip(half[m, 2], lo / 2, hi / 2)
        center = clip_boxes.center.copy()
        center[:, 2] = half[:, 2]  # boxes stand on the clip's floor
        jittered = Boxes(center, half, clip_boxes.yaw.copy())
        db = self.db
        return place(jittered, db.root_pos[row, :2], db.heading(row), P, psi, ground)

    def _distractors(self, rng: np.random.Generator, main: Boxes, path_xy: F, ground: float) -> Boxes:
        cfg = self.cfg
        n = int(rng.integers(cfg.max_distractors + 1))
        centers, halves, yaws = [], [], []
        taken = [(main.center[i, :2], float(np.linalg.norm(main.half[i, :2]))) for i in range(len(main))]
        for _ in range(n):
            for _try in range(20):
                half = np.array([*rng.uniform(0.15, 0.5, 2), rng.uniform(0.05, 0.4)])
                yaw = float(main.yaw[0] + np.deg2rad(rng.uniform(-cfg.distractor_yaw_deg, cfg.distractor_yaw_deg)))
                xy = main.center[0, :2] + rng.uniform(-4.0, 4.0, 2)
                radius = float(np.linalg.norm(half[:2]))
                clear_path = np.min(np.linalg.norm(path_xy - xy, axis=1)) > radius + 0.5
                clear_boxes = all(np.linalg.norm(xy - c) > radius + r + 0.2 for c, r in taken)
                if clear_path and clear_boxes:
                    centers.append([xy[0], xy[1], half[2]])
                    halves.append(half)
                    yaws.append(yaw)
                    taken.append((xy, radius))
                    break
        if not centers:
            return Boxes.empty()
        return Boxes(np.array(centers), np.array(halves), np.array(yaws))

    def _finish(self, rows: list[int], out: dict[str, list[Any]], switches: list[int], skill: SkillDecl, boxes: Boxes,
                entry_frame: int, end_frame: int, entry_clip_frame: int, speed: float, heading_deg: float,
                pre_s: float, rng: np.random.Generator) -> Motion:  # fmt: skip
        db = self.db
        r = np.asarray(rows)
        off = np.asarray(out["off"])
        psi = np.asarray(out["psi"])
        P = np.asarray(out["P"])
        joints_raw = db.joint_pos[r]
        joints = np.clip(joints_raw + off[:, :29], self.lo, self.hi)
        z = db.root_pos[r, 2] + np.asarray(out["ground"]) + off[:, 29]
        tilt_q = quat.from_rotvec(
            quat.to_rotvec(quat.mul(quat.conj(quat.from_yaw(quat.yaw(db.root_quat[r]))), db.root_quat[r]))
            + off[:, 30:33]
        )
        root_quat = quat.normalize(quat.mul(quat.from_yaw(psi), tilt_q))
        root_pos = np.concatenate([P, z[:, None]], axis=1)
        if end_frame >= 0:
            boxes = extend_under(boxes, P[end_frame], P[end_frame:], float(out["ground"][-1]))
        distractors = self._distractors(rng, boxes, P, 0.0)
        terrain = boxes.concat(distractors)
        role = np.concatenate([np.zeros(len(boxes), np.int8), np.ones(len(distractors), np.int8)])
        # Approach distance: from the root to the nearest of the skill's boxes (the first one met).
        entry_dist = float(footprint_distance(boxes, P[entry_frame : entry_frame + 1]).min())
        cmd = np.asarray(out["cmd"])
        c, s = np.cos(psi), np.sin(psi)
        cmd_body = np.stack([c * cmd[:, 0] + s * cmd[:, 1], -s * cmd[:, 0] + c * cmd[:, 1]], axis=1)
        clip_ids = db.clip_of_row[r]
        starts = np.array([db.clips[i].start for i in clip_ids])
        arrays: dict[str, Any] = {
            "fps": np.float64(db.fps),
            "joint_names": np.array(JOINT_NAMES),
            "root_pos": root_pos.astype(np.float32),
            "root_quat": root_quat.astype(np.float32),
            "joint_pos": joints.astype(np.float32),
            "command_vel_world": cmd.astype(np.float32),
            "command_vel_body": cmd_body.astype(np.float32),
            "command_heading": np.asarray(out["cmd_h"], dtype=np.float32),
            "phase": np.asarray(out["phase"], dtype=np.int8),
            "source_clip": clip_ids.astype(np.int16),
            "source_frame": (r - starts).astype(np.int32),
            "clip_names": np.array([c.name for c in db.clips]),
            "switch_frames": np.asarray(switches, dtype=np.int32),
            "skill": np.array(skill.name),
            "skill_entry_frame": np.int32(entry_frame),
            "skill_end_frame": np.int32(end_frame),
            "skill_entry_clip_frame": np.int32(entry_clip_frame),
            "entry_distance_m": np.float32(entry_dist),
            "terrain_box_center": terrain.center.astype(np.float32),
            "terrain_box_half_size": terrain.half.astype(np.float32),
            "terrain_box_yaw": terrain.yaw.astype(np.float32),
            "terrain_box_role": role,
            "terrain_main_box": np.int32(skill.main_box),
            "command_speed_mps": np.float32(speed),
            "command_heading_deg": np.float32(heading_deg),
            "pre_entry_s": np.float32(pre_s),
        }
        assert set(arrays) == set(NPZ_KEYS)
        feet = forward_bodies(root_pos, root_quat, joints, FOOT_BODIES)
        quality = MotionQuality(
            skill=skill.name,
            fps=db.fps,
            joints=joints,
            joints_raw=joints_raw,
            switch_frames=np.asarray(switches),
            feet=feet,
            terrain=terrain,
            entry_distance_m=entry_dist,
        )
        return Motion(arrays, quality)


def extend_under(boxes: Boxes, end_xy: F, path_xy: F, surface_z: float, margin_m: float = 0.3) -> Boxes:
    """Grow the box the skill ended on so the locomotion after it stays on its top: a skill that ends
    on a box hands over to walking on that surface, not in the air past its edge."""
    if len(boxes) == 0 or surface_z <= 0.05:
        return boxes
    tops = boxes.center[:, 2] + boxes.half[:, 2]
    dist = footprint_distance(boxes, end_xy[None, :])[:, 0]
    k = int(np.argmin(np.abs(tops - surface_z) + 10.0 * dist))
    if abs(tops[k] - surface_z) > 0.15:
        return boxes
    loc = local_xy(Boxes(boxes.center[k : k + 1], boxes.half[k : k + 1], boxes.yaw[k : k + 1]), path_xy)[0]
    lo = np.minimum(-boxes.half[k, :2], loc.min(axis=0) - margin_m)
    hi = np.maximum(boxes.half[k, :2], loc.max(axis=0) + margin_m)
    mid = (lo + hi) / 2
    c, s = np.cos(boxes.yaw[k]), np.sin(boxes.yaw[k])
    center, half = boxes.center.copy(), boxes.half.copy()
    center[k, :2] += [c * mid[0] - s * mid[1], s * mid[0] + c * mid[1]]
    half[k, :2] = (hi - lo) / 2
    return Boxes(center, half, boxes.yaw.copy())


def _database_manifest(db: Database) -> list[dict[str, Any]]:
    return [
        {"name": c.name, "kind": c.kind, "mirrored": c.mirrored, "frames": c.length, "source": c.source,
         "source_sha256": c.source_sha256, **({"skill": c.skill} if c.skill else {})}
        for c in db.clips
    ]  # fmt: skip


def synthesize(
    count: int, seed: int, out_dir: Path, skill_names: list[str] | None = None, cfg: SynthConfig | None = None
) -> dict[str, Any]:
    """Write ``count`` motion/terrain pairs, ``manifest.json`` and ``quality.json`` to ``out_dir``."""
    if count < 1:
        raise ValueError(f"--count must be >= 1, got {count}")
    registry = load_registry()
    skills = select(registry, skill_names)
    synth = Synthesizer(skills, cfg)
    out_dir.mkdir(parents=True, exist_ok=True)
    files, qualities = [], []
    for i in range(count):
        motion = synth.generate(seed, i)
        name = f"motion_{i:05d}.npz"
        sha = write_npz(out_dir / name, motion.arrays)
        files.append(
            {
                "file": name,
                "sha256": sha,
                "skill": str(motion.arrays["skill"]),
                "frames": len(motion.arrays["root_pos"]),
            }
        )
        qualities.append(motion.quality)
    manifest = {
        "format": "parkour-mm-synth/1",
        "seed": seed,
        "count": count,
        "fps": synth.db.fps,
        "config": asdict(synth.cfg),
        "skills": {
            s.name: {
                "path": Path(s.path).name,
                "provenance": s.provenance,
                "entry_windows_s": s.entry_windows,
                "end_s": s.end_s,
                "height_range_m": s.height_range_m,
            }
            for s in synth.skills
        },
        "database": _database_manifest(synth.db),
        "npz_keys": NPZ_KEYS,
        "files": files,
    }
    text = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    (out_dir / "manifest.json").write_text(text)
    quality = summarize(qualities)
    (out_dir / "quality.json").write_text(json.dumps(quality, indent=1, sort_keys=True) + "\n")
    return {"manifest": manifest, "quality": quality, "manifest_sha256": hashlib.sha256(text.encode()).hexdigest()}
