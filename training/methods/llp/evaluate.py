"""LLP's entry/exit evaluation of a trained student: one trial per reference from its first frame, the
student's mean action (its exported pair, as the robot runs it), until the episode ends; each trial
scored at the skill's entry and exit windows (:mod:`training.methods.llp.entry_exit`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from training.configs.schema import TrainConfig
from training.envs.student import CameraConfig, StudentConfig
from training.export.student import student_manifest
from training.methods.llp.entry_exit import EntryExitScore, Trajectory, aggregate, score_trial, skill_windows
from training.methods.llp.references import LLPReference
from training.methods.llp.student import LLPModel
from training.methods.llp.timing import LLPTiming, llp_student_env
from training.pipeline.teacher import tracking_config


def evaluate_entry_exit(
    model: LLPModel,
    references: Sequence[LLPReference],
    cfg: TrainConfig,
    camera: CameraConfig,
    seed: int,
    timing: LLPTiming,
    before_s: float = 0.3,
    after_s: float = 0.3,
    max_error_m: float = 0.5,
) -> dict[str, Any]:
    refs = [r.reference for r in references]
    track_cfg = dataclasses.replace(tracking_config(cfg, seed + 11), num_envs=len(refs))
    backbone, student = model.bundle_pair()
    manifest = student_manifest("eval", model.rnn_hidden_dim, {}, {}, latent_dim=model.size.latent_dim)
    env = llp_student_env(refs, StudentConfig(tracking=track_cfg, camera=camera), manifest, timing)
    env.termination_m = cfg.termination.relaxed_tracking_error_m
    n = len(refs)
    times: list[list[float]] = [[] for _ in range(n)]
    errors: list[list[float]] = [[] for _ in range(n)]
    failed_at: list[float | None] = [None] * n
    running = np.ones(n, dtype=bool)
    try:
        obs = env.reset(np.arange(n), np.zeros(n, dtype=np.int64), np.arange(n))
        hidden = torch.zeros(1, n, model.rnn_hidden_dim)
        dt = env.tracking.dt_s
        step = 0
        while running.any():
            with torch.no_grad():
                latent = backbone(torch.from_numpy(obs["depth"]))
                mean, hidden = student(torch.from_numpy(obs["policy"]), latent, hidden)
            obs, _, done, info = env.step(mean.numpy().astype(np.float64))
            step += 1
            for i in np.flatnonzero(running):  # each trial is recorded up to its first episode's end
                times[i].append(step * dt)
                errors[i].append(float(info["tracking_error"][i]))
                if done[i]:
                    running[i] = False
                    if info["terminated"][i]:
                        failed_at[i] = step * dt
    finally:
        env.close()
    scores: list[EntryExitScore] = []
    for i, r in enumerate(references):
        windows = skill_windows(r.entry_frame, r.end_frame, r.reference.fps, before_s, after_s)
        scores.append(score_trial(Trajectory.of(times[i], errors[i], failed_at[i]), windows, max_error_m))
    return {
        "windows_s": {"before": before_s, "after": after_s},
        "max_error_m": max_error_m,
        "termination_m": cfg.termination.relaxed_tracking_error_m,
        "summary": aggregate(scores),
        "trials": [
            {"reference": r.reference.name, "ended_s": times[i][-1], "failed_at_s": failed_at[i], **s.to_dict()}
            for i, (r, s) in enumerate(zip(references, scores, strict=True))
        ],
    }
