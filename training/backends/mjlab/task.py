"""Our PHP teacher as an mjlab task: motion tracking of `parkour mm synth` references on MuJoCo-Warp.

Runs inside ``.venv-mjlab`` only (setup.sh; mjlab pins mujoco 3.11). It is a thin adapter: mjlab's
own managers and its BeyondMimic tracking terms (``mjlab.tasks.tracking``) do the work; this module
sets them from a :class:`training.configs.TrainConfig`: the references (:func:`convert_motion`;
several per run, :mod:`training.backends.mjlab.motion`), each reference's boxes on its own tile with
the privileged height scan (:mod:`training.backends.mjlab.terrain`), rewards, terminations,
randomization and start sampling (:func:`env_cfg`), and PPO (:func:`rl_cfg`).

Not mapped: the CPU env's other privileged terms that mjlab's tracking observation lacks (global
pelvis pose, ``pelvis_pos_w``/``pelvis_ori_w``); a new reference per reset (an environment keeps
its tile's reference for the run); ``env.reference_s`` (references are used whole); and the
student (mjlab has no DAgger+PPO hybrid: the student trains on our algorithms, training/algorithms;
its depth image is possible on mjlab, see ``training/backends/mjlab/__init__.py``).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import replace
from pathlib import Path

import mujoco
import numpy as np

from training.configs import TrainConfig

TASK_ID = "Parkour-PHP-Teacher-G1"
ANCHOR_BODY = "pelvis"  # PHP's privileged pelvis pose; BeyondMimic's default anchor is the torso
TERRAIN_KEYS = ("terrain_box_center", "terrain_box_half_size", "terrain_box_yaw")
END_EFFECTORS = ("left_ankle_roll_link", "right_ankle_roll_link", "left_wrist_yaw_link", "right_wrist_yaw_link")


# ----------------------------------------------------------------------------- references


def _g1_model() -> mujoco.MjModel:
    from mjlab.asset_zoo.robots.unitree_g1.g1_constants import get_spec

    return get_spec().compile()


def _quat_log_rate(q: np.ndarray, fps: float) -> np.ndarray:
    """World angular velocity (T, B, 3) from w-first unit quaternions (T, B, 4), central differences."""
    t = q.shape[0]
    out = np.zeros((*q.shape[:-1], 3))
    for i in range(t):
        a, b = max(i - 1, 0), min(i + 1, t - 1)
        if a == b:
            continue
        for j in range(q.shape[1]):
            dq = np.zeros(4)
            qa_inv = np.zeros(4)
            mujoco.mju_negQuat(qa_inv, q[a, j])
            mujoco.mju_mulQuat(dq, q[b, j], qa_inv)
            vel = np.zeros(3)
            mujoco.mju_quat2Vel(vel, dq, (b - a) / fps)
            out[i, j] = vel
    return out


def kinematic_motion(root_pos: np.ndarray, root_quat: np.ndarray, joint_pos: dict[str, np.ndarray], fps: float) -> dict:
    """mjlab's motion arrays from a root trajectory and named joint trajectories (FK on mjlab's G1)."""
    model = _g1_model()
    data = mujoco.MjData(model)
    names = [model.joint(i).name for i in range(model.njnt) if model.jnt_type[i] != mujoco.mjtJoint.mjJNT_FREE]
    missing = sorted(set(names) - set(joint_pos))
    if missing:
        raise ValueError(f"the motion has no trajectory for mjlab's G1 joints {missing}")
    t = root_pos.shape[0]
    q = np.zeros((t, len(names)))
    for k, name in enumerate(names):
        q[:, k] = joint_pos[name]
    nb = model.nbody - 1  # without the world body: mjlab's Entity.body_names order
    body_pos = np.zeros((t, nb, 3))
    body_quat = np.zeros((t, nb, 4))
    for i in range(t):
        data.qpos[:3] = root_pos[i]
        data.qpos[3:7] = root_quat[i]
        for k, name in enumerate(names):
            data.qpos[model.jnt_qposadr[model.joint(name).id]] = q[i, k]
        mujoco.mj_kinematics(model, data)
        body_pos[i] = data.xpos[1:]
        body_quat[i] = data.xquat[1:]
    return {
        "fps": np.array(fps),
        "joint_names": np.array(names),
        "body_names": np.array([model.body(i).name for i in range(1, model.nbody)]),
        "joint_pos": q.astype(np.float32),
        "joint_vel": np.gradient(q, 1.0 / fps, axis=0).astype(np.float32),
        "body_pos_w": body_pos.astype(np.float32),
        "body_quat_w": body_quat.astype(np.float32),
        "body_lin_vel_w": np.gradient(body_pos, 1.0 / fps, axis=0).astype(np.float32),
        "body_ang_vel_w": _quat_log_rate(body_quat, fps).astype(np.float32),
    }


def convert_motion(synth_npz: Path | str, out_npz: Path | str) -> Path:
    """A `parkour mm synth` motion as the npz mjlab's MotionLoader reads.

    The synth ``motion_*.npz`` (root pose + 29 joints at 50 fps) goes through forward kinematics on mjlab's
    own G1 model; the output holds joint_pos/vel in mjlab's joint order, every body's world pose and
    velocity in mjlab's body order, and the reference's boxes (``terrain_box_*``). The motion's fps must
    equal the control rate: mjlab advances one reference frame per env step.
    """
    src = np.load(synth_npz)
    joint_names = [str(n) for n in src["joint_names"]]
    joints = {name: src["joint_pos"][:, k].astype(np.float64) for k, name in enumerate(joint_names)}
    root_pos, root_quat = src["root_pos"].astype(np.float64), src["root_quat"].astype(np.float64)
    arrays = kinematic_motion(root_pos, root_quat, joints, float(src["fps"]))
    for key in TERRAIN_KEYS:  # the reference's boxes, in its own frame (training.envs.reference.Terrain)
        if key in src:
            arrays[key] = np.asarray(src[key], dtype=np.float64)
    out = Path(out_npz)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(out, **arrays)
    return out


def standing_motion(
    out_npz: Path | str, seconds: float = 4.0, fps: float = 50.0, boxes: list[tuple] | None = None
) -> Path:
    """A reference without data (smoke runs): mjlab's G1 home keyframe held still at the origin, facing
    +x; ``boxes``: ``(center xyz, half size xyz, yaw)`` of each box of its terrain."""
    from mjlab.asset_zoo.robots.unitree_g1.g1_constants import HOME_KEYFRAME

    model = _g1_model()
    t = round(seconds * fps)
    joints: dict[str, np.ndarray] = {}
    for i in range(model.njnt):
        if model.jnt_type[i] == mujoco.mjtJoint.mjJNT_FREE:
            continue
        name = model.joint(i).name
        value = next((v for pat, v in HOME_KEYFRAME.joint_pos.items() if re.fullmatch(pat, name)), 0.0)
        joints[name] = np.full(t, value)
    root_pos = np.tile(np.asarray(HOME_KEYFRAME.pos, dtype=np.float64), (t, 1))
    root_quat = np.tile([1.0, 0.0, 0.0, 0.0], (t, 1))
    arrays = kinematic_motion(root_pos, root_quat, joints, fps)
    boxes = boxes or []
    arrays["terrain_box_center"] = np.array([b[0] for b in boxes], dtype=np.float64).reshape(-1, 3)
    arrays["terrain_box_half_size"] = np.array([b[1] for b in boxes], dtype=np.float64).reshape(-1, 3)
    arrays["terrain_box_yaw"] = np.array([b[2] for b in boxes], dtype=np.float64).reshape(-1)
    out = Path(out_npz)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(out, **arrays)
    return out


# Two references without data for smoke runs and tests: standing still in front of a 10 cm and a 20 cm
# box whose near edge is 0.18 m ahead of the pelvis (the scan's three front rows, x = 0.21-0.35 m,
# lie on it; the G1's toes end about 0.12 m ahead).
TOY_BOXES = (
    [((0.40, 0.0, 0.05), (0.22, 0.6, 0.05), 0.0)],
    [((0.40, 0.0, 0.10), (0.22, 0.6, 0.10), 0.0)],
)


def toy_motions(out_dir: Path | str, fps: float = 50.0) -> list[Path]:
    """The smoke's references: :data:`TOY_BOXES`, one standing reference each."""
    return [
        standing_motion(Path(out_dir) / f"motion_toy{k}.npz", fps=fps, boxes=boxes) for k, boxes in enumerate(TOY_BOXES)
    ]


def motions_for(cfg: TrainConfig, out_dir: Path | str, motion: list[str] | None = None) -> list[Path]:
    """The run's references as mjlab npz files: ``motion`` (synth files), else ``env.motions`` (every
    ``motion_*.npz`` there, only ``env.skills`` when set), else :func:`toy_motions`."""
    out_dir = Path(out_dir)
    sources = [Path(m) for m in motion or []]
    if not sources and cfg.env.motions:
        sources = sorted(Path(cfg.env.motions).glob("motion_*.npz"))
        if cfg.env.skills:
            sources = [p for p in sources if str(np.load(p)["skill"]) in set(cfg.env.skills)]
        if not sources:
            raise FileNotFoundError(f"{cfg.env.motions} holds no motion_*.npz for skills {cfg.env.skills or 'any'}")
    if not sources:
        return toy_motions(out_dir / "motions", fps=cfg.env.control_hz)
    return [convert_motion(p, out_dir / "motions" / p.name) for p in sources]


# ----------------------------------------------------------------------------- the task


def env_cfg(cfg: TrainConfig, motion_files: list[Path] | list[str], world_size: int = 1, play: bool = False):
    """mjlab's ManagerBasedRlEnvCfg for one teacher over ``motion_files`` (converted npz, each with its
    boxes), from our config (num_envs split over ranks).

    - privileged height scan (``env.height_scan``): the terrain module's yaw-aligned ray-cast sensor, in
      the actor's and the critic's observation (121 values each);
    - rewards: PHP's DeepMimic kernels with PHP's sigmas and weights (``cfg.reward``) on mjlab's term
      functions (their ``std`` is our sigma: both compute ``exp(-err / sigma^2)``), plus action rate,
      joint limits and self-contact;
    - termination: anchor (pelvis) position error, end-effector position error (both
      ``cfg.termination.tracking_error_m``, PHP's 0.5 m), anchor orientation ``anchor_ori``, time-out;
    - domain randomization: foot friction, torso CoM offset, encoder bias, pushes (``cfg.randomization``);
    - sampling: mjlab's adaptive start sampling (``cfg.sampling.adaptive``; 1 s bins per reference) or
      uniform.
    """
    from mjlab.managers.event_manager import EventTermCfg
    from mjlab.managers.reward_manager import RewardTermCfg
    from mjlab.managers.termination_manager import TerminationTermCfg
    from mjlab.tasks.tracking import mdp
    from mjlab.tasks.tracking.config.g1.env_cfgs import unitree_g1_flat_tracking_env_cfg

    from training.backends.mjlab import terrain
    from training.backends.mjlab.motion import ReferenceMotionCommandCfg

    motion_files = [str(f) for f in ([motion_files] if isinstance(motion_files, str | Path) else motion_files)]
    if not motion_files:
        raise ValueError("the teacher needs at least one reference")
    for f in motion_files:
        fps = float(np.load(f)["fps"])
        if abs(fps - cfg.env.control_hz) > 1e-6:
            raise ValueError(f"{f}: {fps} fps, but env.control_hz is {cfg.env.control_hz}")
    if cfg.env.num_envs % world_size:
        raise ValueError(f"env.num_envs {cfg.env.num_envs} does not split over {world_size} GPUs")
    if cfg.env.num_envs // world_size < len(motion_files):
        raise ValueError(f"{len(motion_files)} references need at least as many environments per GPU, got "
                         f"{cfg.env.num_envs // world_size}")  # fmt: skip

    env = unitree_g1_flat_tracking_env_cfg(play=play)
    env.scene.num_envs = cfg.env.num_envs // world_size
    env.episode_length_s = cfg.env.episode_length_s
    env.decimation = cfg.env.decimation
    env.sim.mujoco.timestep = cfg.env.physics_dt_s
    env.sim.nconmax = max(env.sim.nconmax or 0, 64)  # feet on box edges: more contacts than on a plane
    env.seed = cfg.run.seed

    # The boxes of each reference, one tile each; the environments spread over the tiles.
    env.scene.terrain = terrain.reference_terrain_cfg(motion_files, seed=cfg.run.seed)
    if cfg.env.height_scan:
        env.scene.sensors = (*(env.scene.sensors or ()), terrain.height_scan_sensor_cfg(ANCHOR_BODY))
        for group in ("actor", "critic"):
            env.observations[group].terms["height_scan"] = terrain.height_scan_term_cfg()

    base = env.commands["motion"]
    cmd = ReferenceMotionCommandCfg(
        **{f.name: getattr(base, f.name) for f in dataclasses.fields(base)}, motion_files=tuple(motion_files)
    )
    env.commands["motion"] = cmd
    cmd.motion_file = motion_files[0]
    cmd.anchor_body_name = ANCHOR_BODY
    if not play:
        cmd.sampling_mode = "adaptive" if cfg.sampling.adaptive else "uniform"

    r, name, m = cfg.reward, "motion", mdp
    tracking = {  # our term -> (mjlab function, sigma, weight)
        "anchor_pos": (mdp.motion_global_anchor_position_error_exp, r.sigma_anchor_pos, r.weight_anchor_pos),
        "anchor_ori": (mdp.motion_global_anchor_orientation_error_exp, r.sigma_anchor_ori, r.weight_anchor_ori),
        "body_pos": (mdp.motion_relative_body_position_error_exp, r.sigma_body_pos, r.weight_body_pos),
        "body_ori": (mdp.motion_relative_body_orientation_error_exp, r.sigma_body_ori, r.weight_body_ori),
        "body_lin_vel": (mdp.motion_global_body_linear_velocity_error_exp, r.sigma_body_lin_vel, r.weight_body_lin_vel),
        "body_ang_vel": (m.motion_global_body_angular_velocity_error_exp, r.sigma_body_ang_vel, r.weight_body_ang_vel),
    }
    rewards = {
        term: RewardTermCfg(func=func, weight=weight, params={"command_name": name, "std": sigma})
        for term, (func, sigma, weight) in tracking.items()
    }
    rewards["action_rate"] = replace(env.rewards["action_rate_l2"], weight=r.weight_action_rate)
    rewards["joint_limit"] = replace(env.rewards["joint_limit"], weight=r.weight_joint_limit)
    rewards["self_contact"] = replace(env.rewards["self_collisions"], weight=r.weight_self_contact)
    env.rewards = rewards

    t = cfg.termination
    env.terminations = {
        "time_out": env.terminations["time_out"],
        "anchor_pos": TerminationTermCfg(
            func=mdp.bad_anchor_pos, params={"command_name": name, "threshold": t.tracking_error_m}
        ),
        "anchor_ori": replace(
            env.terminations["anchor_ori"], params={**env.terminations["anchor_ori"].params, "threshold": t.anchor_ori}
        ),
        "ee_body_pos": TerminationTermCfg(
            func=mdp.bad_motion_body_pos,
            params={"command_name": name, "threshold": t.tracking_error_m, "body_names": END_EFFECTORS},
        ),
    }

    d = cfg.randomization
    events = env.events
    if not d.enabled:
        for key in ("push_robot", "base_com", "encoder_bias", "foot_friction"):
            events.pop(key, None)
    else:
        events["foot_friction"].params["ranges"] = tuple(d.static_friction)
        cx, cy, cz = d.base_com_offset_m
        events["base_com"].params["ranges"] = {0: (-cx, cx), 1: (-cy, cy), 2: (-cz, cz)}
        events["encoder_bias"].params["bias_range"] = (-d.joint_pos_bias_rad, d.joint_pos_bias_rad)
        if not play:
            keys = ("x", "y", "z", "roll", "pitch", "yaw")
            events["push_robot"] = EventTermCfg(
                func=mdp.push_by_setting_velocity,
                mode="interval",
                interval_range_s=tuple(d.push_interval_s),
                params={"velocity_range": {k: (-v, v) for k, v in zip(keys, d.push_max_vel, strict=True)}},
            )
    return env


def rl_cfg(cfg: TrainConfig):
    """mjlab's rsl-rl runner config (rsl-rl 5.4.2) from ``cfg.policy``, ``cfg.ppo`` and ``cfg.run``."""
    from mjlab.rl import RslRlModelCfg, RslRlOnPolicyRunnerCfg, RslRlPpoAlgorithmCfg

    p, o = cfg.policy, cfg.ppo
    return RslRlOnPolicyRunnerCfg(
        actor=RslRlModelCfg(
            hidden_dims=tuple(p.actor_hidden),
            activation=p.activation,
            obs_normalization=p.obs_normalization,
            distribution_cfg={"class_name": "GaussianDistribution", "init_std": p.init_noise_std, "std_type": "scalar"},
        ),
        critic=RslRlModelCfg(
            hidden_dims=tuple(p.critic_hidden), activation=p.activation, obs_normalization=p.obs_normalization
        ),
        algorithm=RslRlPpoAlgorithmCfg(
            value_loss_coef=o.value_loss_coef,
            use_clipped_value_loss=o.use_clipped_value_loss,
            clip_param=o.clip_param,
            entropy_coef=o.entropy_coef,
            num_learning_epochs=o.num_epochs,
            num_mini_batches=o.num_mini_batches,
            learning_rate=o.learning_rate,
            schedule=o.schedule,
            gamma=o.gamma,
            lam=o.lam,
            desired_kl=o.desired_kl,
            max_grad_norm=o.max_grad_norm,
        ),
        experiment_name=cfg.run.experiment_name,
        save_interval=cfg.run.save_interval,
        num_steps_per_env=o.num_steps_per_env,
        max_iterations=cfg.run.max_iterations,
        seed=cfg.run.seed,
        logger="tensorboard",
    )


def register(
    cfg: TrainConfig, motion_files: list[Path] | list[str], world_size: int = 1, task_id: str = TASK_ID
) -> str:
    """Register our teacher in mjlab's task registry (so mjlab's train/play scripts find it)."""
    from mjlab.tasks.registry import list_tasks, register_mjlab_task
    from mjlab.tasks.tracking.rl import MotionTrackingOnPolicyRunner

    if task_id not in list_tasks():
        register_mjlab_task(
            task_id=task_id,
            env_cfg=env_cfg(cfg, motion_files, world_size),
            play_env_cfg=env_cfg(cfg, motion_files, world_size, play=True),
            rl_cfg=rl_cfg(cfg),
            runner_cls=MotionTrackingOnPolicyRunner,
        )
    return task_id
