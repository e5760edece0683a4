"""Each skill's clip as the database holds it, and its mirror, with its own boxes: how deep the robot's
collision geoms go into the floor and the boxes, how far a foot slides while in contact, and how near the
joints come to their limits; and, against a clip that floats clear of them, how often no sole is down.
``parkour mm check`` prints the table per skill and writes it as JSON.

Depth is MuJoCo's: the G1's collision primitives (the bodies' capsules and spheres, the feet's spheres)
against the floor plane and each box, per frame, in kinematic playback (``mj_kinematics`` and
``mj_collision``: a contact's distance below zero is a penetration). The G1's own parts never count
against each other here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np
from numpy.typing import NDArray

from parkour_core.robots import G1
from training.motion_matching.database import foot_ground_height, skill_frames
from training.motion_matching.kinematics import FOOT_BODIES, add_box, forward_bodies, g1_spec, joint_limits
from training.motion_matching.mirror import mirror_frames
from training.motion_matching.quality import foot_skate
from training.motion_matching.skills import SkillDecl
from training.motion_matching.terrain import Boxes, ground_height

F = NDArray[np.float64]

DEEP_M = 0.02  # a frame whose deepest penetration exceeds this counts as penetrating
NEAR_LIMIT_RAD = 0.05  # a joint within this of a limit is at it


@dataclass(frozen=True)
class ClipQuality:
    skill: str
    mirrored: bool
    seconds: float
    penetration_max_m: float  # the deepest over the clip
    penetration_body: str  # whose geom went deepest ('' without any)
    penetrating_frames: float  # share of frames deeper than DEEP_M
    floating_frames: float  # share of frames with both soles more than DEEP_M above the surface under them
    foot_skate_p95_m: float  # per frame pair in contact (1/50 s); 0 without contact pairs
    foot_skate_max_m: float
    joint_margin_min_rad: float  # the nearest any joint came to a limit (negative: beyond it)
    joint_margin_joint: str
    beyond_limit_frames: float  # share of frames with some joint beyond its limit
    near_limit_frames: float  # share of frames with some joint within NEAR_LIMIT_RAD of a limit
    legs_near_limit_frames: float  # the same, of the legs' joints (hips, knees, ankles)
    arms_near_limit_frames: float  # of the arms' (shoulders, elbows, wrists)

    def row(self) -> list[str]:
        return [f"`{self.skill}`" + (" (mirror)" if self.mirrored else ""), f"{self.seconds:.1f}",
                f"{100 * self.penetration_max_m:.1f} ({self.penetration_body or '-'})",
                f"{100 * self.penetrating_frames:.0f} %", f"{100 * self.floating_frames:.0f} %",
                f"{100 * self.foot_skate_p95_m:.2f} / {100 * self.foot_skate_max_m:.2f}",
                f"{self.joint_margin_min_rad:+.3f} ({self.joint_margin_joint})",
                f"{100 * self.beyond_limit_frames:.0f} % / {100 * self.near_limit_frames:.0f} %",
                f"{100 * self.legs_near_limit_frames:.0f} % / {100 * self.arms_near_limit_frames:.0f} %"]  # fmt: skip


HEADER = ("clip", "s", "deepest penetration (cm, body)", f"frames > {100 * DEEP_M:.0f} cm",
          f"frames with no sole within {100 * DEEP_M:.0f} cm of a surface",
          "foot skate p95 / max (cm per frame)", "nearest joint limit (rad)",
          f"frames beyond / within {NEAR_LIMIT_RAD} rad of a limit", "of those within: legs / arms")  # fmt: skip
LEGS = np.array([any(p in n for p in ("hip", "knee", "ankle")) for n in G1.joint_names])
ARMS = np.array([any(p in n for p in ("shoulder", "elbow", "wrist")) for n in G1.joint_names])


def terrain_model(boxes: Boxes) -> mujoco.MjModel:
    """The G1 with the floor and ``boxes`` as world geoms."""
    spec = g1_spec()
    for k in range(len(boxes)):
        add_box(spec, f"box{k}", boxes.center[k], boxes.half[k], float(boxes.yaw[k]))
    return spec.compile()


def penetration(model: mujoco.MjModel, root_pos: F, root_quat: F, joints: F) -> tuple[F, list[str]]:
    """Per frame: the deepest robot-into-world penetration (m, 0 without one) and whose body it was."""
    data = mujoco.MjData(model)
    depth, body = np.zeros(len(root_pos)), [""] * len(root_pos)
    for t in range(len(root_pos)):
        data.qpos[:3], data.qpos[3:7], data.qpos[7:] = root_pos[t], root_quat[t], joints[t]
        mujoco.mj_kinematics(model, data)
        mujoco.mj_collision(model, data)
        for c in data.contact[: data.ncon]:
            bodies = model.geom_bodyid[[c.geom1, c.geom2]]
            if (bodies == 0).sum() != 1 or -c.dist <= depth[t]:
                continue  # robot against itself, or not the deepest
            depth[t] = -c.dist
            body[t] = model.body(int(bodies.max())).name
    return depth, body


def clip_quality(skill: str, mirrored: bool, root_pos: F, root_quat: F, joints: F, boxes: Boxes,
                 fps: float) -> ClipQuality:  # fmt: skip
    depth, body = penetration(terrain_model(boxes), root_pos, root_quat, joints)
    deepest = int(np.argmax(depth))
    feet = forward_bodies(root_pos, root_quat, joints, FOOT_BODIES)
    skate = foot_skate(feet, boxes)
    sole = feet[:, :, 2] - foot_ground_height() - ground_height(boxes, feet[:, :, :2].reshape(-1, 2)).reshape(-1, 2)
    lo, hi = joint_limits()
    margin = np.minimum(joints - lo, hi - joints)  # (T, 29)
    t, j = np.unravel_index(int(np.argmin(margin)), margin.shape)
    return ClipQuality(
        skill=skill, mirrored=mirrored, seconds=len(joints) / fps,
        penetration_max_m=float(depth[deepest]), penetration_body=body[deepest],
        penetrating_frames=float(np.mean(depth > DEEP_M)),
        floating_frames=float(np.mean(sole.min(axis=1) > DEEP_M)),
        foot_skate_p95_m=float(np.percentile(skate, 95)) if len(skate) else 0.0,
        foot_skate_max_m=float(skate.max()) if len(skate) else 0.0,
        joint_margin_min_rad=float(margin[t, j]), joint_margin_joint=G1.joint_names[j],
        beyond_limit_frames=float(np.mean((margin < 0).any(axis=1))),
        near_limit_frames=float(np.mean((margin < NEAR_LIMIT_RAD).any(axis=1))),
        legs_near_limit_frames=float(np.mean((margin[:, LEGS] < NEAR_LIMIT_RAD).any(axis=1))),
        arms_near_limit_frames=float(np.mean((margin[:, ARMS] < NEAR_LIMIT_RAD).any(axis=1))),
    )  # fmt: skip


def check_skill(decl: SkillDecl, fps: float = 50.0) -> list[ClipQuality]:
    """The skill's clip (its frames as the database holds them, to its end frame) and its mirror."""
    f = skill_frames(decl)
    end = decl.end_frame(fps) + 1
    rp, rq, jp = f.root_pos[:end], f.root_quat[:end], f.joint_pos[:end]
    assert f.boxes is not None
    mp, mq, mj = mirror_frames(rp, rq, jp)
    return [clip_quality(decl.name, False, rp, rq, jp, f.boxes, fps),
            clip_quality(decl.name, True, mp, mq, mj, f.boxes.mirrored(), fps)]  # fmt: skip


def markdown(rows: list[ClipQuality]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "| " + " | ".join("---" for _ in HEADER) + " |"]
    return "\n".join(lines + ["| " + " | ".join(r.row()) + " |" for r in rows]) + "\n"


def as_json(rows: list[ClipQuality]) -> dict[str, Any]:
    from dataclasses import asdict

    return {"deep_m": DEEP_M, "near_limit_rad": NEAR_LIMIT_RAD, "clips": [asdict(r) for r in rows]}
