"""``run_student_step``: stage 2 of issue 13, PHP's hybrid DAgger + PPO on a course of low platforms.

The student starts from stage 1's weights (``--init``: a student-walk bundle's ``checkpoint.pt``)
and acts on its own: actions are drawn from its Gaussian (learned log-std) in every environment.
Each iteration's loss is PHP's ``L = lambda_PPO L_PPO + lambda_D L_D``
(``training.pipeline.student_update.RecurrentHybridUpdate``: lambda_D ramps 1 -> 0.1 over the first
half of the schedule and stays at 0.1, lambda_PPO = 1 - lambda_D). The schedule is gated on success:
it advances one iteration only when the trailing step-up rate has reached ``ramp_gate_rate``, so
lambda_D stays high until the student steps up (the first run, on a plain ramp, drifted from the
teacher as lambda_D fell and never stepped up):

- **L_D**: the MSE to the terrain-aware teacher's actions (``StepTeacher``: the walking policy plus
  its privileged step-up reflex) at every step the student visited;
- **L_PPO**: the clipped surrogate on ``StepEnv``'s velocity-tracking reward with a platform bonus
  and a heavy fall cost, advantages by GAE from an asymmetric critic that reads the student's
  observation and the privileged one (height scan included).

The run is time-boxed: the number of iterations K that fits ``minutes`` is fixed from the pace of
iterations 1-2 (the schedules need K). The exported weights are those with the best trailing
step-up rate once the curriculum is at full height (``step_up_rate``), else the final ones; the
final ones are kept beside (``final_checkpoint.pt``). The curriculum raises the platforms' upper height linearly from
``start_cap_m`` to the course's maximum over the first ``curriculum_fraction`` of the run.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from parkour_core.bundle import load_bundle
from training.algorithms.hybrid import HybridConfig, compute_gae
from training.export.models import parameter_count
from training.pipeline.student_update import RecurrentDepthActorCritic, RecurrentHybridUpdate, SequenceBatch
from training.student_step.env import CourseConfig, StepEnv
from training.student_step.teacher import StepTeacher
from training.student_walk.env import WalkConfig, walk_student_manifest
from training.student_walk.run import (
    CHECKPOINT,
    RUN_SIZES,
    build_model,
    export_walking_student,
    run_provenance,
)
from training.student_walk.teacher import REPO, TEACHER_PROVENANCE, WALK_BUNDLE

DEFAULT_INIT = REPO / "models" / "student_walk"
HEIGHT_BINS_M = (0.04, 0.075, 0.125, 0.175, 0.23)  # around 5, 10, 15 and 20 cm
SCORE_WINDOW = 20
PACE_ITERATIONS = 2  # iterations 1..2 set the pace (iteration 0 warms up)


def step_up_rate(rows: list[dict[str, Any]]) -> float:
    """Platforms of 7.5 cm and more cleared / (cleared + falls on them) over ``rows``."""
    cleared = sum(sum(r["cleared_by_height"][1:]) for r in rows)
    fell = sum(sum(r["fell_by_height"][1:]) for r in rows)
    return cleared / (cleared + fell) if cleared + fell else 0.0


@dataclasses.dataclass(frozen=True)
class StepRunSize:
    walk_size: str  # stage 1's size (RUN_SIZES) this run continues: its student and environments
    hybrid: HybridConfig
    critic_hidden: tuple[int, ...]
    init_std: float
    start_cap_m: float = 0.10
    curriculum_fraction: float = 0.3
    ramp_gate_rate: float = 0.4  # trailing step-up rate (>= 7.5 cm) at which the hybrid schedule advances
    gamma: float = 0.99
    lam: float = 0.95
    max_iterations: int | None = None


STEP_SIZES = {
    "tiny": StepRunSize(
        "tiny",
        HybridConfig(num_epochs=1, num_mini_batches=2, learning_rate=3e-4, entropy_coef=0.0),
        critic_hidden=(32,),
        init_std=0.2,
        max_iterations=3,
        ramp_gate_rate=0.0,  # the schedule always advances (a 3-iteration run steps up nothing)
    ),
    "step": StepRunSize(
        "walk",
        HybridConfig(num_epochs=3, num_mini_batches=4, learning_rate=3e-4, entropy_coef=0.0, max_lr=1e-3),
        critic_hidden=(256, 128),
        init_std=0.2,
    ),
}


def load_init(model: RecurrentDepthActorCritic, init: Path, size: str) -> None:
    """Copy stage 1's ``size`` student (backbone + GRU + MLP) into ``model``; the critic and log-std stay fresh."""
    path = init / CHECKPOINT if init.is_dir() else init
    if not path.is_file():
        raise FileNotFoundError(
            f"no stage-1 weights at {path}: pass --init with a student-walk bundle folder (it holds {CHECKPOINT})"
        )
    saved = torch.load(path, map_location="cpu", weights_only=True)
    if saved.get("size") != size:
        raise ValueError(f"{path} holds a {saved.get('size')!r}-size student; this run needs a {size!r} one")
    state = {k: v for k, v in saved["state_dict"].items() if k.startswith(("backbone.", "student."))}
    missing = model.load_state_dict(state, strict=False).missing_keys
    if any(k.startswith(("backbone.", "student.")) for k in missing):
        raise ValueError(f"{path} does not fit this student: missing {missing}")


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    k = [r["iteration"] for r in rows]
    fig, axes = plt.subplots(1, 4, figsize=(20, 4))
    axes[0].semilogy(k, [r["dagger"] for r in rows], label="L_D (MSE to the teacher)")
    axes[0].semilogy(k, [max(r["value"], 1e-6) for r in rows], label="value loss")
    axes[0].legend()
    axes[0].set_title("losses")
    axes[1].plot(k, [r["dagger_weight"] for r in rows], label="lambda_D")
    axes[1].plot(k, [r["ppo_weight"] for r in rows], label="lambda_PPO")
    axes[1].plot(k, [r["height_cap_m"] / 0.22 for r in rows], "--", label="height cap / 22 cm")
    axes[1].legend()
    axes[1].set_title("schedules")
    axes[2].plot(k, [r["reward_per_s"] for r in rows])
    axes[2].set_title("reward per second")
    window = 10
    for j, label in enumerate(("5 cm", "10 cm", "15 cm", "20 cm")):
        cleared = np.array([r["cleared_by_height"][j] for r in rows], dtype=float)
        fell = np.array([r["fell_by_height"][j] for r in rows], dtype=float)
        kernel = np.ones(window)
        c, f = np.convolve(cleared, kernel)[: len(k)], np.convolve(fell, kernel)[: len(k)]  # trailing window
        axes[3].plot(k, c / np.maximum(c + f, 1), label=label)
    axes[3].set_title(f"platforms cleared / attempted ({window}-iteration window)")
    axes[3].legend()
    for ax in axes:
        ax.set_xlabel("iteration")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def run_student_step(
    out: Path | str,
    size: str = "tiny",
    seed: int = 0,
    device: str = "cpu",
    num_envs: int | None = None,
    minutes: float = 60.0,
    init: Path | str | None = DEFAULT_INIT,
    log: Callable[[str], None] = print,
    gate_rate: float | None = None,
) -> dict[str, Any]:
    """Train, then write DIR/student_step.json, DIR/curves.png and DIR/bundle; returns the json's content.

    ``init`` None starts from random weights (tests only: the course needs a walking student).
    ``gate_rate`` replaces the size's ``ramp_gate_rate`` (e.g. a lower gate to continue a stage-2 student
    whose step-ups already rose, so lambda_PPO carries weight).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ss = STEP_SIZES[size]
    if gate_rate is not None:
        ss = dataclasses.replace(ss, ramp_gate_rate=gate_rate)
    rs = RUN_SIZES[ss.walk_size]
    dev = torch.device(device)
    n = num_envs or rs.num_envs
    course = CourseConfig()
    t_start = time.monotonic()
    walker = load_bundle(WALK_BUNDLE).manifest  # the student runs under the walking policy's PD, as in stage 1
    manifest = walk_student_manifest("student_step", rs.student.gru_hidden, rs.student.latent_dim, walker)
    env = StepEnv(WalkConfig(num_envs=n, seed=seed, camera=rs.camera), manifest, course)
    teacher = StepTeacher(n, env.tracking.sim)
    privileged_dim = env.num_obs + env.tracking.num_obs
    base = build_model(rs.student, seed, env.num_obs, env.num_actions)
    model = RecurrentDepthActorCritic(
        base.backbone, base.student, privileged_dim, critic_hidden=ss.critic_hidden, init_std=ss.init_std
    )
    if init is not None:
        load_init(model, Path(init), ss.walk_size)
    model = model.to(dev)
    generator = torch.Generator().manual_seed(seed)
    deadline = t_start + 60.0 * minutes
    rows: list[dict[str, Any]] = []
    frames: list[np.ndarray] = []
    update: RecurrentHybridUpdate | None = None
    best: tuple[float, int, dict[str, torch.Tensor] | None] = (-1.0, -1, None)
    total = ss.max_iterations
    T = rs.steps
    try:
        obs = env.reset()
        teacher.reset()
        hidden = model.initial_hidden(n).to(dev)
        starts = torch.ones(n, dtype=torch.bool)
        k = 0
        schedule_k = 0  # the hybrid schedule's iteration: advances only on success (ramp_gate_rate)
        while total is None or k < total:
            started = time.monotonic()
            progress = k / total if total else 0.0
            if total is None and time.monotonic() > deadline:
                break
            env.height_cap_m = ss.start_cap_m + (course.max_height_m - ss.start_cap_m) * min(
                1.0, progress / ss.curriculum_fraction
            )
            buf: dict[str, torch.Tensor] = {
                "obs": torch.zeros(T, n, env.num_obs), "depth": torch.zeros(T, n, *obs["depth"].shape[1:]),
                "privileged": torch.zeros(T, n, privileged_dim), "hidden": torch.zeros(T, n, model.hidden_size),
                "starts": torch.zeros(T, n, dtype=torch.bool), "actions": torch.zeros(T, n, env.num_actions),
                "log_probs": torch.zeros(T, n), "values": torch.zeros(T, n), "rewards": torch.zeros(T, n),
                "dones": torch.zeros(T, n), "mean": torch.zeros(T, n, env.num_actions),
                "teacher": torch.zeros(T, n, env.num_actions),
            }  # fmt: skip
            cleared: list[float] = []
            falls = 0
            fell: list[float] = []
            speeds, commands, tracks = [], [], []
            for t in range(T):
                label = teacher.act(env.walk_command, env.tracking.last_action, env.gait_phase)
                o, d = torch.from_numpy(obs["policy"]), torch.from_numpy(obs["depth"])
                p = torch.cat([o, torch.from_numpy(obs["privileged"])], dim=-1)
                with torch.no_grad():
                    mean, next_hidden = model.step(o.to(dev), d.to(dev), hidden)
                    dist = model.distribution(mean)
                    action = dist.sample()
                    log_prob = dist.log_prob(action).sum(-1)
                    value = model.value(p.to(dev))
                buf["obs"][t], buf["depth"][t], buf["privileged"][t] = o, d, p
                buf["hidden"][t], buf["starts"][t] = hidden[0].cpu(), starts
                buf["actions"][t], buf["log_probs"][t], buf["values"][t] = action.cpu(), log_prob.cpu(), value.cpu()
                buf["mean"][t], buf["teacher"][t] = mean.cpu(), torch.from_numpy(label)
                obs, reward, done, info = env.step_course(action.cpu().numpy().astype(np.float64))
                buf["rewards"][t], buf["dones"][t] = torch.from_numpy(reward), torch.from_numpy(done.astype(np.float32))
                falls += int(info["fell"].sum())
                cleared += list(info["cleared_heights"])
                fell += list(info["fell_heights"])
                course_envs = env.on_course
                speeds.append(env.forward_speed()[course_envs].mean() if course_envs.any() else np.nan)
                commands.append(env.walk_command[course_envs, 0].mean() if course_envs.any() else np.nan)
                tracks.append(float(info["track"].mean()))
                ids = np.flatnonzero(done)
                teacher.reset(ids)
                starts = torch.from_numpy(done.copy())
                hidden = next_hidden * (~starts).to(dev).float()[None, :, None]
                if len(frames) < 64 and t % 4 == 0:
                    frames.append(obs["depth"][t % n].copy())
            collected = time.monotonic()
            with torch.no_grad():
                last_p = torch.cat([torch.from_numpy(obs["policy"]), torch.from_numpy(obs["privileged"])], dim=-1)
                model.critic_normalizer.update(buf["privileged"].reshape(-1, privileged_dim).to(dev))
                last_values = model.value(last_p.to(dev)).cpu()
            advantages, returns = compute_gae(
                buf["rewards"], buf["values"], buf["dones"], last_values, ss.gamma, ss.lam
            )
            batch = SequenceBatch(
                obs=buf["obs"], depth=buf["depth"], privileged=buf["privileged"], hidden=buf["hidden"],
                starts=buf["starts"], actions=buf["actions"], log_probs=buf["log_probs"], values=buf["values"],
                advantages=advantages, returns=returns, action_mean=buf["mean"],
                action_std=model.log_std.detach().exp().cpu().expand_as(buf["mean"]),
                teacher_actions=buf["teacher"], dagger_mask=torch.ones(T, n, dtype=torch.bool),
            )  # fmt: skip
            if update is None:
                # K is fixed after PACE_ITERATIONS (the time box); until then a placeholder: the first
                # iterations are (nearly) the same point of every schedule.
                update = RecurrentHybridUpdate(model, total or 1_000_000, ss.hybrid, rs.bptt_steps, generator)
            stats = update.update(dataclasses.replace(batch, **{f: getattr(batch, f).to(dev) for f in (
                "obs", "depth", "privileged", "hidden", "starts", "actions", "log_probs", "values", "advantages",
                "returns", "action_mean", "action_std", "teacher_actions", "dagger_mask")}), schedule_k)  # fmt: skip
            wall = time.monotonic() - started
            if total is None and k == PACE_ITERATIONS:  # the time box: K from the pace after warm-up
                pace = float(np.mean([r["wall_s"] for r in rows[1:]] + [wall]))
                total = update.total_iterations = k + 1 + max(1, int((deadline - time.monotonic()) / pace))
            row = {
                "iteration": k,
                "total_iterations": total,
                **stats.as_dict(),
                "action_std": float(model.log_std.exp().mean().item()),
                "height_cap_m": env.height_cap_m,
                "reward_per_s": float(buf["rewards"].mean().item() / env.tracking.dt_s),
                "track": float(np.mean(tracks)),
                "course_speed": float(np.nanmean(speeds)),
                "course_command_vx": float(np.nanmean(commands)),
                "cleared_by_height": np.histogram(cleared, HEIGHT_BINS_M)[0].tolist(),
                "fell_by_height": np.histogram(fell, HEIGHT_BINS_M)[0].tolist(),
                "falls_per_1000_steps": 1000.0 * falls / (T * n),
                "env_steps_per_s": T * n / wall,
                "collect_env_steps_per_s": T * n / (collected - started),
                "wall_s": wall,
            }
            rows.append(row)
            # Checkpoint selection: once the curriculum has reached full height (so scores compare), keep the
            # weights with the best step-up rate (>= 7.5 cm platforms) over the trailing window.
            score = step_up_rate(rows[-SCORE_WINDOW:])
            row["step_up_rate_window"] = score
            row["schedule_iteration"] = schedule_k
            if score >= ss.ramp_gate_rate:
                schedule_k += 1
            if total and k >= ss.curriculum_fraction * total + SCORE_WINDOW and score > best[0]:
                best = (score, k, copy.deepcopy(model.state_dict()))
            log(
                f"student-step {k}/{total}: L_D {stats.dagger:.4f} (w {stats.dagger_weight:.2f}) "
                f"value {stats.value:.3f} reward/s {row['reward_per_s']:.2f} cleared {row['cleared_by_height']} "
                f"fell {row['fell_by_height']} cap {env.height_cap_m:.2f} m {row['env_steps_per_s']:.0f} env-steps/s"
            )
            k += 1
            if ss.max_iterations is None and time.monotonic() > deadline:
                break
    finally:
        env.close()
    final_state = copy.deepcopy(model.state_dict())
    if best[2] is not None:
        model.load_state_dict(best[2])
    model = model.cpu().eval()
    bundle_dir = out / "bundle"
    provenance = {
        "teacher": {
            **TEACHER_PROVENANCE,
            "reflex": "training.student_step.teacher: a privileged step-up reflex added to the walking policy",
        },
        "training": f"training.student_step hybrid DAgger+PPO stage 2, size {size}, seed {seed}, {len(rows)} "
        f"iterations, {n} envs, platforms 4-22 cm, gate {ss.ramp_gate_rate}, "
        f"from {init if init is not None else 'random weights'}; "
        + (
            f"weights of iteration {best[1]} (best trailing step-up rate {best[0]:.2f})"
            if best[2] is not None
            else "final weights"
        ),
        "size": size,
        "data": "none recorded: DAgger labels and rewards from training.student_step.env (MuJoCo)",
        **run_provenance(seed, time.monotonic() - t_start),
    }
    export_walking_student(model, bundle_dir, "student_step", provenance, frames, manifest, ss.walk_size)
    cleared_total = np.sum([r["cleared_by_height"] for r in rows], axis=0).tolist()
    fell_total = np.sum([r["fell_by_height"] for r in rows], axis=0).tolist()
    result = {
        "size": size,
        "seed": seed,
        "device": device,
        "num_envs": n,
        "init": str(init) if init is not None else None,
        "ramp_gate_rate": ss.ramp_gate_rate,
        "parameters": parameter_count(model.backbone) + parameter_count(model.student),
        "wall_s": time.monotonic() - t_start,
        "cleared_by_height": cleared_total,
        "fell_by_height": fell_total,
        "iterations": rows,
        "bundle": str(bundle_dir),
        "exported_iteration": best[1] if best[2] is not None else len(rows) - 1,
        "exported_step_up_rate_window": best[0] if best[2] is not None else None,
    }
    torch.save({"size": ss.walk_size, "state_dict": final_state}, out / "final_checkpoint.pt")
    (out / "student_step.json").write_text(json.dumps(result, indent=1))
    plot(rows, out / "curves.png")
    return result
