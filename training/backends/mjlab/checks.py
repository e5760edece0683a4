"""What the mjlab tasks observe and reward, checked against our CPU code from the same state.

    .venv-mjlab/bin/python training/backends/mjlab/checks.py teacher --out DIR [--num-envs 4]
    .venv-mjlab/bin/python training/backends/mjlab/checks.py depth --out DIR [--num-envs 4]
    .venv-mjlab/bin/python training/backends/mjlab/checks.py student_walk --out DIR [--num-envs 4] [--steps 40]

Run with any Python: without mjlab it re-runs itself under ``.venv-mjlab`` (as smoke.py). Each
writes ``DIR/<name>_check.json`` (``all``: the three in one process); ``training/backends/mjlab/test_smoke.py``
asserts on them. Each ``*_check`` function says what it compares.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from training.backends.mjlab.smoke import CHECKOUT_PATHS, reexec_in_venv  # noqa: E402 (stdlib only)


def _obs_slice(env, group: str, term: str) -> slice:
    names = env.observation_manager.active_terms[group]
    dims = env.observation_manager.group_obs_term_dim[group]
    start = 0
    for name, dim in zip(names, dims, strict=True):
        size = math.prod(dim)
        if name == term:
            return slice(start, start + size)
        start += size
    raise KeyError(f"no term {term!r} in observation group {group!r}: {names}")


def teacher_check(num_envs: int, out: Path, motion: list[str] | None = None, frame_fraction: float = 0.0) -> dict:
    """The PHP teacher's height scan against the CPU env's analytic scan.

    On the two toy references (a 10 cm and a 20 cm box 0.18 m ahead), every environment put at its
    reference's first frame (``MotionCommand.reset_to_frame``: no randomization), then mjlab's observation:
    the ``height_scan`` term's size, each environment's reference (its terrain column) and tile origin, and
    the scan against the CPU env's analytic scan (:mod:`training.envs.privileged`) of the same pelvis pose
    over that reference's boxes.
    """
    import numpy as np
    import torch
    from mjlab.envs import ManagerBasedRlEnv

    from training.backends.mjlab import task
    from training.backends.mjlab.terrain import Boxes
    from training.configs import load_train_config
    from training.envs import privileged

    cfg = load_train_config("smoke_cpu", {"env.num_envs": num_envs})
    motions = task.motions_for(cfg, out, motion)  # the toy references unless synth files are named
    env = ManagerBasedRlEnv(cfg=task.env_cfg(cfg, motions), device="cpu")
    env.reset()
    cmd = env.command_manager.get_term("motion")
    ids = torch.arange(env.num_envs)
    frame = round(frame_fraction * (int(cmd.motion.lengths.min()) - 1))  # one local frame, valid for every reference
    cmd.reset_to_frame(ids, frame)
    env.sim.forward()
    env.sim.sense()
    obs = env.observation_manager.compute(update_history=True)  # without it: the cached reset observation
    scans = {
        g: obs[g][:, _obs_slice(env, g, "height_scan")].cpu().numpy().astype(np.float64) for g in ("actor", "critic")
    }

    robot = env.scene["robot"]
    origins = env.scene.env_origins.cpu().numpy().astype(np.float64)
    pelvis = robot.data.body_link_pos_w[:, robot.body_names.index(task.ANCHOR_BODY)].cpu().numpy().astype(np.float64)
    quat = robot.data.body_link_quat_w[:, robot.body_names.index(task.ANCHOR_BODY)].cpu().numpy().astype(np.float64)
    ref_id = cmd.ref_id.cpu().numpy()
    boxes = [Boxes.of_motion(m) for m in motions]
    expected = np.zeros_like(scans["actor"])
    for i in range(env.num_envs):
        b = boxes[ref_id[i]]
        inp = dict(
            pelvis_pos=(pelvis[i] - origins[i])[None], pelvis_quat=quat[i][None],
            box_center=b.center[None], box_half=b.half_size[None], box_yaw=b.yaw[None],
        )  # fmt: skip
        points = privileged.scan_points_world(inp["pelvis_pos"], inp["pelvis_quat"], privileged.scan_grid())
        terrain = privileged.terrain_height(inp["box_center"], inp["box_half"], inp["box_yaw"], points)
        expected[i] = inp["pelvis_pos"][:, 2] - terrain[0]
    grid = privileged.scan_grid()
    on_box = grid[:, 0] > 0.18  # the toy boxes' near edge (other references: just the front rows)
    result = {
        "num_envs": env.num_envs,
        "frame": frame,
        "scan_size": {g: int(s.shape[1]) for g, s in scans.items()},
        "expected_size": privileged.SCAN_POINTS_PER_SIDE**2,
        "ref_id": ref_id.tolist(),
        "terrain_column": env.scene.terrain.terrain_types.cpu().numpy().tolist(),
        "env_origin": origins.round(4).tolist(),
        "box_height_m": [float((b.center[:, 2] + b.half_size[:, 2]).max()) for b in boxes],
        "pelvis_height_m": (pelvis[:, 2] - origins[:, 2]).round(4).tolist(),
        "scan_on_box_mean": [float(s[on_box].mean()) for s in scans["actor"]],
        "scan_off_box_mean": [float(s[~on_box].mean()) for s in scans["actor"]],
        "seen_box_height_m": [float(s[~on_box].mean() - s[on_box].mean()) for s in scans["actor"]],
        "max_abs_error_vs_cpu_scan_m": float(np.abs(scans["actor"] - expected).max()),
        "actor_equals_critic_scan": bool(np.allclose(scans["actor"], scans["critic"])),
    }
    (out / "teacher_check.json").write_text(json.dumps(result, indent=2))
    return result


def camera_ray_pattern_cfg(mount, width: int, height: int):
    """A ray-cast pattern with our CPU camera's rays (``parkour_sim.depth_camera.ray_directions``: pixel
    centres over the D435's 87 x 58 deg), from the camera's position on its mount body."""
    import numpy as np
    import torch
    from mjlab.sensor import GridPatternCfg

    from parkour_sim.depth_camera import MOUNT_FROM_MUJOCO_CAMERA, ray_directions, rpy_matrix

    cam = ray_directions(width, height)  # (x, y, -1): z-depth = distance / |dir|
    body = cam @ (rpy_matrix(mount.rpy) @ MOUNT_FROM_MUJOCO_CAMERA).T

    @dataclass
    class CameraRaysPatternCfg(GridPatternCfg):
        def generate_rays(self, mj_model, device):
            offsets = torch.tensor(np.tile(mount.xyz, (len(body), 1)), dtype=torch.float32, device=device)
            dirs = torch.tensor(body / np.linalg.norm(body, axis=1, keepdims=True), dtype=torch.float32, device=device)
            return offsets, dirs

    return CameraRaysPatternCfg(), np.linalg.norm(cam, axis=1)


def depth_check(num_envs: int, out: Path, repeats: int = 10) -> dict:
    """Whether mjlab gives each environment the students' 58 x 87 depth image.

    The teacher env plus the D435 on the G1's torso (``parkour_sim.depth_camera.add_depth_camera``: the
    mount of the robot spec, 87 x 58 deg) as mjlab's ``CameraSensorCfg(data_types=("depth",))``
    (mujoco_warp's BVH ray-traced renderer) and as a ray-cast pattern of our camera's rays
    (:func:`camera_ray_pattern_cfg`), each image against our CPU ray-cast depth (``SimDepthCamera``,
    ``mj_multiRay``) from the same state; and the time of a render, of a sense (render + height scan) and
    of an env step on this device.
    """
    import time

    import mujoco
    import mujoco_warp as mjwarp
    import numpy as np
    import torch
    from mjlab.envs import ManagerBasedRlEnv
    from mjlab.sensor import CameraSensorCfg, ObjRef, RayCastSensorCfg

    from parkour_core.robots import G1
    from parkour_sim.depth_camera import D435_FOV_DEG, DEPTH_CAMERA_NAME, SimDepthCamera, add_depth_camera
    from training.backends.mjlab import task
    from training.backends.mjlab.terrain import TERRAIN_GEOM_GROUP
    from training.configs import load_train_config

    width, height = 87, 58
    cfg = load_train_config("smoke_cpu", {"env.num_envs": num_envs})
    motions = task.toy_motions(out / "motions", fps=cfg.env.control_hz)
    env_cfg = task.env_cfg(cfg, motions)
    robot_cfg = env_cfg.scene.entities["robot"]
    base_spec_fn = robot_cfg.spec_fn

    def spec_with_camera():
        spec = base_spec_fn()
        add_depth_camera(spec.body(G1.camera.body), G1.camera)
        return spec

    robot_cfg.spec_fn = spec_with_camera
    camera = CameraSensorCfg(
        name="depth", camera_name=f"robot/{DEPTH_CAMERA_NAME}", width=width, height=height, data_types=("depth",),
        use_textures=False, enabled_geom_groups=(TERRAIN_GEOM_GROUP,),
    )  # fmt: skip
    pattern, ray_norm = camera_ray_pattern_cfg(G1.camera, width, height)
    rays = RayCastSensorCfg(
        name="depth_rays", frame=ObjRef(type="body", name=G1.camera.body, entity="robot"), pattern=pattern,
        ray_alignment="base", max_distance=100.0, include_geom_groups=(TERRAIN_GEOM_GROUP,),
    )  # fmt: skip
    env_cfg.scene.sensors = (*env_cfg.scene.sensors, camera, rays)
    env = ManagerBasedRlEnv(cfg=env_cfg, device="cpu")
    env.reset()
    env.command_manager.get_term("motion").reset_to_frame(torch.arange(env.num_envs), 0)
    env.sim.forward()
    env.sim.sense()
    rendered = env.scene["depth"].data.depth.cpu().numpy()[..., 0].astype(np.float64)  # (N, H, W)
    dist = env.scene["depth_rays"].data.distances.cpu().numpy().astype(np.float64)  # (N, H*W)
    cast = np.where(dist >= 0, dist / ray_norm, 0.0).reshape(-1, height, width)

    # Our CPU depth from the same state (mj_multiRay over the same model, env 0's qpos): at the D435's
    # 87 x 58 deg, and at the field of view a square-pixel render of 87 x 58 pixels has (58 deg high).
    model = env.sim.mj_model
    data = mujoco.MjData(model)
    data.qpos[:] = env.sim.data.qpos[0].cpu().numpy()
    mujoco.mj_kinematics(model, data)
    mujoco.mj_camlight(model, data)
    cpu = SimDepthCamera(
        model, width, height, "raycast", geom_groups=(TERRAIN_GEOM_GROUP,), camera=f"robot/{DEPTH_CAMERA_NAME}",
        max_depth_m=1e6,
    )  # fmt: skip
    ours = cpu.capture(data).astype(np.float64)
    square_fov_x = 2.0 * np.degrees(np.arctan(width / height * np.tan(np.radians(D435_FOV_DEG[1]) / 2.0)))
    import parkour_sim.depth_camera as dc

    cpu._directions_cam = dc.ray_directions(width, height, (square_fov_x, D435_FOV_DEG[1]))
    ours_square = cpu.capture(data).astype(np.float64)

    def err(a, b):
        both = (a > 0) & (b > 0)
        return float(np.abs(a - b)[both].max()), int(((a > 0) != (b > 0)).sum())

    rc = env.sim._sensor_context.render_context
    ray_sensor = env.scene["depth_rays"]

    def timed(fn) -> float:
        fn()
        t0 = time.perf_counter()
        for _ in range(repeats):
            fn()
        return (time.perf_counter() - t0) / repeats * 1e3

    render_ms = timed(lambda: mjwarp.render(env.sim.wp_model, env.sim.wp_data, rc))
    rays_ms = timed(lambda: (ray_sensor.prepare_rays(), ray_sensor.raycast_kernel(rc), ray_sensor.postprocess_rays()))
    sense_ms = timed(env.sim.sense)
    zero = torch.zeros(env.num_envs, env.action_manager.total_action_dim)
    step_ms = timed(lambda: env.step(zero))
    e_render, h_render = err(rendered[0], ours)
    e_render_sq, h_render_sq = err(rendered[0], ours_square)
    e_rays, h_rays = err(cast[0], ours)
    result = {
        "num_envs": env.num_envs,
        "device": "cpu (warp)",
        "camera_sensor_image_shape": list(env.scene["depth"].data.depth.shape),
        "ray_sensor_rays_per_env": int(dist.shape[1]),
        "depth_min_max_m": [float(rendered[rendered > 0].min()), float(rendered.max())],
        "square_pixel_fov_x_deg": round(float(square_fov_x), 2),
        "camera_sensor_vs_cpu_87x58deg": {"max_abs_error_m": e_render, "hole_mismatch_pixels": h_render},
        "camera_sensor_vs_cpu_square_pixel_fov": {"max_abs_error_m": e_render_sq, "hole_mismatch_pixels": h_render_sq},
        "ray_sensor_vs_cpu_87x58deg": {"max_abs_error_m": e_rays, "hole_mismatch_pixels": h_rays},
        "render_ms_all_envs": round(render_ms, 2),
        "ray_sensor_ms_all_envs": round(rays_ms, 2),
        "sense_ms_all_envs_render_rays_and_scan": round(sense_ms, 2),
        "env_step_ms_all_envs": round(step_ms, 2),
        "repeats": repeats,
    }
    (out / "depth_check.json").write_text(json.dumps(result, indent=2))
    return result


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
    parser.add_argument("what", choices=("teacher", "depth", "student_walk", "all"))
    parser.add_argument("--num-envs", type=int, default=4)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--motion", action="append", default=[], help="teacher: synth motion_*.npz (default: toy)")
    parser.add_argument("--frame-fraction", type=float, default=0.0, help="teacher: where in the references")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    result = {}
    if args.what in ("teacher", "all"):
        result["teacher"] = teacher_check(args.num_envs, args.out, args.motion, args.frame_fraction)
    if args.what in ("depth", "all"):
        result["depth"] = depth_check(args.num_envs, args.out)
    if args.what in ("student_walk", "all"):
        result["student_walk"] = student_walk_check(args.num_envs, args.steps, args.out)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
