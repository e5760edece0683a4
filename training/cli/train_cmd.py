"""Training: `parkour train smoke|run|student-walk|student-step --out DIR ...`.

`smoke --out DIR [--size tiny|smoke] [--seed S] [--config YAML]` runs PHP's chain end to end on the
CPU at toy size: motion matching (DIR/mm), a tracking teacher by PPO, the recurrent depth student by
hybrid DAgger + PPO, the export (DIR/bundle, with the ONNX-vs-torch parity and int8 checks), and the
bundle through the simulated graph (DIR/sim). A size is a preset (training/tasks/smoke/presets/
smoke_tiny.yaml, smoke.yaml; tiny is the tests' size).

`run --config NAME --out DIR [--set KEY=VALUE ...]` trains any registered task (training/tasks/<task>/)
through the one runner (training/rl) from a preset it ships; `--backend mujoco_warp` runs its physics on
MuJoCo-Warp (a GPU) under the same MDP.
`student-walk` (stage 1) distils the installed walking policy into the recurrent depth student by
DAgger; `student-step` (stage 2) trains it onward on low platforms with PHP's hybrid DAgger + PPO,
from stage 1's bundle (`--init`, default models/student_walk). DIR/curve.jsonl grows with every
iteration and DIR/model_latest.pt is saved every run.save_interval iterations: a killed run keeps both.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

HELP = "train policies (smoke: the whole CPU pipeline at toy size)"


def add_parser(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="train_action", required=True)
    s = sub.add_parser("smoke", help="mm -> teacher -> student -> bundle -> sim, on the CPU at toy size")
    s.add_argument("--out", type=Path, required=True, help="output folder")
    s.add_argument(
        "--config",
        type=Path,
        default=None,
        help="the student's config (default: the size's php_student or php_student_tiny)",
    )
    s.add_argument("--seed", type=int, default=0)
    s.add_argument(
        "--size", default="smoke",
        help="a smoke size: a preset with task: smoke (tiny: the tests, ~1 min; smoke: minutes)",
    )  # fmt: skip
    s.add_argument("--no-sim", action="store_true", help="skip the simulated-graph stage")

    r = sub.add_parser(
        "run",
        help="any registered task from one of its presets, through the one runner (training/rl)",
        epilog=task_list(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    r.add_argument("--config", default=None, help="a preset's name (the list below) or a YAML path")
    r.add_argument("--out", type=Path, default=None, help="output folder (curve.jsonl, <task>.json, curves.png, ...)")
    r.add_argument(
        "--resume", type=Path, default=None, metavar="RUN_DIR",
        help="continue the run in RUN_DIR exactly from its model_latest.pt (its config and overrides; --set may "
        "change only run.minutes, run.max_iterations or run.save_interval)",
    )  # fmt: skip
    r.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key (YAML value), e.g. --set run.minutes=20; repeatable")  # fmt: skip
    r.add_argument("--num-envs", type=int, default=None, help="environments (default: the config's env.num_envs)")
    r.add_argument(
        "--note", default="",
        help="a line about this run (why it ran, what differs from the last), kept with its entry in the run's "
        "provenance 'runs', through every later resume",
    )  # fmt: skip
    r.add_argument(
        "--backend", choices=("mujoco_cpu", "mujoco_warp"), default=None,
        help="mujoco_cpu: the runner on batched MuJoCo (CPU); mujoco_warp: the same task, MDP and runner with the "
        "physics on MuJoCo-Warp (a GPU; the task's registration lists it) (default: the config's env.backend)",
    )  # fmt: skip
    r.add_argument("--device", choices=("cpu", "cuda"), default=None, help="torch/warp device (default: the config's)")

    w = sub.add_parser("student-walk", help="DAgger from the installed walking policy into the depth student")
    w.add_argument("--out", type=Path, required=True, help="output folder (curves.png, student_walk.json, bundle)")
    w.add_argument("--size", choices=("tiny", "walk"), default="walk",
                   help="tiny: tests (<1 min, student_walk_tiny.yaml); walk: student_walk.yaml")  # fmt: skip
    w.add_argument("--seed", type=int, default=0)
    w.add_argument("--device", default="cpu", help="torch device for the student (cpu, cuda)")
    w.add_argument("--num-envs", type=int, default=None, help="environments (default: the config's)")
    w.add_argument("--minutes", type=float, default=None, help="time box (default: the config's, 40 for walk)")

    st = sub.add_parser(
        "student-step", help="hybrid DAgger+PPO from the student-walk bundle onto 4-22 cm platforms (stage 2)"
    )
    st.add_argument("--out", type=Path, required=True, help="output folder (curves.png, student_step.json, bundle)")
    st.add_argument("--size", choices=("tiny", "step"), default="step",
                    help="tiny: tests (<1 min, student_step_tiny.yaml); step: student_step.yaml")  # fmt: skip
    st.add_argument(
        "--init",
        type=Path,
        default=None,
        help="student bundle holding checkpoint.pt (or the .pt file) to start from; default: the config's "
        "run.init (models/student_walk)",
    )
    st.add_argument(
        "--gate-rate",
        type=float,
        default=None,
        help="trailing step-up rate at which lambda_D ramps down (default: the config's distill.gate_rate, 0.4)",
    )
    st.add_argument("--seed", type=int, default=0)
    st.add_argument("--device", default="cpu", help="torch device for the student (cpu, cuda)")
    st.add_argument("--num-envs", type=int, default=None, help="environments (default: the config's)")
    st.add_argument("--minutes", type=float, default=None, help="time box (default: the config's, 40 for step)")

    c = sub.add_parser("compare-walk", help="the same scripted walk under parkour sim for each bundle, side by side")
    c.add_argument("--bundles", default="g1_walk,models/student_walk", help="comma-separated bundle names or folders")
    c.add_argument("--out", type=Path, required=True, help="output folder (compare.json, compare.md, compare.png)")
    c.add_argument(
        "--robot-models",
        default="",
        help="comma-separated robot models to run each bundle on (G1: holosoma,mjlab; H1: unitree,simplified)",
    )


def task_list() -> str:
    """The registered tasks and their presets, for ``parkour train run --help``."""
    from training.registry import tasks

    lines = ["tasks (training/tasks/<task>/, each registered by its folder) and their presets (--config):"]
    for name, task in tasks().items():
        lines.append(f"  {name}: {task.summary}")
        lines.append(f"      presets: {', '.join(p.stem for p in task.preset_files()) or '(none)'}")
    return "\n".join(lines)


def parse_overrides(pairs: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs (VALUE read as YAML: numbers, booleans, lists) as config overrides."""
    import yaml

    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--set {pair!r}: expected KEY=VALUE, e.g. run.minutes=20")
        out[key.strip()] = yaml.safe_load(value)
    return out


def _train(config: str, out: Path, overrides: dict[str, Any], num_envs: int | None, note: str = "") -> dict[str, Any]:
    from training.rl.train import train

    return train(config, out, overrides, num_envs, note=note)


def run(args: argparse.Namespace) -> int:
    """Run the training verb the command line names.

    smoke writes DIR/smoke.json (teacher_return and student_loss per iteration, stage wall times, the sim
    run's summary, the bundle path) and DIR/curves.png. `run` trains through training/rl (rsl_rl's
    storage, PPO and distillation, our task configs and hooks) on the physics `--backend` names.
    student-walk reads student_walk.yaml, student-step student_step.yaml. On a
    terminal a run shows a progress bar; otherwise a line every 15 s.
    """
    if args.train_action == "run" and args.resume is not None:
        if args.config is not None or args.out is not None or args.num_envs is not None or args.backend is not None:
            raise ValueError("--resume RUN_DIR takes the run's own config, folder and environments; drop "
                             "--config, --out, --num-envs and --backend")  # fmt: skip
        from training.rl.train import resume

        r = resume(args.resume, parse_overrides(args.overrides), args.note)
        print(f"parkour train run: resumed {args.resume}, wrote {args.resume / (r['task'] + '.json')}")
        return 0
    if args.train_action == "run":
        if args.config is None or args.out is None:
            raise ValueError("parkour train run needs --config and --out (or --resume RUN_DIR)")
        overrides = parse_overrides(args.overrides)
        if args.device is not None:
            overrides["run.device"] = args.device
        if args.backend is not None:
            overrides["env.backend"] = args.backend
        r = _train(args.config, args.out, overrides, args.num_envs, args.note)
        made = f"bundle {r['bundle']}" if r.get("bundle") else f"teacher {r.get('teacher')}"
        print(f"parkour train run: wrote {Path(args.out) / (r['task'] + '.json')}, {made}")
        return 0
    if args.train_action in ("student-walk", "student-step"):
        walk = args.train_action == "student-walk"
        config = ("student_walk" if walk else "student_step") + ("_tiny" if args.size == "tiny" else "")
        overrides: dict[str, Any] = {"run.seed": args.seed, "run.device": args.device}
        if args.minutes is not None:
            overrides["run.minutes"] = args.minutes
        if not walk and args.init is not None:
            overrides["run.init"] = str(args.init)
        if not walk and args.gate_rate is not None:
            overrides["distill.gate_rate"] = args.gate_rate
        r = _train(config, args.out, overrides, args.num_envs)
        print(
            f"parkour train {args.train_action}: wrote {Path(args.out) / (r['task'] + '.json')}, bundle {r['bundle']}"
        )
        return 0
    if args.train_action == "compare-walk":
        from training.tasks.student_walk.compare import compare_walk

        bundles = [b.strip() for b in args.bundles.split(",") if b.strip()]
        if not bundles:
            raise ValueError("--bundles names no bundle")
        models = tuple(m.strip() for m in args.robot_models.split(",") if m.strip()) or ("",)
        compare_walk(bundles, args.out, robot_models=models)
        print((Path(args.out) / "compare.md").read_text(), end="")
        return 0
    # Imported here: torch and the training stack are not needed by other commands.
    from training.tasks.smoke.smoke import run_smoke

    def log(line: str) -> None:
        print(line, flush=True)

    result = run_smoke(args.out, config=args.config, seed=args.seed, size=args.size, sim=not args.no_sim, log=log)
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
