"""A real mjlab export: mjlab's G1 flat velocity task trained a few iterations, exported by mjlab's own code.

What ``parkour model import mjlab`` reads, made where a user's comes from: ``MjlabOnPolicyRunner``
trains ``Mjlab-Velocity-Flat-Unitree-G1`` (on warp's CPU device here: a contract, not a walker) and
``export_policy_to_onnx`` + ``get_base_metadata`` / ``attach_metadata_to_onnx`` write the ONNX as
``VelocityOnPolicyRunner.save`` does. One change to mjlab's task: the actor does not observe
``base_lin_vel`` (the G1's low state has no base linear velocity, so no parkour_core term computes
it and the stock task's export is refused for it). Writes OUT/policy.onnx, OUT/model.pt (the
checkpoint, for velocity_parity.py) and OUT/export.json. Outputs belong under runs/ (gitignored).

    .venv-mjlab/bin/python training/backends/mjlab/export_velocity.py --out runs/mjlab_velocity
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))
from training.backends.mjlab.venv import reexec_in_venv  # noqa: E402

STOCK_TASK = "Mjlab-Velocity-Flat-Unitree-G1"
DROPPED_TERM = "base_lin_vel"


def env_cfg(num_envs: int, play: bool = False, keep_lin_vel: bool = False) -> Any:
    """mjlab's G1 flat velocity config (``play``: its play variant, no observation noise, no pushes),
    without ``base_lin_vel`` in the actor's observation unless ``keep_lin_vel``."""
    from mjlab.tasks.velocity.config.g1.env_cfgs import unitree_g1_flat_env_cfg

    cfg = unitree_g1_flat_env_cfg(play=play)
    if not keep_lin_vel:
        del cfg.observations["actor"].terms[DROPPED_TERM]
    cfg.scene.num_envs = num_envs
    return cfg


def make_runner(cfg: Any, iterations: int, steps_per_env: int, log_dir: Path | None, seed: int) -> Any:
    """mjlab's environment wrapped for rsl_rl, and the velocity task's runner with mjlab's G1 PPO config."""
    from mjlab.envs import ManagerBasedRlEnv
    from mjlab.rl import RslRlVecEnvWrapper
    from mjlab.tasks.velocity.config.g1.rl_cfg import unitree_g1_ppo_runner_cfg
    from mjlab.tasks.velocity.rl import VelocityOnPolicyRunner

    agent = unitree_g1_ppo_runner_cfg()
    agent.max_iterations = iterations
    agent.num_steps_per_env = steps_per_env
    agent.save_interval = max(iterations, 1)
    agent.seed = seed
    agent.logger = "tensorboard"
    agent.upload_model = False
    cfg.seed = seed
    env = RslRlVecEnvWrapper(ManagerBasedRlEnv(cfg=cfg, device="cpu"), clip_actions=agent.clip_actions)
    return VelocityOnPolicyRunner(env, asdict(agent), None if log_dir is None else str(log_dir), "cpu")


def main(argv: list[str] | None = None) -> int:
    reexec_in_venv(__file__, "mjlab velocity export")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/mjlab_velocity"))
    parser.add_argument("--iterations", type=int, default=2)
    parser.add_argument("--num-envs", type=int, default=4)
    parser.add_argument("--steps-per-env", type=int, default=8, help="rsl_rl's num_steps_per_env (mjlab's: 24)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep-lin-vel", action="store_true", help="mjlab's stock actor (refused by the importer)")
    args = parser.parse_args(argv)
    os.environ["CUDA_VISIBLE_DEVICES"] = ""  # warp's CPU device, as mjlab's --gpu-ids None

    import torch
    from mjlab.rl import MjlabOnPolicyRunner
    from mjlab.rl.exporter_utils import attach_metadata_to_onnx, get_base_metadata

    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    runner = make_runner(env_cfg(args.num_envs, keep_lin_vel=args.keep_lin_vel), args.iterations,
                         args.steps_per_env, out / "run", args.seed)  # fmt: skip
    runner.learn(num_learning_iterations=args.iterations, init_at_random_ep_len=True)
    trained_s = time.perf_counter() - t0
    MjlabOnPolicyRunner.save(runner, str(out / "model.pt"))  # the checkpoint alone (velocity_parity.py loads it)
    runner.export_policy_to_onnx(str(out), "policy.onnx")
    env = runner.env.unwrapped
    metadata = get_base_metadata(env, "local")
    attach_metadata_to_onnx(str(out / "policy.onnx"), metadata)
    record = {
        "task": STOCK_TASK + ("" if args.keep_lin_vel else f" without the actor's {DROPPED_TERM}"),
        "device": "cpu",
        "num_envs": args.num_envs,
        "iterations": args.iterations,
        "env_steps": args.num_envs * args.steps_per_env * args.iterations,
        "train_wall_s": round(trained_s, 1),
        "torch": torch.__version__,
        "observation_names": metadata["observation_names"],
        "joint_names": metadata["joint_names"],
        "policy": str(out / "policy.onnx"),
        "checkpoint": str(out / "model.pt"),
    }
    (out / "export.json").write_text(json.dumps(record, indent=2))
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
