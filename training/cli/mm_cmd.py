"""Motion matching: `parkour mm synth --count N --seed S --out DIR`, `parkour mm render <clip>` and
`parkour mm check [--skills a,b] [--out FILE]`.

synth chains locomotion and parkour skills by motion matching into motion/terrain pairs: one npz
per motion, DIR/manifest.json (every file with its SHA-256) and DIR/quality.json. The same seed
gives byte-identical files. render plays one synthesized motion kinematically in MuJoCo with its
terrain and writes a PNG filmstrip (and an MP4 where ffmpeg exists). check measures each skill's clip and
its mirror against its own boxes (penetration, foot skate, joint limits). The data comes from wheels
`make setup` downloads (see training/motion_matching/README.md).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HELP = "motion matching: synthesize parkour references (synth), render one (render), check the skills' clips (check)"


def add_parser(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="mm_action", required=True)
    s = sub.add_parser("synth", help="write motion/terrain pairs, manifest.json and quality.json")
    s.add_argument("--count", type=int, default=16, help="number of motions")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", type=Path, default=Path("runs/mm"), help="output folder")
    s.add_argument("--skills", default="", help="comma-separated skill names (default: every registered skill)")
    r = sub.add_parser("render", help="PNG filmstrip (+ MP4 with ffmpeg) of a synthesized motion")
    r.add_argument("clip", type=Path, help="a motion_*.npz written by `parkour mm synth`")
    r.add_argument("--out", type=Path, default=None, help="output folder (default: the clip's folder)")
    r.add_argument("--frames", type=int, default=8, help="frames in the filmstrip")
    r.add_argument("--no-mp4", action="store_true")
    c = sub.add_parser("check", help="each skill's clip and its mirror: penetration, foot skate, joint limits")
    c.add_argument("--skills", default="", help="comma-separated skill names (default: every registered skill)")
    c.add_argument("--out", type=Path, default=None, help="also write the table as JSON here")


def run(args: argparse.Namespace) -> int:
    # Imported here: the motion-matching stack (MuJoCo, the data wheels) is not needed by other commands.
    if args.mm_action == "synth":
        from training.motion_matching.synth import synthesize

        names = [n.strip() for n in args.skills.split(",") if n.strip()] or None
        result = synthesize(args.count, args.seed, args.out, names)
        q = result["quality"]
        jump = q["max_joint_vel_jump_radps"]
        hist = q["entry_distance_hist"]["all"]
        print(
            f"wrote {args.count} motions to {args.out} (manifest.json, quality.json); "
            f"joint-velocity jump at switches {jump['with_inertialization']:.1f} rad/s "
            f"(raw {jump['without_inertialization']:.1f}); entry distances "
            f"{hist.get('min_m', 0):.2f}-{hist.get('max_m', 0):.2f} m"
        )
        return 0
    if args.mm_action == "check":
        from parkour_core.provenance import provenance
        from parkour_core.stats import write_json
        from training.motion_matching.clip_check import as_json, check_skill, markdown
        from training.motion_matching.skills import load_registry, select

        wanted = [n.strip() for n in args.skills.split(",") if n.strip()] or None
        rows = [row for decl in select(load_registry(), wanted) for row in check_skill(decl)]
        print(markdown(rows), end="")
        if args.out is not None:
            write_json(args.out, {**provenance(), **as_json(rows)})
        return 0
    from training.motion_matching.render import render_clip

    out = args.out if args.out is not None else args.clip.parent
    print(json.dumps(render_clip(args.clip, out, frames=args.frames, mp4=not args.no_mp4)))
    return 0
