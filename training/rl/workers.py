"""A :class:`~training.rl.env.TaskEnv` over shares of the environments, each share in a worker process.

rsl_rl's runner acts synchronously in the trainer process: one batch of actions, then every
environment steps, then the next batch. So a layout with several processes can only sit on the
environment's side of that contract: :class:`Workers` holds N tasks (each built in its process by a
picklable factory, each owning its share of the environments and whatever labels them), and
:meth:`Workers.step` sends every worker its slice of the actions, lets all of them step at once
and returns the observation groups, rewards, dones and time-outs concatenated in share order.
:class:`~training.rl.env.NumpyVecEnv` makes it rsl_rl's ``VecEnv`` like any other task.

A worker that raises (or dies) takes the others with it: the call raises ``RuntimeError`` with the
worker's traceback after every worker process is gone. :meth:`Workers.close` ends them too (and a
``Workers`` dropped without it, when it is collected).
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import traceback
import weakref
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from training.rl.env import TaskEnv

Groups = dict[str, NDArray[np.floating]]
CLOSE = "__close__"


def _serve(pipe: Connection) -> None:
    """A worker: build the share's task from the factory the trainer sends, then run what the trainer asks
    until it says close."""
    torch.set_num_threads(1)  # N workers and the trainer share the cores; more threads only contend
    try:
        factory: Callable[[], TaskEnv] = pipe.recv()
        task = factory()
        pipe.send(("ok", (task.num_envs, task.num_actions, task.max_episode_length)))
    except BaseException:
        pipe.send(("error", traceback.format_exc()))
        return
    try:
        while True:
            name, args = pipe.recv()
            if name == CLOSE:
                break
            try:
                value = getattr(task, name)
                pipe.send(("ok", value(*args) if callable(value) else value))
            except Exception:
                pipe.send(("error", traceback.format_exc()))
    except (EOFError, KeyboardInterrupt):  # the trainer is gone
        pass
    finally:
        task.close()


def _stop(processes: list[BaseProcess], pipes: list[Connection]) -> None:
    """Ask every worker to close, then end whoever has not."""
    for pipe in pipes:
        with contextlib.suppress(BrokenPipeError, OSError):  # a worker that already died
            pipe.send((CLOSE, ()))
    for proc in processes:
        proc.join(timeout=10)
        if proc.is_alive():
            proc.terminate()
            proc.join(timeout=5)
        if proc.is_alive():
            proc.kill()
            proc.join()
    for pipe in pipes:
        pipe.close()


class Workers:
    """See the module docstring. ``factories[i]()`` builds share ``i`` (in its worker with ``processes``).

    ``processes=False`` builds the same shares in this process and steps them in turn: the one-process
    baseline, with the same observations as the workers give for the same seeds.
    """

    def __init__(self, factories: Sequence[Callable[[], TaskEnv]], processes: bool = True) -> None:
        if not factories:
            raise ValueError("Workers needs at least one share")
        self.processes: list[BaseProcess] = []
        self.pipes: list[Connection] = []
        self.local: list[TaskEnv] = []
        self._closed = False
        if processes:
            ctx = mp.get_context("spawn")  # a fork would copy the trainer's torch threads and MuJoCo state
            for rank in range(len(factories)):
                parent, child = ctx.Pipe()
                proc = ctx.Process(target=_serve, args=(child,), name=f"task-worker-{rank}", daemon=True)
                proc.start()
                child.close()
                self.processes.append(proc)
                self.pipes.append(parent)
            self._finalizer = weakref.finalize(self, _stop, self.processes, self.pipes)
            # Through the pipe, not as the process's arguments: spawn writes those to the child while the
            # trainer still holds the other end, so a child that dies before reading them (a script without
            # a __main__ guard) would leave the trainer blocked for good once they pass the pipe's 64 KB.
            for rank, (pipe, factory) in enumerate(zip(self.pipes, factories, strict=True)):
                try:
                    pipe.send(factory)
                except (BrokenPipeError, OSError):
                    self.close()
                    raise RuntimeError(f"worker {rank} died before it got its share (exit code "
                                       f"{self.processes[rank].exitcode})") from None  # fmt: skip
            shapes = self._gather()
        else:
            self.local = [factory() for factory in factories]
            shapes = [(t.num_envs, t.num_actions, t.max_episode_length) for t in self.local]
        if len({s[1] for s in shapes}) != 1:
            raise ValueError(f"the shares act with different numbers of actions: {[s[1] for s in shapes]}")
        self.shares = [int(s[0]) for s in shapes]
        self.bounds = np.cumsum([0, *self.shares])
        self.num_envs = int(self.bounds[-1])
        self.num_actions = int(shapes[0][1])
        self.max_episode_length = int(max(s[2] for s in shapes))
        self._groups = self._concatenate(self.call("observe"))

    # -- talking to the shares ---------------------------------------------------------------

    def _gather(self) -> list[Any]:
        """Every worker's answer, in share order; a worker's error (or death) closes all and raises."""
        answers: list[Any] = []
        failures: list[str] = []
        for rank, (proc, pipe) in enumerate(zip(self.processes, self.pipes, strict=True)):
            while not pipe.poll(0.5) and proc.is_alive():
                pass
            try:
                status, value = pipe.recv()
            except (EOFError, OSError):  # it died: its end closed (reset where it left data unread)
                proc.join(timeout=5)
                failures.append(f"worker {rank} died (exit code {proc.exitcode})")
                continue
            if status == "error":
                failures.append(f"worker {rank} raised:\n{value}")
            answers.append(value)
        if failures:
            self.close()
            raise RuntimeError(failures[0])
        return answers

    def call(self, name: str, *args: Any) -> list[Any]:
        """``task.name(*args)`` on every share (an attribute's value where it is not a method), in share order."""
        return self.call_each(name, [args] * (len(self.processes) or len(self.local)))

    def call_each(self, name: str, args: Sequence[tuple]) -> list[Any]:
        """``task.name(*args[i])`` on share ``i``, in share order."""
        if self._closed:
            raise RuntimeError("Workers: called after close()")
        if self.local:
            values = [getattr(task, name) for task in self.local]
            return [v(*a) if callable(v) else v for v, a in zip(values, args, strict=True)]
        for pipe, a in zip(self.pipes, args, strict=True):
            pipe.send((name, tuple(a)))
        return self._gather()

    def _concatenate(self, groups: list[Groups]) -> Groups:
        return {key: np.concatenate([g[key] for g in groups]) for key in groups[0]}

    # -- TaskEnv -----------------------------------------------------------------------------

    def observe(self) -> Groups:
        return self._groups

    def step(self, actions: NDArray[np.float64]) -> tuple[Groups, NDArray[np.floating], NDArray[np.bool_], dict]:
        slices = [(actions[a:b],) for a, b in zip(self.bounds[:-1], self.bounds[1:], strict=True)]
        results = self.call_each("step", slices)
        self._groups = self._concatenate([r[0] for r in results])
        reward = np.concatenate([r[1] for r in results])
        done = np.concatenate([r[2] for r in results])
        infos = [r[3] for r in results]
        info: dict[str, Any] = {}
        if all("time_outs" in i for i in infos):
            info["time_outs"] = np.concatenate([i["time_outs"] for i in infos])
        weights = np.asarray(self.shares, dtype=float) / self.num_envs
        keys = set().union(*(i.get("log", {}) for i in infos))
        info["log"] = {k: float(sum(w * i["log"][k] for w, i in zip(weights, infos, strict=True) if k in i["log"]))
                       for k in keys}  # fmt: skip
        return self._groups, reward, done, info

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.processes:
            self._finalizer()  # runs _stop once
        for task in self.local:
            task.close()
