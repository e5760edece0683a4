"""mjlab's own G1 velocity environment stepped by its own policy, every tick recorded for the runtime.

Loads export_velocity.py's checkpoint into mjlab's play environment of the same task (no observation
noise, no pushes; the encoder bias kept) and steps it with mjlab's inference policy. Each tick it
records the state the robot would report (joint positions as the encoders read them, joint and
pelvis velocities, the pelvis quaternion, the twist command, the previous action, the episode step)
beside what mjlab computed from it: the actor's observation, the action and the joint position
targets. ``test_velocity_parity.py`` (runtime .venv) feeds those states to PolicyRunner on the
imported bundle and compares. Writes OUT (an .npz).

    .venv-mjlab/bin/python training/backends/mjlab/velocity_parity.py runs/mjlab_velocity/model.pt --out parity.npz
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))
from training.backends.mjlab.export_velocity import env_cfg, make_runner  # noqa: E402
from training.backends.mjlab.venv import reexec_in_venv  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    reexec_in_venv(__file__, "mjlab velocity parity")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=Path, help="export_velocity.py's model.pt")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--num-envs", type=int, default=2)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    os.environ["CUDA_VISIBLE_DEVICES"] = ""

    import torch

    runner = make_runner(env_cfg(args.num_envs, play=True), 1, 8, None, args.seed)
    runner.load(str(args.checkpoint))
    policy = runner.get_inference_policy("cpu")
    env = runner.env
    base = env.unwrapped
    robot = base.scene["robot"]
    gyro = base.scene["robot/imu_ang_vel"]
    action_term = base.action_manager.get_term("joint_pos")
    free_q, free_v = robot.indexing.free_joint_q_adr, robot.indexing.free_joint_v_adr
    keys = ("joint_pos", "encoder_bias", "joint_vel", "quat_wxyz", "pelvis_ang_vel_b", "imu_gyro", "command",
            "last_action", "episode_step", "obs", "action", "target", "done")  # fmt: skip
    rec: dict[str, list[np.ndarray]] = {k: [] for k in keys}
    obs = env.get_observations()
    with torch.no_grad():
        for _ in range(args.steps):
            data = base.sim.data
            rec["joint_pos"].append(robot.data.joint_pos.numpy().copy())  # qpos, what the physics holds
            rec["encoder_bias"].append(robot.data.encoder_bias.numpy().copy())
            rec["joint_vel"].append(robot.data.joint_vel.numpy().copy())
            rec["quat_wxyz"].append(data.qpos[:, free_q[3:7]].numpy().copy())
            rec["pelvis_ang_vel_b"].append(data.qvel[:, free_v[3:6]].numpy().copy())  # a free joint's: body frame
            rec["imu_gyro"].append(gyro.data.numpy().copy())
            rec["command"].append(base.command_manager.get_command("twist").numpy().copy())
            rec["last_action"].append(base.action_manager.action.numpy().copy())
            rec["episode_step"].append(base.episode_length_buf.numpy().copy())
            rec["obs"].append(obs["actor"].numpy().copy())
            action = policy(obs)
            rec["action"].append(action.numpy().copy())
            obs, _, dones, _ = env.step(action)
            rec["target"].append(action_term._processed_actions.numpy().copy())  # default + scale x action
            rec["done"].append(dones.numpy().copy())
    model = base.sim.mj_model
    ctrl = [next(a.id for a in robot.spec.actuators if a.target.split("/")[-1] == j) for j in robot.joint_names]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, Any] = dict(
        joint_names=np.array(robot.joint_names),
        observation_names=np.array(base.observation_manager.active_terms["actor"]),
        action_scale=action_term._scale[0].numpy(),
        default_joint_pos=robot.data.default_joint_pos[0].numpy(),
        stiffness=model.actuator_gainprm[ctrl, 0],
        damping=-model.actuator_biasprm[ctrl, 2],
        step_dt=np.array(base.step_dt),
        **{k: np.stack(v, axis=1) for k, v in rec.items()},  # [env, tick, ...]
    )
    np.savez(args.out, **arrays)
    done = np.stack(rec["done"], axis=1)
    print(f"mjlab velocity parity: {args.num_envs} envs x {args.steps} ticks ({int(done.sum())} resets) -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
