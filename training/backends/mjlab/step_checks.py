"""What the mjlab step-up task observes and labels, checked against our CPU code from the same state.

    .venv-mjlab/bin/python training/backends/mjlab/step_checks.py --out DIR [--num-envs 4] [--steps 200]

Run with any Python: without mjlab it re-runs itself under ``.venv-mjlab`` (as smoke.py). Writes
``DIR/student_step_check.json`` and ``DIR/student_step_teacher.npz``; ``test_smoke.py`` asserts on them.
:func:`student_step_check` says what it compares.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from training.backends.mjlab.smoke import CHECKOUT_PATHS, reexec_in_venv  # noqa: E402 (stdlib only)

TEACHER_COMMAND_GAIN = 1.5  # not 1: the labels are checked with the walking policy commanded faster than the student


def student_step_check(num_envs: int, steps: int, out: Path) -> dict:
    """The step-up task's reflex labels and privileged group against our CPU code.

    The task (``step_task.py``: randomization on, camera noise off, walk episodes in half the episodes and
    4 s episodes, so both kinds start and end) is stepped with its teacher's labels plus noise. After every
    step, from the state the env observed (qpos and qvel after the resets):

    - the feet's positions and velocities by C MuJoCo's ``mj_forward`` on the same compiled model
      (``BatchedMujoco.bodies``' formula), and the step-up reflex of
      ``training.tasks.student_step.teacher.lift_angles`` (numpy) on them, the base velocity and the boxes of
      the environment's tile as the pool lists them, against the lift the ``teacher_actions`` term added;
    - the ``privileged`` group against ``training.envs.privileged.build_privileged`` (numpy) of the
      standing reference at mjlab's standing height, over the same boxes: the analytic height scan of the
      pool's boxes against the ray-cast sensor reads which tile each environment stands on and where its
      boxes are.

    The teacher is commanded ``TEACHER_COMMAND_GAIN`` times the forward speed, under the supervisor's
    limits (``course.supervisor_limits``: its labels' targets clamped inside the joint limits). The labels
    and the teacher's inputs (the student's command among them) go to ``student_step_teacher.npz``:
    ``WalkTeacher`` needs onnxruntime, which .venv-mjlab lacks, so ``test_smoke.py`` rebuilds
    ``StepTeacher.act``'s labels in the runtime venv.
    """
    import dataclasses

    import mujoco
    import numpy as np
    import torch
    from mjlab.rl import RslRlVecEnvWrapper

    from parkour_core.bundle import as_array
    from parkour_core.robots import G1
    from parkour_sim.depth_camera import DepthNoise
    from training.backends.mjlab import step_task, walk_task
    from training.configs import load_train_config
    from training.envs.privileged import PrivilegedInput, build_privileged
    from training.tasks.student_step.teacher import FEET, lift_angles
    from training.tasks.student_walk.task import walk_config

    cfg = load_train_config(
        "student_step_tiny",
        {"env.num_envs": num_envs, "env.episode_length_s": 3.0, "course.walk_fraction": 0.3,
         "course.teacher_command_gain": TEACHER_COMMAND_GAIN, "course.supervisor_limits": True},
    )  # fmt: skip
    camera = dataclasses.replace(walk_config(cfg, num_envs).camera, noise=DepthNoise(0.0, 0.0, 0.0))
    env, manifest, pool = step_task.make_env(cfg, "cpu", camera=camera)
    n = env.num_envs
    vec = RslRlVecEnvWrapper(env, clip_actions=float(manifest.action_clip))
    robot = env.scene["robot"]
    episodes = env._step_episodes
    teacher = env.observation_manager._group_obs_term_cfgs["teacher_actions"][0].func
    walk = env.command_manager.get_term("walk")
    m = env.sim.mj_model
    data = mujoco.MjData(m)
    feet = np.array([m.body(f"robot/{name}").id for name in FEET])
    q_adr = np.array([m.jnt_qposadr[m.joint(f"robot/{name}").id] for name in G1.joint_names])
    v_adr = np.array([m.jnt_dofadr[m.joint(f"robot/{name}").id] for name in G1.joint_names])
    default_q = as_array(manifest.default_joint_pos)
    anchor_height = walk_task.standing_height(default_q)
    err = {"lift": 0.0, "privileged": 0.0, "height_scan": 0.0}
    counts = {"reflex_fired": 0, "course_env_steps": 0, "walk_env_steps": 0, "resets": 0, "scan_on_box_points": 0}
    record: dict[str, list[np.ndarray]] = {k: [] for k in ("q", "dq", "quat", "gyro", "command", "last_action", "phase",
                                                           "foot_pos", "foot_vel", "base_vel", "center", "half", "yaw",
                                                           "labels")}  # fmt: skip
    tiles_seen: set[int] = set()
    f = lambda t: t.detach().cpu().numpy().astype(np.float64)  # noqa: E731

    def compare(obs) -> None:
        qpos, qvel = f(env.sim.data.qpos), f(env.sim.data.qvel)
        origin = f(env.scene.env_origins)
        tile = episodes.tile.cpu().numpy()
        center, half, yaw = pool.center[tile], pool.half[tile], pool.yaw[tile]
        foot_pos, foot_vel = np.zeros((n, 2, 3)), np.zeros((n, 2, 3))
        for i in range(n):
            data.qpos[:], data.qvel[:] = qpos[i], qvel[i]
            mujoco.mj_forward(m, data)
            pos = data.xpos[feet] - origin[i]
            com = data.subtree_com[m.body_rootid[feet]] - origin[i]
            ang = data.cvel[feet, 0:3]
            foot_pos[i], foot_vel[i] = pos, data.cvel[feet, 3:6] + np.cross(ang, pos - com)
        base_vel = qvel[:, 0:3]
        real = half[:, :, 0] > 0  # the pool's padding slots are no boxes
        lift = np.stack([lift_angles(foot_pos[i], foot_vel[i], base_vel[i], center[i][real[i]], half[i][real[i]],
                                     yaw[i][real[i]]) for i in range(n)])  # fmt: skip
        err["lift"] = max(err["lift"], float(np.abs(lift - f(teacher.last_lift)).max()))
        counts["reflex_fired"] += int((lift > 0).sum())
        on_course = episodes.on_course.cpu().numpy()
        counts["course_env_steps"] += int(on_course.sum())
        counts["walk_env_steps"] += int((~on_course).sum())
        tiles_seen.update(tile.tolist())
        root = qpos[:, 0:3] - origin
        quat = qpos[:, 3:7]
        q, dq = qpos[:, q_adr], qvel[:, v_adr]
        last = f(env.action_manager.action)
        gyro = f(robot.data.root_link_ang_vel_b)
        expected = build_privileged(
            PrivilegedInput(
                ref_joint_pos=np.tile(G1.default_q, (n, 1)), ref_joint_vel=np.zeros((n, 29)),
                ref_anchor_pos=np.tile([0.0, 0.0, anchor_height], (n, 1)),
                ref_anchor_quat=np.tile([1.0, 0.0, 0.0, 0.0], (n, 1)),
                pelvis_pos=root, pelvis_quat=quat, pelvis_lin_vel_w=base_vel, pelvis_ang_vel_b=gyro, joint_pos=q,
                joint_vel=dq, default_q=default_q, last_action=last, box_center=center, box_half=half, box_yaw=yaw,
            )
        )  # fmt: skip
        got = obs["privileged"].cpu().numpy()
        err["privileged"] = max(err["privileged"], float(np.abs(got[:, :-121] - expected[:, :-121]).max()))
        err["height_scan"] = max(err["height_scan"], float(np.abs(got[:, -121:] - expected[:, -121:]).max()))
        counts["scan_on_box_points"] += int((expected[:, -121:] < root[:, 2:3] - 1e-3).sum())
        for key, value in zip(record, (q, dq, quat, gyro, f(walk.command), last, f(walk.phase), foot_pos, foot_vel,
                                       base_vel, center, half, yaw, obs["teacher_actions"].cpu().numpy()),
                              strict=True):  # fmt: skip
            record[key].append(value)

    obs = vec.get_observations()
    compare(obs)
    rng = torch.Generator().manual_seed(0)
    for _ in range(steps):
        actions = obs["teacher_actions"] + 0.1 * torch.randn(n, env.action_manager.total_action_dim, generator=rng)
        obs, _, dones, _ = vec.step(actions)
        counts["resets"] += int(dones.sum())
        compare(obs)
    np.savez(out / "student_step_teacher.npz", **{k: np.stack(v) for k, v in record.items()})  # type: ignore[arg-type]
    result = {
        "num_envs": n,
        "steps": steps,
        "privileged_size": int(obs["privileged"].shape[1]),
        "teacher_actions_shape": list(obs["teacher_actions"].shape),
        "teacher_command_gain": cfg.course.teacher_command_gain,
        "supervisor_limits": cfg.course.supervisor_limits,
        "max_abs_error_lift_rad": err["lift"],
        "max_abs_error_privileged_without_scan": err["privileged"],
        "max_abs_error_height_scan_m": err["height_scan"],
        "tiles_seen": len(tiles_seen),
        **counts,
    }
    (out / "student_step_check.json").write_text(json.dumps(result, indent=2))
    vec.close()
    return result


def main(argv: list[str] | None = None) -> int:
    reexec_in_venv(__file__, "mjlab step checks")
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    sys.path[:0] = CHECKOUT_PATHS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", type=int, default=4)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    print(json.dumps(student_step_check(args.num_envs, args.steps, args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
