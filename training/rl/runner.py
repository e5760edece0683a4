"""The one runner: rsl_rl's ``OnPolicyRunner`` with a time box, task hooks, progress and curves.

rsl_rl's runner builds the algorithm, its storage and models from the train config and runs
``act -> env.step -> process_env_step`` for ``num_steps_per_env`` steps, then ``compute_returns``
and ``update``. :meth:`Runner.train` keeps that loop and adds what our tasks need around it: a
budget of iterations or of minutes, task hooks, curves and checkpoints as it goes, and an exact
resume. Several processes (``torchrun``) train as rsl_rl's multi-GPU runner does, on CPUs too.
:class:`Runner` says how.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import torch
import torch.distributed as dist
from rsl_rl.env import VecEnv
from rsl_rl.runners import OnPolicyRunner
from rsl_rl.utils.log_writer import LogWriter

from parkour_core.paths import repo_root
from parkour_core.provenance import command_line, git_commit
from training.progress import RunProgress

CURVE = "curve.jsonl"
# The curve as a run folder is committed: one compressed file per run, named by the run's first iteration
# (train() writes them at the end), so a resumed run adds its own rows and leaves the earlier files as they were.
CURVE_PART = "curve.{:06d}.jsonl.gz"
CURVE_PART_GLOB = "curve.[0-9]*.jsonl.gz"
LATEST = "model_latest.pt"


def write_curve_parts(out: Path, runs: list[dict[str, Any]]) -> list[Path]:
    """Split ``out/curve.jsonl`` into one ``CURVE_PART`` per run (``first_iteration``, ``iterations``), and remove
    the parts no run has. Byte-identical rows give byte-identical files, so an earlier run's part is unchanged."""
    lines = (out / CURVE).read_text().splitlines(keepends=True)
    parts = []
    for run in runs:
        first, count = int(run["first_iteration"]), int(run["iterations"])
        part = out / CURVE_PART.format(first)
        part.write_bytes(gzip.compress("".join(lines[first : first + count]).encode(), mtime=0))
        parts.append(part)
    for stale in set(out.glob(CURVE_PART_GLOB)) - set(parts):
        stale.unlink()
    return parts


def committed_curve(out: Path) -> str | None:
    """The rows of a committed run folder's curve (its ``CURVE_PART`` files in order), or None if it has none."""
    parts = sorted(out.glob(CURVE_PART_GLOB), key=lambda p: int(p.name.split(".")[1]))
    return "".join(gzip.decompress(p.read_bytes()).decode() for p in parts) if parts else None


def run_curve_rows(out: Path) -> list[dict[str, Any]]:
    """A run folder's curve rows: its ``CURVE`` while it runs, else its committed ``CURVE_PART`` files."""
    text = (out / CURVE).read_text() if (out / CURVE).exists() else committed_curve(out)
    if text is None:
        raise FileNotFoundError(f"{out}: no {CURVE} or curve.NNNNNN.jsonl.gz (a run folder of training.rl has one)")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


class CurveWriter(LogWriter):
    """Collects the scalars rsl_rl's logger writes for an iteration, by short name (``Loss/value`` -> ``value``)."""

    def __init__(self, log_dir: str, **_: Any) -> None:
        self.log_dir = log_dir
        self.scalars: dict[int, dict[str, float]] = {}

    def add_scalar(self, tag: str, scalar_value: float, global_step: int) -> None:
        # "/time": the same figures against wall time; "Perf/": the runner's own timings are in the row
        if tag.endswith("/time") or tag.startswith("Perf/"):
            return
        self.scalars.setdefault(global_step, {})[tag.rsplit("/", 1)[-1]] = float(scalar_value)

    def pop(self, step: int) -> dict[str, float]:
        return self.scalars.pop(step, {})


@dataclass(frozen=True)
class Budget:
    iterations: int | None = None  # None: time-boxed
    minutes: float | None = None
    pace_iterations: int = 2  # iterations 1..pace_iterations set a time box's pace (iteration 0 warms up)

    def __post_init__(self) -> None:
        if (self.iterations is None) == (self.minutes is None):
            raise ValueError(f"a run has either iterations or minutes, got {self}")
        if (self.iterations is not None and self.iterations < 1) or (self.minutes is not None and self.minutes <= 0):
            raise ValueError(f"a run needs a positive budget, got {self}")


class Hooks(Protocol):
    """What a task may do around each iteration (every method optional in spirit; implement all)."""

    def before_iteration(self, runner: Runner, k: int, total: int | None, fraction: float) -> None: ...

    def after_iteration(self, runner: Runner, k: int, row: dict[str, Any]) -> dict[str, Any]: ...


# Row keys that are timings: a resumed run's rows equal an uninterrupted run's in every other key.
TIMING_KEYS = ("env_steps_per_s", "collect_env_steps_per_s", "collect_s", "learn_s", "wall_s", "total_iterations")


class Runner(OnPolicyRunner):
    """rsl_rl's runner loop (:meth:`train`), with what our tasks need around it:

    - a **budget** of iterations or of minutes: a time-boxed run fixes K (the schedules run on k / K)
      from the pace of its first iterations and runs to its deadline, past K with the schedules holding
      their end values: first iterations slower than the rest set K too low, and a run that stopped at K
      would leave the end of its time box unused;
    - **hooks** (``before_iteration``, ``after_iteration``) where a task sets its curriculum, its
      schedule point or gate, and adds its figures to the iteration's row;
    - **curves as it goes**: rsl_rl's ``Logger`` aggregates the losses, rewards, episode lengths and
      the environment's ``extras["log"]``; :class:`CurveWriter` (an rsl_rl ``LogWriter``) hands them to
      the row, which ``training.progress.RunProgress`` appends to ``curve.jsonl`` and shows as a bar;
      ``model_latest.pt`` (rsl_rl's checkpoint format) every ``save_interval`` iterations, so a killed
      run keeps its curve and its last weights;
    - **exact resume**: the checkpoint also holds what the next iteration reads besides the weights and
      the optimizer (torch's random stream, the adaptive learning rate, the logger's episode buffers, and
      the task's own state where it has ``state_dict``), so :meth:`resume` continues a run as if it had
      never stopped, and each run's wall time, env-steps and commit (``runs``) add up across resumes.

    Several processes (``torchrun``: ``WORLD_SIZE`` > 1) train as rsl_rl's multi-GPU runner does: the
    parameters broadcast from rank 0 when a run starts, the algorithms average their gradients over
    ranks (``reduce_parameters``), only rank 0 logs. rsl_rl insists on ``cuda:LOCAL_RANK`` and NCCL;
    :meth:`_configure_multi_gpu` also lets a CPU run join over gloo, so the path is tested on a CPU
    (``training/launch/test_multi_gpu.py``).
    """

    def __init__(
        self,
        env: VecEnv,
        train_cfg: dict,
        out: Path | str,
        device: str = "cpu",
        hooks: Hooks | None = None,
        figures: tuple[str, ...] = (),
        keep_curve: bool = False,
        note: str = "",
    ) -> None:
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        train_cfg = {**train_cfg, "logger": {"class_name": CurveWriter}}
        if not keep_curve:  # a new run's curve; train() calls append to it (a resumed run keeps it)
            (self.out / CURVE).unlink(missing_ok=True)
        with contextlib.redirect_stdout(io.StringIO()):  # rsl_rl prints the models; the note has them
            super().__init__(env, train_cfg, log_dir=str(self.out / "logs"), device=device)
        self.logger.git_status_repos = [str(repo_root())]
        self.hooks = hooks
        self.figures = figures
        self.total_iterations: int | None = None
        self.rows: list[dict[str, Any]] = []
        # Each run of this training (a first run and its resumes): commit, iterations, env-steps, wall time.
        self.runs: list[dict[str, Any]] = []
        self._run: dict[str, Any] = {
            "commit": git_commit(), "command": command_line(), "first_iteration": 0, "iterations": 0, "env_steps": 0,
            "wall_s": 0.0, **({"note": note} if note else {}),
        }  # fmt: skip

    def _configure_multi_gpu(self) -> None:
        """rsl_rl's, but a CPU run joins over gloo, and a process group its launcher already started is kept
        (rsl_rl would start a second one and fail)."""
        world = int(os.getenv("WORLD_SIZE", "1"))
        cuda = torch.device(self.device).type == "cuda"
        if world == 1 or (cuda and not dist.is_initialized()):
            super()._configure_multi_gpu()
            return
        self.gpu_world_size, self.is_distributed = world, True
        self.gpu_local_rank, self.gpu_global_rank = int(os.getenv("LOCAL_RANK", "0")), int(os.getenv("RANK", "0"))
        if cuda and self.device != f"cuda:{self.gpu_local_rank}":
            raise ValueError(f"Device '{self.device}' does not match expected device for local rank "
                             f"'{self.gpu_local_rank}'.")  # fmt: skip
        self.cfg["multi_gpu"] = {"global_rank": self.gpu_global_rank, "local_rank": self.gpu_local_rank,
                                 "world_size": world}  # fmt: skip
        if not dist.is_initialized():
            dist.init_process_group(backend="gloo", rank=self.gpu_global_rank, world_size=world)

    def save(self, path: str, infos: dict | None = None) -> None:
        """rsl_rl's checkpoint plus what an exact resume needs (:meth:`resume_state`), written beside and
        renamed into place: a run killed while saving keeps the last one."""
        partial = f"{path}.partial"
        super().save(partial, {**(infos or {}), **self.resume_state()})
        os.replace(partial, path)

    def run_totals(self) -> dict[str, Any]:
        """Every run so far (``all_runs``) with their total env-steps and wall time: a bundle's provenance."""
        runs = self.all_runs()
        return {"runs": runs, "env_steps": int(sum(r["env_steps"] for r in runs)),
                "wall_s": round(sum(r["wall_s"] for r in runs), 1)}  # fmt: skip

    def all_runs(self) -> list[dict[str, Any]]:
        """Every run of this training so far, this one last."""
        return [*self.runs, dict(self._run)] if self._run["iterations"] else list(self.runs)

    def resume_state(self) -> dict[str, Any]:
        lg = self.logger
        task = getattr(self.hooks, "state_dict", None)
        return {
            "torch_rng": torch.get_rng_state(),
            "learning_rate": self.alg.learning_rate,
            "logger": {
                "rewbuffer": list(lg.rewbuffer),
                "lenbuffer": list(lg.lenbuffer),
                "cur_reward_sum": lg.cur_reward_sum.clone(),
                "cur_episode_length": lg.cur_episode_length.clone(),
                "tot_timesteps": lg.tot_timesteps,
                "tot_time": lg.tot_time,
            },
            "rows": len(self.rows),
            "runs": self.all_runs(),
            "task": task() if task is not None else None,
        }

    def resume(self, path: Path | str) -> None:
        """Continue from a checkpoint this runner's :meth:`save` wrote: models, optimizer and iteration
        (rsl_rl's), then the random stream, learning rate, logger, rows (``curve.jsonl`` cut to the
        checkpoint's iteration: rows a killed run wrote after its last save are dropped) and the task."""
        infos = self.load(str(path))
        if not infos or "torch_rng" not in infos:
            raise ValueError(f"{path} has no resume state (an rsl_rl checkpoint from elsewhere): it cannot be resumed")
        torch.set_rng_state(infos["torch_rng"])
        self.alg.learning_rate = infos["learning_rate"]
        lg, saved = self.logger, infos["logger"]
        lg.rewbuffer = deque(saved["rewbuffer"], maxlen=lg.rewbuffer.maxlen)
        lg.lenbuffer = deque(saved["lenbuffer"], maxlen=lg.lenbuffer.maxlen)
        lg.cur_reward_sum[:] = saved["cur_reward_sum"]
        lg.cur_episode_length[:] = saved["cur_episode_length"]
        lg.tot_timesteps, lg.tot_time = saved["tot_timesteps"], saved["tot_time"]
        curve = self.out / CURVE
        committed = None if curve.exists() else committed_curve(self.out)
        if committed is not None:  # a committed run folder
            curve.write_text(committed)
        lines = curve.read_text().splitlines() if curve.exists() else []
        if len(lines) < infos["rows"]:
            raise ValueError(f"{curve} has {len(lines)} rows, the checkpoint {infos['rows']}: not this run's curve")
        self.rows = [json.loads(line) for line in lines[: infos["rows"]]]
        curve.write_text("".join(line + "\n" for line in lines[: infos["rows"]]))
        self.runs = list(infos["runs"])
        self._run["first_iteration"] = len(self.rows)
        task = getattr(self.hooks, "load_state_dict", None)
        if infos["task"] is not None:
            if task is None:
                raise ValueError(f"{path} holds a task state, but this task cannot load one")
            task(infos["task"])
        refresh = getattr(self.env, "refresh", None)
        if refresh is not None:
            refresh()  # the observation of the restored state

    def _action_std(self) -> torch.Tensor:
        policy = self.alg.get_policy()
        if getattr(policy, "distribution", None) is None:  # a deterministic student (DAgger)
            return torch.zeros(1)
        return policy.output_std

    def train(self, budget: Budget, name: str = "train") -> list[dict[str, Any]]:
        """Run the budget; returns every row so far (also in ``curve.jsonl``). A second call continues the
        iteration count, as rsl_rl's ``learn`` does."""
        started = time.monotonic()
        deadline = started + 60.0 * budget.minutes if budget.minutes is not None else None
        total = budget.iterations
        first = len(self.rows)
        self.total_iterations = first + total if total is not None else None
        steps = self.cfg["num_steps_per_env"]
        obs = self.env.get_observations().to(self.device)
        self.alg.train_mode()
        if self.logger.writer is None:  # once per runner (rsl_rl's logger consumes its config)
            with contextlib.redirect_stdout(io.StringIO()):
                self.logger.init_logging_writer()
        if self.is_distributed and first == 0:  # as rsl_rl's learn: once (its rollouts leave inference tensors)
            self.alg.broadcast_parameters()
        writer = self.logger.writer  # None on ranks other than 0: rsl_rl logs from rank 0 only
        assert writer is None or isinstance(writer, CurveWriter)
        progress = RunProgress(
            name, total=total, time_box_s=None if deadline is None else deadline - started, figures=self.figures,
            curve=self.out / CURVE,
        )  # fmt: skip
        k = first
        with progress:
            while (total is not None and k < first + total) or (
                total is None and deadline is not None and time.monotonic() < deadline
            ):
                elapsed = time.monotonic() - started
                fraction = (k - first) / total if total else elapsed / (deadline - started)  # type: ignore[operator]
                if self.hooks is not None:
                    self.hooks.before_iteration(self, k, self.total_iterations, fraction)
                begin = time.monotonic()
                with torch.inference_mode():
                    for _ in range(steps):
                        actions = self.alg.act(obs)
                        obs, rewards, dones, extras = self.env.step(actions.to(self.env.device))
                        obs, rewards, dones = obs.to(self.device), rewards.to(self.device), dones.to(self.device)
                        self.alg.process_env_step(obs, rewards, dones, extras)
                        self.logger.process_env_step(rewards, dones, extras, None)
                    collected = time.monotonic()
                    self.alg.compute_returns(obs)
                losses = self.alg.update()
                learned = time.monotonic()
                self.current_learning_iteration = k
                with contextlib.redirect_stdout(io.StringIO()):  # its console block; the row and the bar have it
                    self.logger.log(
                        it=k, start_it=first, total_it=self.total_iterations or k + 1, collect_time=collected - begin,
                        learn_time=learned - collected, loss_dict=losses, learning_rate=self.alg.learning_rate,
                        action_std=self._action_std(), rnd_weight=None,
                    )  # fmt: skip
                samples = steps * self.env.num_envs
                row: dict[str, Any] = {
                    "iteration": k,
                    "total_iterations": self.total_iterations,
                    **(writer.pop(k) if writer is not None else {}),
                    "env_steps_per_s": samples / (learned - begin),
                    "collect_env_steps_per_s": samples / (collected - begin),
                    "collect_s": collected - begin,
                    "learn_s": learned - collected,
                    "wall_s": learned - begin,
                }
                if total is None and deadline is not None and k == first + budget.pace_iterations:
                    pace = sum(r["wall_s"] for r in [*self.rows[first + 1 :], row]) / budget.pace_iterations
                    self.total_iterations = k + 1 + max(1, int((deadline - time.monotonic()) / pace))
                    row["total_iterations"] = self.total_iterations
                if self.hooks is not None:
                    row = self.hooks.after_iteration(self, k, row)
                self.rows.append(row)
                self._run["iterations"] += 1
                self._run["env_steps"] += samples
                self._run["wall_s"] += row["wall_s"]
                progress.update(row)
                if (k + 1) % self.cfg["save_interval"] == 0:
                    self.save(str(self.out / LATEST))
                k += 1
        self.save(str(self.out / LATEST))
        return self.rows
