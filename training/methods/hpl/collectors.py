"""HPL's distillation layout: one trainer process, N collector processes, DAgger in between.

- The **trainer** (the calling process) owns the student and its optimizer. After every update it
  copies the weights into a shared-memory copy of the student (``share_memory_()`` tensors) under a
  lock and bumps a version counter.
- Each **collector** (a ``spawn``-ed process, one torch thread) builds its own environments and its
  own oracle, reloads the student whenever the version changed, rolls the student out for
  ``steps`` ticks (the student acts; the oracle labels every state from its privileged observation)
  and puts the batch (numpy arrays) on a queue. Collectors never wait for the trainer: a batch may
  have been collected with weights one or more updates old (``lag`` in the per-iteration rows).
- Each trainer **iteration** takes N batches off the queue and runs one DAgger step on them.

:func:`run_single` is the baseline: the same collector and the same update in one process,
alternating. :func:`bench_collectors` measures both in transitions (environment steps that reached
the trainer) per second and writes ``bench/results/hpl_collectors.json``:

    .venv/bin/python -m training.methods.hpl.collectors --bench

What runs in the processes is a :class:`DaggerTask` (picklable: spawn sends it to every collector):
:class:`StudentTask` is the real one (the recurrent depth student of training/export on the CPU
student env, labels from the scandot oracle); :class:`ToyTask` is a numpy env with a linear oracle for
tests and for measuring the machinery's own overhead.
"""

from __future__ import annotations

import argparse
import copy
import os
import queue as queue_module
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

Arrays = dict[str, np.ndarray]
RESULTS = Path(__file__).resolve().parents[3] / "bench" / "results" / "hpl_collectors.json"


class Collector(Protocol):
    def rollout(self, student: nn.Module, steps: int) -> tuple[Arrays, dict[str, float]]: ...

    def close(self) -> None: ...


class DaggerTask(Protocol):
    def make_student(self) -> nn.Module: ...

    def make_collector(self, seed: int) -> Collector: ...

    def loss(self, student: nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor: ...


def weight_sum(model: nn.Module) -> float:
    """A checksum of a model's weights (which version a collector acted with)."""
    return float(sum(p.detach().double().sum() for p in model.parameters()))


def transitions_of(batch: Arrays) -> int:
    """Environment steps in a batch: its ``labels`` are [T, N, A]."""
    return int(np.prod(batch["labels"].shape[:2]))


# -- a toy task (tests, overhead) -----------------------------------------------------------------


class ToyCollector:
    """``num_envs`` points drifting by the student's action; the oracle's label is ``W @ obs``."""

    def __init__(self, task: ToyTask, seed: int) -> None:
        self.task = task
        self.rng = np.random.default_rng(seed)
        self.oracle = np.random.default_rng(task.seed).normal(size=(task.num_actions, task.obs_dim)) / task.obs_dim
        self.obs = self.rng.normal(size=(task.num_envs, task.obs_dim)).astype(np.float32)

    def rollout(self, student: nn.Module, steps: int) -> tuple[Arrays, dict[str, float]]:
        obs = np.zeros((steps, self.task.num_envs, self.task.obs_dim), np.float32)
        labels = np.zeros((steps, self.task.num_envs, self.task.num_actions), np.float32)
        for t in range(steps):
            with torch.no_grad():
                action = student(torch.from_numpy(self.obs)).numpy()
            obs[t], labels[t] = self.obs, self.obs @ self.oracle.T
            drift = np.zeros_like(self.obs)
            drift[:, : self.task.num_actions] = action
            self.obs = (0.9 * self.obs + 0.1 * drift + self.rng.normal(size=self.obs.shape)).astype(np.float32)
        return {"obs": obs, "labels": labels}, {"weight_sum": weight_sum(student)}

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class ToyTask:
    obs_dim: int = 8
    num_actions: int = 2
    num_envs: int = 4
    seed: int = 0

    def make_student(self) -> nn.Module:
        torch.manual_seed(self.seed)
        return nn.Sequential(nn.Linear(self.obs_dim, 32), nn.ELU(), nn.Linear(32, self.num_actions))

    def make_collector(self, seed: int) -> ToyCollector:
        return ToyCollector(self, seed)

    def loss(self, student: nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return (student(batch["obs"]) - batch["labels"]).pow(2).mean()


# -- the real task: the recurrent depth student on the CPU student env -----------------------------


class StudentCollector:
    """A StudentEnv, the oracle, and the student's recurrent state carried across rollouts."""

    def __init__(self, task: StudentTask, seed: int) -> None:
        from training.algorithms.sampling import AdaptiveStartSampler
        from training.envs.student import StudentConfig, StudentEnv
        from training.export.student import student_manifest
        from training.pipeline.teacher import phase_start_sampler, skill_ref_sampler, tracking_config

        self.task = task
        refs = [r.reference for r in task.references]
        track = tracking_config(task.cfg, seed)
        if task.max_boxes is not None:
            import dataclasses

            track = dataclasses.replace(track, max_boxes=task.max_boxes)
        manifest = student_manifest("training", task.size.gru_hidden, {}, {}, latent_dim=task.size.latent_dim)
        self.env = StudentEnv(refs, StudentConfig(tracking=track, camera=task.camera), manifest)
        start = AdaptiveStartSampler(task.cfg.sampling.bins, enabled=False)
        self.env.tracking.start_sampler = phase_start_sampler(start, refs, track.min_episode_frames)
        self.env.tracking.ref_sampler = skill_ref_sampler(task.references)
        self.oracle = task.make_oracle(self.env.tracking.num_obs, self.env.num_actions)
        self.oracle.eval()
        self.generator = torch.Generator().manual_seed(seed)
        self.obs = self.env.reset()
        self.hidden: torch.Tensor | None = None
        self.starts = torch.ones(self.env.num_envs, dtype=torch.bool)
        self.deviation = self.env.tracking.current_tracking_error()
        self.returns = np.zeros(self.env.num_envs)
        self.finished: list[float] = []

    def rollout(self, student: nn.Module, steps: int) -> tuple[Arrays, dict[str, float]]:
        from training.algorithms.hybrid import dagger_mask, latch_until_reset
        from training.pipeline.teacher import gaussian_sample

        n = self.env.num_envs
        if self.hidden is None:
            self.hidden = student.initial_hidden(n)
        keys = ("obs", "depth", "hidden", "starts", "labels", "deviation", "dones")
        buf: dict[str, list[Any]] = {k: [] for k in keys}
        for _ in range(steps):
            o, d, p = (torch.from_numpy(self.obs[k]) for k in ("policy", "depth", "privileged"))
            with torch.no_grad():
                mean, next_hidden = student.step(o, d, self.hidden)
                action = gaussian_sample(mean, student.distribution(mean).stddev, self.generator)
                label = self.oracle.act_inference(p)
            for key, value in zip(keys[:6], (o, d, self.hidden[0], self.starts, label, self.deviation), strict=True):
                buf[key].append(np.asarray(value))
            self.obs, reward, done, _ = self.env.step(action.numpy().astype(np.float64))
            buf["dones"].append(done.copy())
            self.returns += reward
            self.finished += self.returns[done].tolist()
            self.returns[done] = 0.0
            self.starts = torch.from_numpy(done.copy())
            self.hidden = next_hidden * (~self.starts).float()[None, :, None]
            self.deviation = self.env.tracking.current_tracking_error()
        out = {k: np.stack(v) for k, v in buf.items()}
        mask = dagger_mask(torch.from_numpy(out.pop("deviation")), self.task.original_termination_m)
        out["mask"] = latch_until_reset(mask, torch.from_numpy(out.pop("dones"))).numpy()
        info = {"episode_return": float(np.mean(self.finished)) if self.finished else float(self.returns.mean())}
        self.finished = []
        return out, info

    def close(self) -> None:
        self.env.close()


@dataclass(frozen=True)
class StudentTask:
    """The recurrent depth student distilled from the scandot oracle (``oracle.ScandotActor``)."""

    references: Sequence[Any]  # SkillReference
    cfg: Any  # a student TrainConfig
    size: Any  # training.export.models.StudentSize
    camera: Any  # training.envs.student.CameraConfig
    oracle: nn.Module  # act_inference(privileged) -> the label; pickled to every collector
    bptt_steps: int = 8
    max_boxes: int | None = None
    seed: int = 0
    original_termination_m: float = 0.5

    def make_oracle(self, num_obs: int, num_actions: int) -> nn.Module:
        return copy.deepcopy(self.oracle)

    def make_student(self) -> nn.Module:
        from training.envs.privileged import privileged_size
        from training.pipeline.student_update import build_student

        return build_student(self.size, self.seed, privileged_size(), self.cfg)

    def make_collector(self, seed: int) -> StudentCollector:
        return StudentCollector(self, seed)

    def loss(self, student: nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """HPL's DAgger: MSE of the student's mean to the oracle's action, over BPTT windows, masked."""
        from training.algorithms.hybrid import masked_mse

        steps, n = batch["labels"].shape[:2]
        length = self.bptt_steps if steps % self.bptt_steps == 0 else steps
        count = steps // length

        def cut(x: torch.Tensor) -> torch.Tensor:
            x = x.reshape(count, length, n, *x.shape[2:])
            return x.transpose(0, 1).reshape(length, count * n, *x.shape[3:])

        obs, depth, hidden = cut(batch["obs"]), cut(batch["depth"]), cut(batch["hidden"])
        means = student.sequence(obs, depth, hidden[0].unsqueeze(0).contiguous(), cut(batch["starts"]))
        flat = lambda x: x.reshape(-1, *x.shape[2:])  # noqa: E731
        return masked_mse(flat(means), flat(cut(batch["labels"])), flat(cut(batch["mask"])))


# -- trainer and collectors -------------------------------------------------------------------------


@dataclass
class DistillResult:
    student: nn.Module
    iterations: list[dict[str, Any]] = field(default_factory=list)
    transitions: int = 0
    wall_s: float = 0.0
    steady_transitions: int = 0  # after the first iteration (start-up excluded)
    steady_s: float = 0.0
    samples: list[Arrays] = field(default_factory=list)  # a few batches kept for the caller (calibration)
    version_checksums: list[float] = field(default_factory=list)  # weight_sum of the student at each version

    @property
    def transitions_per_s(self) -> float:
        return self.steady_transitions / self.steady_s if self.steady_s > 0 else 0.0


def _update(task: DaggerTask, student: nn.Module, optimizer: torch.optim.Optimizer, batches: list[Arrays]) -> float:
    optimizer.zero_grad()
    losses = [task.loss(student, {k: torch.from_numpy(v) for k, v in b.items()}) for b in batches]
    loss = torch.stack(losses).mean()
    loss.backward()
    nn.utils.clip_grad_norm_(student.parameters(), 1.0)
    optimizer.step()
    return float(loss.item())


def _collector_main(task, rank, seed, shared, version, lock, out_queue, stop, steps) -> None:
    torch.set_num_threads(1)
    student = task.make_student()
    collector = task.make_collector(seed)
    seen = -1
    try:
        while not stop.is_set():
            with lock:
                if version.value != seen:
                    student.load_state_dict(shared)
                    seen = version.value
            batch, info = collector.rollout(student, steps)
            item = (rank, seen, batch, info)
            while not stop.is_set():
                try:
                    out_queue.put(item, timeout=0.2)
                    break
                except queue_module.Full:
                    continue
    finally:
        collector.close()


def _row(k: int, loss: float, transitions: int, infos: list[dict[str, float]], started: float) -> dict[str, Any]:
    returns = [i["episode_return"] for i in infos if "episode_return" in i]
    return {
        "iteration": k,
        "loss": loss,
        "transitions": transitions,
        "episode_return": float(np.mean(returns)) if returns else 0.0,
        "wall_s": time.perf_counter() - started,
    }


def run_single(
    task: DaggerTask, iterations: int, steps: int, lr: float = 1e-3, seed: int = 0, keep: int = 0, log=None
) -> DistillResult:
    """The baseline: one process collects with its collector, then updates, alternating."""
    started = time.perf_counter()
    student = task.make_student()
    optimizer = torch.optim.Adam(student.parameters(), lr=lr)
    collector = task.make_collector(seed)
    result = DistillResult(student)
    try:
        for k in range(iterations):
            if k == 1:
                steady = time.perf_counter()
            batch, info = collector.rollout(student, steps)
            if len(result.samples) < keep:
                result.samples.append(batch)
            loss = _update(task, student, optimizer, [batch])
            n = transitions_of(batch)
            result.transitions += n
            result.steady_transitions += n if k >= 1 else 0
            result.iterations.append({**_row(k, loss, n, [info], started), "lag": 0})
            if log:
                log(f"dagger (single process) {k + 1}/{iterations}: loss {loss:.4f}")
    finally:
        collector.close()
    result.wall_s = time.perf_counter() - started
    result.steady_s = time.perf_counter() - steady if iterations > 1 else 0.0
    return result


def run_distributed(
    task: DaggerTask,
    collectors: int,
    iterations: int,
    steps: int,
    lr: float = 1e-3,
    seed: int = 0,
    keep: int = 0,
    timeout_s: float = 300.0,
    log=None,
) -> DistillResult:
    """One trainer (this process) and ``collectors`` spawned collector processes (module docstring)."""
    import torch.multiprocessing as tmp

    if collectors < 1:
        raise ValueError(f"collectors must be >= 1, got {collectors}")
    started = time.perf_counter()
    ctx = tmp.get_context("spawn")
    student = task.make_student()
    shared_model = task.make_student()
    shared_model.load_state_dict(student.state_dict())
    shared_model.share_memory()
    shared = shared_model.state_dict()
    version, lock, stop = ctx.Value("l", 0), ctx.Lock(), ctx.Event()
    batches: Any = ctx.Queue(maxsize=2 * collectors)
    procs = [
        ctx.Process(
            target=_collector_main,
            args=(task, rank, seed + 1000 * (rank + 1), shared, version, lock, batches, stop, steps),
            daemon=True,
        )
        for rank in range(collectors)
    ]
    for p in procs:
        p.start()
    optimizer = torch.optim.Adam(student.parameters(), lr=lr)
    result = DistillResult(student, version_checksums=[weight_sum(student)])
    try:
        for k in range(iterations):
            if k == 1:
                steady = time.perf_counter()
            got: list[tuple[int, int, Arrays, dict[str, float]]] = []
            deadline = time.monotonic() + timeout_s
            while len(got) < collectors:
                try:
                    got.append(batches.get(timeout=1.0))
                except queue_module.Empty:
                    dead = [p.pid for p in procs if not p.is_alive()]
                    if dead or time.monotonic() > deadline:
                        raise RuntimeError(f"collectors {dead or 'all'} stopped sending batches") from None
            if len(result.samples) < keep:
                result.samples += [g[2] for g in got][: keep - len(result.samples)]
            loss = _update(task, student, optimizer, [g[2] for g in got])
            with lock:
                for name, tensor in student.state_dict().items():
                    shared[name].copy_(tensor)
                version.value += 1
            result.version_checksums.append(weight_sum(student))
            n = sum(transitions_of(g[2]) for g in got)
            result.transitions += n
            result.steady_transitions += n if k >= 1 else 0
            row = _row(k, loss, n, [g[3] for g in got], started)
            row["lag"] = float(np.mean([k - g[1] for g in got]))  # updates between the weights used and now
            row["ranks"] = [g[0] for g in got]
            row["versions"] = [g[1] for g in got]
            row["collector_weight_sums"] = [g[3].get("weight_sum") for g in got]
            result.iterations.append(row)
            if log:
                log(f"dagger ({collectors} collectors) {k + 1}/{iterations}: loss {loss:.4f}, lag {row['lag']:.1f}")
        result.steady_s = time.perf_counter() - steady if iterations > 1 else 0.0
    finally:
        stop.set()
        while True:  # unblock collectors waiting on a full queue
            try:
                batches.get_nowait()
            except (queue_module.Empty, OSError, ValueError):
                break
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.terminate()
                p.join(timeout=5)
    result.wall_s = time.perf_counter() - started
    return result


# -- benchmark ----------------------------------------------------------------------------------------


def bench_task(seed: int = 0, num_envs: int = 4, workdir: Path | None = None) -> StudentTask:
    """The real StudentTask at tiny size: 2 synthesized references cut to 1 s, an untrained oracle."""
    import tempfile

    from training.envs.privileged import privileged_size
    from training.methods.hpl.oracle import untrained_oracle
    from training.motion_matching.synth import synthesize
    from training.pipeline.smoke import DEFAULT_CONFIG, SIZES, method_student_config
    from training.pipeline.teacher import toy_references

    preset = SIZES["tiny"]
    mm = Path(workdir or tempfile.mkdtemp(prefix="hpl_bench_")) / "mm"
    synthesize(preset.motions, seed, mm, None)
    references = toy_references(mm, preset.reference_s)
    cfg = method_student_config(DEFAULT_CONFIG, preset, seed)
    oracle = untrained_oracle(privileged_size(), 29, (64, 64), seed)
    import dataclasses

    cfg = dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, num_envs=num_envs))
    return StudentTask(references, cfg, preset.student_size, preset.camera, oracle, seed=seed)


def bench_collectors(
    out: Path = RESULTS, collectors: Sequence[int] = (1, 2), iterations: int = 6, steps: int = 24, num_envs: int = 4
) -> dict[str, Any]:
    """Transitions/s reaching the trainer: one process vs a trainer with N collectors; writes ``out``."""
    from parkour_core.provenance import provenance
    from parkour_core.stats import write_json

    task = bench_task(num_envs=num_envs)
    runs = []
    single = run_single(task, iterations, steps)
    runs.append({"layout": "single process", "collectors": 0, **_summary(single)})
    for n in collectors:
        result = run_distributed(task, n, iterations, steps)
        runs.append({"layout": f"trainer + {n} collectors", "collectors": n, **_summary(result)})
    base = runs[0]["transitions_per_s"]
    for r in runs:
        r["speedup_vs_single"] = round(r["transitions_per_s"] / base, 2) if base else None
    toy = ToyTask(num_envs=64)
    toy_single = run_single(toy, 20, 24)
    toy_multi = run_distributed(toy, 2, 20, 24)
    data = {
        **provenance(),
        "what": "HPL DAgger distillation: transitions (env steps reaching the trainer) per second, steady state "
        "(first iteration, with env and process start-up, excluded)",
        "machine": {"cpus": os.cpu_count(), "torch_threads": torch.get_num_threads()},
        "task": {
            "env": "training.envs.student.StudentEnv (G1 tracking + simulated depth, tiny camera 29x20)",
            "student": "training/export tiny recurrent depth student",
            "oracle": "HPL scandot oracle (untrained: throughput only)",
            "envs_per_process": num_envs,
            "steps_per_rollout": steps,
            "iterations": iterations,
        },
        "runs": runs,
        "toy_task_overhead": {
            "single_transitions_per_s": round(toy_single.transitions_per_s, 1),
            "two_collectors_transitions_per_s": round(toy_multi.transitions_per_s, 1),
        },
    }
    write_json(Path(out), data)
    return data


def _summary(r: DistillResult) -> dict[str, Any]:
    return {
        "transitions_per_s": round(r.transitions_per_s, 1),
        "transitions": r.transitions,
        "wall_s_with_startup": round(r.wall_s, 2),
        "mean_lag_updates": round(float(np.mean([row["lag"] for row in r.iterations])), 2),
        "final_loss": r.iterations[-1]["loss"],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.methods.hpl.collectors")
    parser.add_argument("--bench", action="store_true", help="measure and write bench/results/hpl_collectors.json")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--collectors", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--iterations", type=int, default=6)
    args = parser.parse_args(argv)
    if not args.bench:
        parser.error("nothing to do: pass --bench")
    # Through the module's import name, so spawned collectors unpickle the tasks without __main__.
    from training.methods.hpl import collectors as module

    data = module.bench_collectors(args.out, args.collectors, args.iterations)
    for r in data["runs"]:
        print(f"{r['layout']}: {r['transitions_per_s']:.0f} transitions/s (x{r['speedup_vs_single']})")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
