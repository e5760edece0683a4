"""``run_student_walk``: DAgger from the walking policy into the recurrent depth student (issue 13, stage 1).

Every iteration collects ``steps`` ticks from every environment: the student acts on its own
observation (bundle proprioception, gait phase, simulated depth, command) blended with the teacher,
``a = beta t + (1 - beta) s`` with beta falling linearly 1 -> 0 over the first half of the run; a fixed
eighth of the environments (at least one) always run the teacher, as the speed reference. The
teacher labels every step; the update is the MSE to its actions (``hybrid.masked_mse``) on BPTT
windows (``SequenceBatch.windows`` + ``RecurrentDepthActorCritic.sequence``, hidden states as stored
in the rollout, zeroed at episode starts).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from parkour_core.bundle import Manifest, load_bundle
from training.algorithms.hybrid import masked_mse
from training.envs.student import CameraConfig
from training.export.models import DepthBackbone, RecurrentStudent, StudentSize, parameter_count
from training.export.parity import ParityError
from training.export.student import export_student
from training.pipeline.student_update import RecurrentDepthActorCritic, SequenceBatch
from training.student_walk.env import WalkConfig, WalkEnv, walk_student_manifest
from training.student_walk.teacher import TEACHER_PROVENANCE, WalkTeacher

CHECKPOINT = "checkpoint.pt"


@dataclasses.dataclass(frozen=True)
class RunSize:
    student: StudentSize
    num_envs: int
    steps: int  # ticks per env per iteration
    camera: CameraConfig
    max_iterations: int | None  # None: time-boxed by minutes
    bptt_steps: int = 8
    epochs: int = 2
    mini_batches: int = 4
    learning_rate: float = 3e-4


RUN_SIZES = {
    "tiny": RunSize(
        StudentSize(conv_channels=(4, 8), backbone_hidden=16, gru_hidden=16, mlp_hidden=(32,)),
        num_envs=4,
        steps=16,
        camera=CameraConfig(width=18, height=12),
        max_iterations=3,
        mini_batches=2,
    ),
    # GRU 256 like FACTS' 566k-parameter CPU student; the backbone reads the bundle's 58x87 image.
    "walk": RunSize(
        StudentSize(conv_channels=(8, 8), backbone_hidden=32, gru_hidden=256, mlp_hidden=(256, 128)),
        num_envs=32,
        steps=24,
        camera=CameraConfig(width=36, height=24),
        max_iterations=None,
    ),
}


def build_model(size: StudentSize, seed: int, obs_size: int, num_actions: int) -> RecurrentDepthActorCritic:
    torch.manual_seed(seed)
    backbone = DepthBackbone(size)
    student = RecurrentStudent(obs_size, size, num_actions)
    # The critic is unused (pure DAgger): a 1-input stub so the exported pair's sequence code is reused.
    return RecurrentDepthActorCritic(backbone, student, 1, (1,), normalize_critic=False)


def dagger_update(
    model: RecurrentDepthActorCritic,
    optimizer: torch.optim.Optimizer,
    batch: SequenceBatch,
    bptt_steps: int,
    epochs: int,
    mini_batches: int,
    generator: torch.Generator,
) -> float:
    """Epochs of the DAgger MSE over BPTT windows; returns the mean loss."""
    windows = batch.windows(bptt_steps)
    losses = []
    for _ in range(epochs):
        for index in torch.randperm(windows.num_envs, generator=generator).chunk(min(mini_batches, windows.num_envs)):
            mb = windows.columns(index)
            means = model.sequence(mb.obs, mb.depth, mb.hidden[0].unsqueeze(0).contiguous(), mb.starts)
            loss = masked_mse(means.reshape(-1, means.shape[-1]), mb.teacher_actions.reshape(-1, means.shape[-1]),
                              mb.dagger_mask.reshape(-1))  # fmt: skip
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            losses.append(float(loss.item()))
    return float(np.mean(losses))


def sequence_batch(buf: dict[str, torch.Tensor]) -> SequenceBatch:
    steps, n = buf["obs"].shape[:2]
    zeros = torch.zeros(steps, n)
    return SequenceBatch(
        obs=buf["obs"], depth=buf["depth"], privileged=zeros[..., None], hidden=buf["hidden"], starts=buf["starts"],
        actions=buf["teacher"], log_probs=zeros, values=zeros, advantages=zeros, returns=zeros,
        action_mean=buf["teacher"], action_std=torch.ones_like(buf["teacher"]), teacher_actions=buf["teacher"],
        dagger_mask=torch.ones(steps, n, dtype=torch.bool),
    )  # fmt: skip


def run_provenance(seed: int, wall_s: float) -> dict[str, Any]:
    """What reproduces a run beside the commit (which the exporter records): command line, seed, wall time."""
    import sys

    program = "parkour" if sys.argv[0].endswith("parkour") else sys.argv[0]
    return {"command": " ".join([program, *sys.argv[1:]]), "seed": seed, "wall_s": round(wall_s, 1)}


def export_walking_student(
    model: RecurrentDepthActorCritic,
    bundle_dir: Path,
    name: str,
    provenance: dict[str, Any],
    frames: list[np.ndarray],
    template: Manifest,
    size: str,
) -> None:
    """The torch weights, then the bundle (ONNX pair) with the training manifest's terms, gait and gains.

    int8 (calibrated on ``frames``) when it passes the exporter's parity check against fp32, else fp32:
    a trained walker's actions reach ~5, where int8's error can exceed the check's tolerance.
    """
    bundle_dir.mkdir(parents=True, exist_ok=True)
    # Saved first: an export that fails must not lose the run. Stage 2 (student-step) starts from them.
    torch.save({"size": size, "state_dict": model.state_dict()}, bundle_dir / CHECKPOINT)
    provenance = {**provenance, "gains": "kp/kd of models/g1_walk (the teacher's PD), which it trained under"}
    try:
        export_student(
            model.backbone, model.student, bundle_dir, name, provenance, calibration_frames=frames, template=template
        )
    except ParityError as error:
        provenance = {**provenance, "precision_choice": f"fp32: int8 failed the parity check ({error})"}
        export_student(model.backbone, model.student, bundle_dir, name, provenance, precision="fp32", template=template)
    load_bundle(bundle_dir)


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    k = [r["iteration"] for r in rows]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    axes[0].semilogy(k, [r["dagger_loss"] for r in rows])
    axes[0].set_title("DAgger loss (MSE to the teacher's actions)")
    axes[1].plot(k, [r["episode_length_s"] for r in rows], label="finished episodes")
    axes[1].plot(k, [r["running_length_s"] for r in rows], label="running episodes")
    axes[1].set_title("episode length (s)")
    axes[1].legend()
    axes[2].plot(k, [r["teacher_speed"] for r in rows], label="teacher envs")
    axes[2].plot(k, [r["student_speed"] for r in rows], label="student envs (beta-mixed)")
    axes[2].plot(k, [r["command_vx"] for r in rows], "--", label="commanded vx")
    axes[2].set_title("forward speed (m/s)")
    axes[2].legend()
    for ax in axes:
        ax.set_xlabel("iteration")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def run_student_walk(
    out: Path | str,
    size: str = "tiny",
    seed: int = 0,
    device: str = "cpu",
    num_envs: int | None = None,
    minutes: float = 30.0,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Train, then write DIR/student_walk.json, DIR/curves.png and DIR/bundle; returns the json's content."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rs = RUN_SIZES[size]
    dev = torch.device(device)
    n = num_envs or rs.num_envs
    teacher_envs = max(1, n // 8)
    teacher = WalkTeacher(n)
    manifest = walk_student_manifest("student_walk", rs.student.gru_hidden, rs.student.latent_dim, teacher.manifest)
    env = WalkEnv(WalkConfig(num_envs=n, seed=seed, camera=rs.camera), manifest)
    model = build_model(rs.student, seed, env.num_obs, env.num_actions).to(dev)
    optimizer = torch.optim.Adam(model.parameters(), lr=rs.learning_rate)
    generator = torch.Generator().manual_seed(seed)
    deadline = time.monotonic() + 60.0 * minutes
    rows: list[dict[str, Any]] = []
    frames: list[np.ndarray] = []
    ep_len = np.zeros(n)
    total_iters = rs.max_iterations
    t_start = time.monotonic()
    try:
        obs = env.reset()
        teacher.reset()
        hidden = model.initial_hidden(n).to(dev)
        starts = torch.ones(n, dtype=torch.bool)
        k = 0
        while (total_iters is None and time.monotonic() < deadline) or (total_iters is not None and k < total_iters):
            started = time.monotonic()
            frac = k / total_iters if total_iters else (started - t_start) / (60.0 * minutes)
            beta = max(0.0, 1.0 - 2.0 * frac)
            T = rs.steps
            buf = {
                "obs": torch.zeros(T, n, env.num_obs), "depth": torch.zeros(T, n, *obs["depth"].shape[1:]),
                "hidden": torch.zeros(T, n, model.hidden_size), "starts": torch.zeros(T, n, dtype=torch.bool),
                "teacher": torch.zeros(T, n, env.num_actions),
            }  # fmt: skip
            finished: list[float] = []
            speed_t, speed_s, cmd_vx = [], [], []
            for t in range(T):
                sim = env.tracking.sim
                label = teacher.act(
                    sim.q, sim.dq, sim.root_quat, sim.gyro, env.walk_command, env.tracking.last_action, env.gait_phase
                )
                o, d = torch.from_numpy(obs["policy"]), torch.from_numpy(obs["depth"])
                with torch.no_grad():
                    mean, next_hidden = model.step(o.to(dev), d.to(dev), hidden)
                student = mean.cpu().numpy().astype(np.float64)
                weight = np.full((n, 1), beta)
                weight[:teacher_envs] = 1.0
                action = weight * label + (1.0 - weight) * student
                buf["obs"][t], buf["depth"][t], buf["hidden"][t] = o, d, hidden[0].cpu()
                buf["starts"][t], buf["teacher"][t] = starts, torch.from_numpy(label)
                obs, done, _ = env.step_walk(action)
                ep_len += 1
                speed = env.forward_speed()
                speed_t.append(speed[:teacher_envs].mean())
                speed_s.append(speed[teacher_envs:].mean() if n > teacher_envs else np.nan)
                cmd_vx.append(env.walk_command[:, 0].mean())
                ids = np.flatnonzero(done)
                finished += list(ep_len[ids[ids >= teacher_envs]] * env.tracking.dt_s)
                ep_len[ids] = 0
                teacher.reset(ids)
                starts = torch.from_numpy(done.copy())
                hidden = next_hidden * (~starts).to(dev).float()[None, :, None]
                if len(frames) < 64 and t % 4 == 0:
                    frames.append(obs["depth"][t % n].copy())
            collected = time.monotonic()
            batch = sequence_batch({key: v.to(dev) for key, v in buf.items()})
            loss = dagger_update(model, optimizer, batch, rs.bptt_steps, rs.epochs, rs.mini_batches, generator)
            wall = time.monotonic() - started
            row = {
                "iteration": k,
                "dagger_loss": loss,
                "beta": beta,
                "episode_length_s": float(np.mean(finished)) if finished else float("nan"),
                "running_length_s": float(ep_len[teacher_envs:].mean() * env.tracking.dt_s)
                if n > teacher_envs
                else 0.0,
                "teacher_speed": float(np.mean(speed_t)),
                "student_speed": float(np.nanmean(speed_s)) if n > teacher_envs else float("nan"),
                "command_vx": float(np.mean(cmd_vx)),
                "env_steps_per_s": T * n / wall,
                "collect_env_steps_per_s": T * n / (collected - started),
                "wall_s": wall,
            }
            rows.append(row)
            log(
                f"student-walk {k}: loss {loss:.4f} beta {beta:.2f} speed teacher {row['teacher_speed']:.2f} "
                f"student {row['student_speed']:.2f} (cmd {row['command_vx']:.2f}) "
                f"{row['env_steps_per_s']:.0f} env-steps/s"
            )
            k += 1
    finally:
        env.close()
    model = model.cpu().eval()
    bundle_dir = out / "bundle"
    provenance = {
        "teacher": TEACHER_PROVENANCE,
        "training": f"training.student_walk DAgger stage 1, size {size}, seed {seed}, {len(rows)} iterations, "
        f"{n} envs, flat ground and gentle terrain (2-5 cm platforms in half the episodes)",
        "size": size,
        "data": "none recorded: DAgger labels from the walking policy in training.student_walk.env (MuJoCo)",
        **run_provenance(seed, time.monotonic() - t_start),
    }
    export_walking_student(model, bundle_dir, "student_walk", provenance, frames, manifest, size)
    result = {
        "size": size,
        "seed": seed,
        "device": device,
        "num_envs": n,
        "teacher_envs": teacher_envs,
        "parameters": parameter_count(model.backbone) + parameter_count(model.student),
        "iterations": rows,
        "bundle": str(bundle_dir),
    }
    (out / "student_walk.json").write_text(json.dumps(result, indent=1))
    plot(rows, out / "curves.png")
    return result
