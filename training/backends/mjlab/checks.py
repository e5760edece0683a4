"""What the walking student's mjlab task observes, checked against our CPU code from the same state.

    .venv-mjlab/bin/python training/backends/mjlab/checks.py student_walk --out DIR [--num-envs 4] [--steps 40]

Run with any Python: without mjlab it re-runs itself under ``.venv-mjlab`` (as smoke.py). It writes
``DIR/student_walk_check.json``; ``training/backends/mjlab/test_smoke.py`` asserts on it.
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


def student_walk_check(num_envs: int, steps: int, out: Path, manual_reset_step: int = 10) -> dict:
    """The walking student's mjlab task (``walk_task.py``) against our CPU code from the same state.

    Camera noise off, randomization and mount jitter on, episodes cut to 0.5 s so time-outs reset them,
    and one environment reset by hand; stepped with the teacher's labels plus noise. After every step and
    reset: the ``policy`` group against parkour_core's ``build_observation`` with the manifest's terms; the
    gait phase against parkour_core's ``GaitClock`` fed the same commands and resets; the clean ray image
    against ``SimDepthCamera`` on the same model with that environment's mount jitter written into
    ``cam_pos``/``cam_quat`` (as the CPU env writes it); the ``depth`` group against ``preprocess_depth``
    of the CPU image of the tick whose exposure it shows, and that exposure against the CPU env's
    ``FrameSchedule`` called at the policy ticks with the same grid phase and latencies (the torch
    stream's draws, recorded). The teacher's labels and their inputs go to ``student_walk_teacher.npz``:
    ``WalkTeacher`` needs onnxruntime, which .venv-mjlab lacks, so ``test_smoke.py`` compares them in the
    runtime venv.
    """
    import copy
    import dataclasses

    import mujoco
    import numpy as np
    import torch
    from mjlab.rl import RslRlVecEnvWrapper

    from parkour_core.bundle import as_array
    from parkour_core.depth import preprocess_depth
    from parkour_core.gait import GaitClock
    from parkour_core.obs import build_observation
    from parkour_core.robots import G1
    from parkour_core.runner import RobotState, observation_input
    from parkour_sim.depth_camera import DEPTH_CAMERA_NAME, DepthNoise, FrameSchedule, SimDepthCamera
    from training.backends.mjlab import walk_task
    from training.backends.mjlab.depth import DEPTH_SENSOR
    from training.configs import load_train_config
    from training.motion_matching import quat
    from training.tasks.student_walk.task import walk_config

    cfg = load_train_config("student_walk_tiny", {"env.num_envs": num_envs, "env.episode_length_s": 0.5})
    camera = dataclasses.replace(walk_config(cfg, num_envs).camera, noise=DepthNoise(0.0, 0.0, 0.0))
    env, manifest = walk_task.make_env(cfg, "cpu", camera=camera)
    n = env.num_envs
    stream = env.command_manager.get_term("camera").stream
    drawn: list[list[float]] = [[] for _ in range(n)]  # each environment's latencies, in the order drawn
    expose = stream._expose

    def expose_recording(ids, exposed_s, raw) -> None:
        latency = stream._latency

        def recording(k: int):
            values = latency(k)
            for i, v in zip(ids.tolist(), values.tolist(), strict=True):
                drawn[i].append(v)
            return values

        stream._latency = recording  # type: ignore[method-assign]
        try:
            expose(ids, exposed_s, raw)
        finally:
            del stream._latency

    stream._expose = expose_recording  # type: ignore[method-assign]

    class Replay:  # FrameSchedule's rng: the latencies the torch stream drew for that environment
        def __init__(self, i: int) -> None:
            self.i = i

        def uniform(self, lo: float, hi: float) -> float:
            return drawn[self.i].pop(0)

    schedules: list = [None] * n  # the CPU env's FrameSchedule per environment, called at the policy ticks
    vec = RslRlVecEnvWrapper(env, clip_actions=float(manifest.action_clip))  # resets every environment
    robot = env.scene["robot"]
    sdk = [robot.joint_names.index(name) for name in G1.joint_names]
    walk, cam = env.command_manager.get_term("walk"), env.command_manager.get_term("camera")
    sensor = env.scene[DEPTH_SENSOR]
    default_q = as_array(manifest.default_joint_pos)
    clocks = [GaitClock(manifest.gait_period_s, env.step_dt) for _ in range(n)]

    # Our CPU camera on the same compiled model, one copy per environment for its mount jitter.
    base = env.sim.mj_model
    cam_id = base.camera(f"robot/{DEPTH_CAMERA_NAME}").id
    nominal_pos, nominal_quat = base.cam_pos[cam_id].copy(), base.cam_quat[cam_id].copy()
    models = [copy.copy(base) for _ in range(n)]
    cameras = [
        SimDepthCamera(m, camera.width, camera.height, "raycast", geom_groups=(walk_task.TERRAIN_GROUP,),
                       camera=f"robot/{DEPTH_CAMERA_NAME}")
        for m in models
    ]  # fmt: skip
    data = mujoco.MjData(base)
    box_geoms = np.flatnonzero((base.geom_type == mujoco.mjtGeom.mjGEOM_BOX) & (base.geom_size[:, 2] < 0.1))
    captures: list[dict[int, np.ndarray]] = [{} for _ in range(n)]
    err = {"obs": 0.0, "phase": 0.0, "raw_depth": 0.0, "policy_depth": 0.0, "stamp": 0.0}
    hole_mismatch, box_pixels, new_frames, resets, compared = 0, 0, 0, 0, 0
    last_stamp = np.full(n, np.nan)
    expected_stamp = np.full(n, np.nan)
    teacher: dict[str, list[np.ndarray]] = {k: [] for k in ("q", "dq", "quat", "gyro", "command", "last_action",
                                                              "phase", "labels")}  # fmt: skip

    def state():
        d = robot.data
        f = lambda t: t.detach().cpu().numpy().astype(np.float64)  # noqa: E731
        return (f(d.joint_pos[:, sdk]), f(d.joint_vel[:, sdk]), f(d.root_link_quat_w), f(d.root_link_ang_vel_b),
                f(walk.command), f(env.action_manager.action), f(walk.phase))  # fmt: skip

    def compare(obs, fresh: np.ndarray) -> None:
        nonlocal hole_mismatch, box_pixels, new_frames, compared
        q, dq, rq, gyro, cmd, last, phase = state()
        o = observation_input(manifest, RobotState(q, dq, rq, gyro), cmd, last, default_q, phase)
        err["obs"] = max(
            err["obs"], float(np.abs(obs["policy"].cpu().numpy() - build_observation(manifest.obs_terms, o)).max())
        )
        ours = np.stack([c.phase for c in clocks])
        err["phase"] = max(err["phase"], float(np.abs(np.angle(np.exp(1j * (phase - ours)))).max()))
        for key, value in zip(teacher, (q, dq, rq, gyro, cmd, last, phase, obs["teacher_actions"].cpu().numpy()),
                              strict=True):  # fmt: skip
            teacher[key].append(value)
        raw = sensor.depth().cpu().numpy().astype(np.float64)
        qpos = env.sim.data.qpos.cpu().numpy()
        now = np.rint(env.episode_length_buf.cpu().numpy()).astype(int)
        ext = cam.stream.extrinsics
        for i in range(n):
            m = models[i]
            if fresh[i]:  # the CPU env writes the episode's jitter into its model at reset
                m.cam_pos[cam_id] = nominal_pos + ext.pos[i].cpu().numpy()
                m.cam_quat[cam_id] = quat.mul(quat.from_rotvec(ext.rotvec[i].cpu().numpy().astype(np.float64)),
                                              nominal_quat)  # fmt: skip
                captures[i] = {}
            data.qpos[:] = qpos[i]
            mujoco.mj_kinematics(m, data)
            mujoco.mj_camlight(m, data)
            cpu = cameras[i].capture(data).astype(np.float64)
            box_pixels += int(np.isin(cameras[i]._geom_ids, box_geoms).sum())
            captures[i][int(now[i])] = cpu
            both = (cpu > 0) & (raw[i] > 0)
            hole_mismatch += int(((cpu > 0) != (raw[i] > 0)).sum())
            if both.any():
                err["raw_depth"] = max(err["raw_depth"], float(np.abs(cpu - raw[i])[both].max()))
            stamp = float(cam.stream.image_exposure_s[i])
            t = int(now[i]) * env.step_dt
            if fresh[i]:  # DepthPipeline.reset: the grid over the last latency + period, frames of the start state
                schedules[i] = FrameSchedule(camera.hz, *camera.latency_s, Replay(i), start_s=float(stream.start_s[i]))
                while schedules[i].exposure_due(t):
                    schedules[i].expose(schedules[i].next_exposure_s, None)
                expected = schedules[i].pop_due(t)[-1].exposure_s
            else:
                if schedules[i].exposure_due(t):
                    schedules[i].expose(t, None)
                due = schedules[i].pop_due(t)
                expected = due[-1].exposure_s if due else expected_stamp[i]
            expected_stamp[i] = expected
            err["stamp"] = max(err["stamp"], abs(stamp - expected))
            tick = max(0, round(stamp / env.step_dt))  # the reset's replayed frames are of the start state
            assert abs(stamp - tick * env.step_dt) < 1e-6 or stamp <= 0.0, f"exposure {stamp} off the policy ticks"
            shown = preprocess_depth(captures[i][tick].astype(np.float32), manifest.depth.spec)
            err["policy_depth"] = max(err["policy_depth"], float(np.abs(obs["depth"][i].cpu().numpy() - shown).max()))
            new_frames += int(stamp != last_stamp[i])
            last_stamp[i] = stamp
            compared += 1

    obs = vec.get_observations()
    for i, c in enumerate(clocks):
        c.advance(walk.command[i].cpu().numpy().astype(np.float64))
    compare(obs, np.ones(n, dtype=bool))
    rng = torch.Generator().manual_seed(0)
    for k in range(steps):
        actions = obs["teacher_actions"] + 0.3 * torch.randn(n, env.action_manager.total_action_dim, generator=rng)
        obs, _, dones, _ = vec.step(actions)
        done = dones.bool().cpu().numpy()
        resets += int(done.sum())
        cmd = walk.command.cpu().numpy().astype(np.float64)
        for i, c in enumerate(clocks):
            if done[i]:
                c.reset()
            c.advance(cmd[i])
        compare(obs, done)
        if k == manual_reset_step:  # an explicit reset of one environment (mjlab's reset(env_ids) path)
            env.reset(env_ids=torch.tensor([1]))
            obs = vec.get_observations()
            clocks[1].reset()
            clocks[1].advance(walk.command[1].cpu().numpy().astype(np.float64))
            resets += 1
            compare(obs, np.arange(n) == 1)
    np.savez(out / "student_walk_teacher.npz", **{k: np.stack(v) for k, v in teacher.items()})
    result = {
        "num_envs": n,
        "steps": steps,
        "resets": resets,
        "compared_images": compared,
        "new_frames_shown": new_frames,
        "box_pixels_seen": box_pixels,
        "policy_obs_size": int(obs["policy"].shape[1]),
        "expected_policy_obs_size": sum(t.dims for t in manifest.obs_terms),
        "depth_shape": list(obs["depth"].shape),
        "teacher_actions_shape": list(obs["teacher_actions"].shape),
        "camera_rays": [camera.height, camera.width],
        "max_abs_error_policy_obs": err["obs"],
        "max_abs_error_gait_phase_rad": err["phase"],
        "max_abs_error_raw_depth_m": err["raw_depth"],
        "raw_depth_hole_mismatch_pixels": hole_mismatch,
        "max_abs_error_policy_depth": err["policy_depth"],
        "max_abs_error_exposure_stamp_s": err["stamp"],
        "max_episode_length": int(env.max_episode_length),
        "max_mount_jitter": [
            float(cam.stream.extrinsics.pos.abs().max()),
            float(cam.stream.extrinsics.rotvec.abs().max()),
        ],
    }
    (out / "student_walk_check.json").write_text(json.dumps(result, indent=2))
    vec.close()
    return result


def main(argv: list[str] | None = None) -> int:
    reexec_in_venv(__file__, "mjlab checks")
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    sys.path[:0] = CHECKOUT_PATHS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("student_walk",))
    parser.add_argument("--num-envs", type=int, default=4)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    result = {"student_walk": student_walk_check(args.num_envs, args.steps, args.out)}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
