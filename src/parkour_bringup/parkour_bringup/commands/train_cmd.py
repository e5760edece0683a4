"""Training: `parkour train smoke|student-walk|student-step --out DIR ...`.

`parkour train smoke --out DIR [--method php|hil|llp|hpl] [--size tiny|smoke] [--seed S] [--config YAML]`:

smoke runs PHP's chain end to end on the CPU at toy size: motion matching (DIR/mm), a tracking
teacher by PPO, the recurrent depth student by hybrid DAgger + PPO, the export (DIR/bundle, with the
ONNX-vs-torch parity and int8 checks), and the bundle through the simulated graph (DIR/sim). Writes
DIR/smoke.json (teacher_return and student_loss per iteration, stage wall times, the sim run's
summary, the bundle path) and DIR/curves.png. `--size tiny` is the test size (about a minute).
`--method hil|llp|hpl` runs another paper's method (training/methods/<method>) to the same outputs
and the same bundle contract.

`student-walk` (issue 13, stage 1) distils the installed walking policy into the recurrent depth
student by DAgger; `student-step` (stage 2) trains it onward on low platforms with PHP's hybrid
DAgger + PPO objective, from stage 1's bundle (`--init`, default models/student_walk).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HELP = "train policies (smoke: the whole CPU pipeline at toy size)"
METHODS = ("php", "hil", "llp", "hpl")


def add_parser(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="train_action", required=True)
    s = sub.add_parser("smoke", help="mm -> teacher -> student -> bundle -> sim, on the CPU at toy size")
    s.add_argument("--out", type=Path, required=True, help="output folder")
    s.add_argument(
        "--config", type=Path, default=None, help="training config (default training/configs/smoke_cpu.yaml)"
    )
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--size", choices=("tiny", "smoke"), default="smoke", help="tiny: tests (~1 min); smoke: minutes")
    s.add_argument("--no-sim", action="store_true", help="skip the simulated-graph stage")
    s.add_argument(
        "--method",
        choices=METHODS,
        default="php",
        help="php (motion-matching teacher + hybrid DAgger/PPO), hil (adversarial motion prior), "
        "llp (MLP-GRU-MLP student with height-scan reconstruction), hpl (fractal terrain, curriculum, "
        "multi-process DAgger); all end in the same bundle contract",
    )

    w = sub.add_parser("student-walk", help="DAgger from the installed walking policy into the depth student")
    w.add_argument("--out", type=Path, required=True, help="output folder (curves.png, student_walk.json, bundle)")
    w.add_argument("--size", choices=("tiny", "walk"), default="walk", help="tiny: tests (<1 min); walk: the real run")
    w.add_argument("--seed", type=int, default=0)
    w.add_argument("--device", default="cpu", help="torch device for the student (cpu, cuda)")
    w.add_argument("--num-envs", type=int, default=None, help="environments (default: the size's)")
    w.add_argument("--minutes", type=float, default=40.0, help="time box of the walk size")

    st = sub.add_parser(
        "student-step", help="hybrid DAgger+PPO from the student-walk bundle onto 4-22 cm platforms (stage 2)"
    )
    st.add_argument("--out", type=Path, required=True, help="output folder (curves.png, student_step.json, bundle)")
    st.add_argument("--size", choices=("tiny", "step"), default="step", help="tiny: tests (<1 min); step: the real run")
    st.add_argument(
        "--init",
        type=Path,
        default=None,
        help="student bundle holding checkpoint.pt (or the .pt file) to start from; default models/student_walk",
    )
    st.add_argument(
        "--gate-rate",
        type=float,
        default=None,
        help="trailing step-up rate at which lambda_D ramps down (default: the size's, 0.4)",
    )
    st.add_argument("--seed", type=int, default=0)
    st.add_argument("--device", default="cpu", help="torch device for the student (cpu, cuda)")
    st.add_argument("--num-envs", type=int, default=None, help="environments (default: the size's)")
    st.add_argument("--minutes", type=float, default=40.0, help="time box of the step size")

    c = sub.add_parser("compare-walk", help="the same scripted walk under parkour sim for each bundle, side by side")
    c.add_argument("--bundles", default="g1_walk,models/student_walk", help="comma-separated bundle names or folders")
    c.add_argument("--out", type=Path, required=True, help="output folder (compare.json, compare.md, compare.png)")
    c.add_argument(
        "--robot-models", default="", help="comma-separated robot models to run each bundle on (G1: holosoma,mjlab)"
    )


def run(args: argparse.Namespace) -> int:
    if args.train_action == "student-walk":
        from training.student_walk.run import run_student_walk

        r = run_student_walk(args.out, args.size, args.seed, args.device, args.num_envs, args.minutes)
        print(f"parkour train student-walk: wrote {Path(args.out) / 'student_walk.json'}, bundle {r['bundle']}")
        return 0
    if args.train_action == "compare-walk":
        from training.student_walk.compare import compare_walk

        bundles = [b.strip() for b in args.bundles.split(",") if b.strip()]
        if not bundles:
            raise ValueError("--bundles names no bundle")
        models = tuple(m.strip() for m in args.robot_models.split(",") if m.strip()) or ("",)
        compare_walk(bundles, args.out, robot_models=models)
        print((Path(args.out) / "compare.md").read_text(), end="")
        return 0
    if args.train_action == "student-step":
        from training.student_step.run import DEFAULT_INIT, run_student_step

        init = args.init or DEFAULT_INIT
        r = run_student_step(
            args.out, args.size, args.seed, args.device, args.num_envs, args.minutes, init, gate_rate=args.gate_rate
        )
        print(f"parkour train student-step: wrote {Path(args.out) / 'student_step.json'}, bundle {r['bundle']}")
        return 0
    # Imported here: torch and the training stack are not needed by other commands.
    import importlib

    from training.pipeline.smoke import DEFAULT_CONFIG, run_smoke

    def log(line: str) -> None:
        print(line, flush=True)

    if args.method == "php":
        result = run_smoke(
            args.out, config=args.config or DEFAULT_CONFIG, seed=args.seed, size=args.size, sim=not args.no_sim, log=log
        )
    else:
        if args.config is not None:
            raise ValueError(f"--config applies to --method php; {args.method} sizes its run with --size")
        method = importlib.import_module(f"training.methods.{args.method}.smoke")
        result = method.run_method_smoke(Path(args.out), args.size, args.seed, not args.no_sim, log)
    ret = result["teacher_return"]
    loss = result["student_loss"]
    sim = result["sim"]
    print(
        json.dumps(
            {
                "teacher_return_first_last": [round(ret[0], 2), round(ret[-1], 2)],
                "student_loss_first_last": [round(loss[0], 4), round(loss[-1], 4)],
                "sim_ran": sim.get("ran"),
                "sim_fell": sim.get("fell"),
                "stage_wall_s": result["stage_wall_s"],
            }
        )
    )
    print(f"parkour train smoke: wrote {Path(args.out) / 'smoke.json'}, bundle {result['bundle']}")
    if not args.no_sim and not sim.get("ran"):
        raise RuntimeError(f"the bundle did not run in simulation: {sim.get('error', 'see DIR/sim')}")
    return 0
