"""Motion matching: `parkour mm synth --count N --seed S --out DIR` and `parkour mm render <clip>`.

synth chains locomotion and parkour skills by motion matching into motion/terrain pairs: one npz
per motion, DIR/manifest.json (every file with its SHA-256) and DIR/quality.json. The same seed
gives byte-identical files. render plays one synthesized motion kinematically in MuJoCo with its
terrain and writes a PNG filmstrip (and an MP4 where ffmpeg exists). The data comes from wheels
`make setup` downloads (see training/motion_matching/README.md).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HELP = "motion matching: synthesize parkour references (synth) or render one (render)"


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
    from training.motion_matching.render import render_clip

    out = args.out if args.out is not None else args.clip.parent
    print(json.dumps(render_clip(args.clip, out, frames=args.frames, mp4=not args.no_mp4)))
    return 0
