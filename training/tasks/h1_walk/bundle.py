"""The trained H1 actor as a model bundle, checked through the runtime before its manifest is written.

``policy.onnx`` is rsl_rl's ONNX form of the actor (its normalizer, the MLP, the mean action). The
check runs a one-robot :class:`~training.tasks.h1_walk.env.H1WalkEnv` and parkour_core's ``PolicyRunner``
side by side from a reset: at every tick the runtime builds its own observation from the robot's
state and the command (its own gait clock and previous action) and its targets must equal the ones
the training environment applies from the torch actor on its observation. A wrong term, scale,
order, phase or an export error fails it; the bundle then has no manifest.
"""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from rsl_rl.models import MLPModel

from parkour_core.bundle import FORMAT_VERSION, BundleError, Manifest, ModelIO, load_bundle, write_manifest
from parkour_core.hashing import sha256_file
from parkour_core.provenance import git_commit
from parkour_core.runner import PolicyRunner, RobotState
from training.tasks.h1_walk.env import ACTION_CLIP, ACTION_SCALE, POLICY_TERMS, H1WalkEnv

POLICY_FILE = "policy.onnx"
POLICY_IO = ModelIO(POLICY_FILE, {"obs": "obs"}, {"action": "actions"})
CHECK_TICKS = 50
TARGET_TOLERANCE_RAD = 1e-4


def export_bundle(
    actor: MLPModel, env: H1WalkEnv, out_dir: Path, name: str, config: str, totals: dict[str, Any] | None = None
) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "manifest.json").unlink(missing_ok=True)
    onnx_model = actor.cpu().eval().as_onnx(verbose=False)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        torch.onnx.export(
            onnx_model, onnx_model.get_dummy_inputs(), str(out_dir / POLICY_FILE),
            input_names=[POLICY_IO.inputs["obs"]], output_names=[POLICY_IO.outputs["action"]],
            opset_version=17, dynamo=False,
        )  # fmt: skip
    robot = env.robot
    manifest = Manifest(
        format_version=FORMAT_VERSION,
        name=name,
        robot=robot.name,
        joint_names=robot.joint_names,
        default_joint_pos=tuple(float(x) for x in env.default_q),
        action_scale=ACTION_SCALE,
        action_clip=ACTION_CLIP,
        kp=tuple(float(x) for x in env.kp),
        kd=tuple(float(x) for x in env.kd),
        obs_terms=POLICY_TERMS,
        policy_hz=env.config.env.control_hz,
        policy=POLICY_IO,
        files={POLICY_FILE: sha256_file(out_dir / POLICY_FILE)},
        gait_period_s=env.velocity.gait_period_s,
        provenance={
            "trained_by": f"parkour train run --config {config}",
            "git_commit": git_commit(),  # HEAD at export; each run's commit at its start is in "runs"
            **(totals or {}),
            "task": "h1_walk (training/tasks/h1_walk): PPO from scratch, mujoco_cpu",
            "physics_dt_s": env.config.env.physics_dt_s,
            "command_ranges": {
                "vx": list(env.velocity.vx),
                "vy": list(env.velocity.vy),
                "yaw_rate": list(env.velocity.yaw_rate),
            },
        },
    )
    write_manifest(out_dir, manifest)  # the runtime loads a whole bundle
    error = runtime_error(actor, env, out_dir)
    if not error <= TARGET_TOLERANCE_RAD:
        (out_dir / "manifest.json").unlink()
        raise BundleError(
            f"{out_dir}: the runtime's targets differ from training's by {error:.3g} rad "
            f"(tolerance {TARGET_TOLERANCE_RAD}); no manifest written"
        )
    write_manifest(
        out_dir, dataclasses.replace(manifest, provenance={**manifest.provenance, "runtime_target_error_rad": error})
    )
    load_bundle(out_dir)
    return out_dir


def runtime_error(actor: MLPModel, env: H1WalkEnv, bundle_dir: Path) -> float:
    """Largest target difference (rad) between the runtime on the bundle and training's env over a run."""
    runtime = PolicyRunner(load_bundle(bundle_dir, env.robot))
    velocity = dataclasses.replace(env.velocity, push_interval_s=1e9, resample_s=1e9, zero_fraction=0.0, obs_noise=0.0)
    config = env.config
    cfg = dataclasses.replace(config, env=dataclasses.replace(config.env, num_envs=1), velocity=velocity)
    check = H1WalkEnv(cfg, nthread=1, robot=env.robot)
    policy = actor.as_jit()  # the deterministic actor on a plain observation tensor, normalizer included
    worst = 0.0
    try:
        obs = check.observe()
        for _ in range(CHECK_TICKS):
            st = check.state()
            state = RobotState(st.q[0], st.dq[0], st.root_quat[0], st.base_ang_vel[0])
            targets = runtime.step(state, check.command[0].copy())
            with torch.no_grad():
                action = policy(torch.as_tensor(obs["policy"])).numpy().astype(np.float64)
            trained = check.default_q + ACTION_SCALE * np.clip(action[0], -ACTION_CLIP, ACTION_CLIP)
            worst = max(worst, float(np.max(np.abs(targets - trained))))
            obs, _, done, _ = check.step(action)
            if done[0]:
                break
    finally:
        check.close()
    return worst


def load_actor_from_bundle(actor: MLPModel, bundle_dir: Path, env: H1WalkEnv, normalizer_count: int) -> None:
    """``actor`` takes the weights and observation normalizer of the h1 bundle at ``bundle_dir`` (its
    ``policy.onnx``, rsl_rl's export of an actor of the same shape), so a run starts from that policy: its mean
    action equals the bundle's. The bundle must be this task's contract (robot, joints, observation terms,
    action scale); a mismatch is refused by name. The normalizer goes on learning as if it had seen
    ``normalizer_count`` samples."""
    import onnx
    from onnx import numpy_helper

    bundle = load_bundle(bundle_dir, env.robot)
    m = bundle.manifest
    wanted = {"joint_names": tuple(env.robot.joint_names), "obs_terms": tuple(POLICY_TERMS),
              "action_scale": ACTION_SCALE}  # fmt: skip
    for key, value in wanted.items():
        found = getattr(m, key)
        if (tuple(found) if isinstance(value, tuple) else found) != value:
            raise BundleError(f"{bundle_dir}: its {key} is not the h1_walk task's; it cannot start this task's actor")
    graph = onnx.load(str(bundle.file(m.policy.file))).graph
    weights = {i.name: torch.from_numpy(numpy_helper.to_array(i).copy()) for i in graph.initializer}
    divisors = [t for name, t in weights.items() if name.startswith("onnx::Div")]
    state = actor.state_dict()
    mlp = {k: v for k, v in weights.items() if k.startswith("mlp.")}
    shapes = {k: tuple(v.shape) for k, v in mlp.items()}
    ours = {k: tuple(v.shape) for k, v in state.items() if k.startswith("mlp.")}
    if len(divisors) != 1 or "obs_normalizer._mean" not in weights or shapes != ours:
        raise BundleError(
            f"{bundle_dir}: {m.policy.file} is not rsl_rl's export of an actor of this shape: its MLP "
            f"{sorted(shapes.items())}, the config's {sorted(ours.items())} (policy.actor_hidden)"
        )
    normalizer = actor.obs_normalizer
    std = divisors[0] - normalizer.eps  # the export divides by std + eps
    with torch.no_grad():
        for name, value in mlp.items():
            state[name].copy_(value)
        normalizer._mean.copy_(weights["obs_normalizer._mean"])
        normalizer._std.copy_(std)
        normalizer._var.copy_(std**2)
        normalizer.count.fill_(normalizer_count)
