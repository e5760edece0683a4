"""Runs a verified bundle on onnxruntime: observation in, joint position targets out.

For a depth student the runner owns everything recurrent: the GRU hidden state (zeroed by
``reset`` on every (re)activation) and the cached depth latent with the stamp of the frame it
came from, so callers can see its age. The backbone runs only when a new frame arrives
(``set_depth``); the student runs every tick (``step``).

A step allocates almost nothing: the observation is written by a compiled
:class:`~parkour_core.obs.ObservationWriter` and the models read and write the runner's own arrays
through onnxruntime's IOBinding; both give bit for bit what ``build_observation`` and
``session.run`` give (``test_runner_exact.py`` replays a reference beside it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from parkour_core.bundle import Bundle, BundleError, Manifest, ModelIO, as_array
from parkour_core.command import discretise_command
from parkour_core.gait import GaitClock
from parkour_core.inference import CPU, BoundRun, make_session
from parkour_core.obs import FloatArray, ObservationWriter, ObsInput, build_observation


@dataclass
class RobotState:
    """Proprioception in policy joint order."""

    q: FloatArray
    dq: FloatArray
    quat_wxyz: FloatArray
    gyro: FloatArray


def observation_input(
    manifest: Manifest,
    state: RobotState,
    command: FloatArray,
    last_action: FloatArray,
    default_q: FloatArray,
    gait_phase: FloatArray,
) -> ObsInput:
    """Everything the manifest's terms read at one tick (the discrete command mapped if it has one).

    For N robots at once (training) every array is [N, ...] and ``default_q`` is shared.
    """
    if not manifest.command:
        discrete = np.zeros((*np.shape(command)[:-1], 0))
    elif np.ndim(command) == 2:
        discrete = np.stack([discretise_command(c, manifest.command) for c in command])
    else:
        discrete = discretise_command(command, manifest.command)
    return ObsInput(
        q=state.q,
        dq=state.dq,
        quat_wxyz=state.quat_wxyz,
        gyro=state.gyro,
        command=command,
        last_action=last_action,
        default_q=default_q,
        gait_phase=gait_phase,
        command_discrete=discrete,
    )


def _aligned_zeros(shape: tuple[int, ...] | list[int]) -> np.ndarray:
    """float32 zeros starting on a 64-byte boundary, where onnxruntime's own allocator puts tensors."""
    size = int(np.prod(shape))
    raw = np.zeros(size + 16, dtype=np.float32)
    skip = (-raw.ctypes.data % 64) // 4
    return raw[skip : skip + size].reshape(shape)


def _dims_match(onnx_shape: list, expected: list[int]) -> bool:
    if len(onnx_shape) != len(expected):
        return False
    return all(not isinstance(a, int) or a == b for a, b in zip(onnx_shape, expected, strict=True))


class PolicyRunner:
    """Owns the policy's state between ticks (previous action, gait clock); ``reset`` on (re)activation.

    ``hidden`` and ``latent`` are the runner's own arrays, which the sessions are bound to: each step
    updates them in place (copy them to keep a tick's value). ``last_action`` is a new array every step
    and may be replaced (a swap adopts the executed action); the targets ``step`` returns are new too.
    """

    def __init__(self, bundle: Bundle, intra_op_threads: int = 1, providers: list[str] | None = None) -> None:
        m = bundle.manifest
        self.bundle = bundle
        self.manifest = m
        n = len(m.joint_names)
        self.session = self._load(m.policy, intra_op_threads, providers)
        self.obs_name = self._io_name(m.policy, "inputs", "obs")
        self.action_name = self._io_name(m.policy, "outputs", "action")
        self._check_io(self.session.get_inputs(), self.obs_name, [1, m.obs_size], "input")
        self._check_io(self.session.get_outputs(), self.action_name, [1, n], "output")
        self._obs = _aligned_zeros((1, m.obs_size))
        self._feeds: dict[str, np.ndarray] = {self.obs_name: self._obs}
        self._action_out = _aligned_zeros((1, n))
        self._fetches: dict[str, np.ndarray] = {self.action_name: self._action_out}

        self.backbone = None
        self.latent = np.zeros((1, 0), dtype=np.float32)
        self.latent_stamp_s: float | None = None  # exposure stamp of the frame behind the latent
        if m.depth_backbone is not None and m.depth is not None:
            d = m.depth
            self.backbone = self._load(m.depth_backbone, intra_op_threads, providers)
            self.depth_name = self._io_name(m.depth_backbone, "inputs", "depth")
            self.latent_out_name = self._io_name(m.depth_backbone, "outputs", "latent")
            self._check_io(self.backbone.get_inputs(), self.depth_name, [1, d.spec.height, d.spec.width], "input")
            self._check_io(self.backbone.get_outputs(), self.latent_out_name, [1, d.latent_dim], "output")
            latent_in = self._io_name(m.policy, "inputs", "latent")
            self._check_io(self.session.get_inputs(), latent_in, [1, d.latent_dim], "input")
            self.latent = _aligned_zeros((1, d.latent_dim))  # the backbone's output and the student's input
            self._feeds[latent_in] = self.latent
            self._depth_in = _aligned_zeros((1, d.spec.height, d.spec.width))
            self._run_backbone = self._runner_of(
                self.backbone, {self.depth_name: self._depth_in}, {self.latent_out_name: self.latent}
            )

        self.hidden = np.zeros(0, dtype=np.float32)
        self.hidden_in_name = ""
        if m.hidden_shape is not None:
            shape = list(m.hidden_shape)
            self.hidden_in_name = self._io_name(m.policy, "inputs", "hidden")
            hidden_out = self._io_name(m.policy, "outputs", "hidden")
            self._check_io(self.session.get_inputs(), self.hidden_in_name, shape, "input")
            self._check_io(self.session.get_outputs(), hidden_out, shape, "output")
            self.hidden = _aligned_zeros(shape)  # fed every step; the new state is copied back into it
            self._hidden_out = _aligned_zeros(shape)
            self._feeds[self.hidden_in_name] = self.hidden
            self._fetches[hidden_out] = self._hidden_out
        self._run_policy = self._runner_of(self.session, self._feeds, self._fetches)

        self.default_q = as_array(m.default_joint_pos)
        self.action_scale = m.action_scale
        self.action_clip = m.action_clip
        # Per joint, for array-array ufuncs (the cheapest numpy calls); the same values, so the same results.
        self._low, self._high = np.full(n, -m.action_clip), np.full(n, m.action_clip)
        self._scale = np.full(n, m.action_scale)
        dt = 1.0 / m.policy_hz
        self.gait = GaitClock(m.gait_period_s, dt) if m.gait_period_s else None
        self._no_phase = np.zeros(0)
        self.built_observations = 0  # steps whose inputs the writer did not take (see paths)
        self.last_action = np.zeros(n)
        phases = len(self.gait.phase) if self.gait is not None else 0
        self._writer = ObservationWriter.compile(m.obs_terms, self.default_q, m.command, phases, self._obs[0])
        self.warm_up()

    def _load(self, io: ModelIO, intra_op_threads: int, providers: list[str] | None):
        try:
            return make_session(self.bundle.file(io.file), intra_op_threads, providers)
        except Exception as e:  # onnxruntime raises its own exception types
            raise BundleError(f"bundle {self.manifest.name!r}: onnxruntime cannot load {io.file}: {e}") from None

    @staticmethod
    def _runner_of(session: Any, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray]) -> Callable[[], None]:
        """A call that runs ``session`` on ``inputs`` and leaves its results in ``outputs``.

        Bound (:class:`~parkour_core.inference.BoundRun`) on a CPU session where the bound call gives
        what ``session.run`` gives on the arrays as they are now (zeros at load; checked bit for bit,
        NaN as NaN); else ``session.run`` and a copy.
        """
        names = list(outputs)

        def run() -> None:
            for array, value in zip(outputs.values(), session.run(names, inputs), strict=True):
                np.copyto(array, value)

        if session.get_providers() != [CPU]:
            return run
        try:
            bound = BoundRun(session, inputs, outputs)
            run()
            expected = [a.copy() for a in outputs.values()]
            for a in outputs.values():
                a.fill(np.nan)
            bound()
        except Exception:  # onnxruntime's own types; the plain call then reports it where it always has
            return run
        same = all(np.array_equal(a, e, equal_nan=True) for a, e in zip(outputs.values(), expected, strict=True))
        return bound if same else run

    def _io_name(self, io: ModelIO, kind: str, role: str) -> str:
        names = getattr(io, kind)
        if role not in names:
            raise BundleError(f"bundle {self.manifest.name!r}: {io.file} has no {role!r} in its manifest {kind}")
        return str(names[role])

    def _check_io(self, nodes: list, name: str, shape: list[int], kind: str) -> None:
        by_name = {node.name: node for node in nodes}
        if name not in by_name:
            raise BundleError(
                f"bundle {self.manifest.name!r}: the ONNX model has no {kind} named {name!r} "
                f"(it has {sorted(by_name)}); fix the model's {kind}s under 'models' in the manifest"
            )
        if not _dims_match(list(by_name[name].shape), shape):
            raise BundleError(
                f"bundle {self.manifest.name!r}: ONNX {kind} {name!r} has shape {by_name[name].shape}, "
                f"the manifest implies {shape}"
            )

    def warm_up(self, ticks: int = 3) -> None:
        """Run a standing robot (and an empty depth view) through every model; refuse NaN/inf."""
        zero = np.zeros(len(self.default_q))
        state = RobotState(self.default_q.copy(), zero, np.array([1.0, 0, 0, 0]), np.zeros(3))
        if self.backbone is not None:
            self.set_depth(np.full(self._depth_in.shape[1:], 0.5, dtype=np.float32), stamp_s=0.0)
            if not np.all(np.isfinite(self.latent)):
                raise BundleError(f"bundle {self.manifest.name!r}: the depth backbone outputs NaN/inf")
        for _ in range(ticks):
            targets = self.step(state, np.zeros(3))
            if not (np.all(np.isfinite(targets)) and np.all(np.isfinite(self.hidden))):
                raise BundleError(f"bundle {self.manifest.name!r}: the policy outputs NaN/inf on a standing robot")
        self.reset()
        self.latent[:] = 0.0
        self.latent_stamp_s = None

    def reset(self) -> None:
        """Forget the episode: previous action, gait clock and recurrent state (not the depth view)."""
        self.last_action[:] = 0.0
        self.hidden[...] = 0.0
        if self.gait is not None:
            self.gait.reset()

    def set_depth(self, image: np.ndarray, stamp_s: float) -> None:
        """Run the backbone on a preprocessed policy image; the latent is used from the next step on."""
        if self.backbone is None:
            raise ValueError(f"bundle {self.manifest.name!r} has no depth backbone")
        self._depth_in[0] = image
        self._run_backbone()
        self.latent_stamp_s = stamp_s

    def observe(self, state: RobotState, command: FloatArray) -> np.ndarray:
        """This tick's observation (advancing the gait clock), in the runner's input buffer."""
        phase = self.gait.advance(command) if self.gait is not None else self._no_phase
        q, dq, quat, gyro, last = state.q, state.dq, state.quat_wxyz, state.gyro, self.last_action
        w = self._writer
        if w is not None and w.accepts(q, dq, quat, gyro, command, last, phase):
            return w.write(q, dq, quat, gyro, command, last, phase)
        self.built_observations += 1
        o = observation_input(self.manifest, state, command, last, self.default_q, phase)
        return build_observation(self.manifest.obs_terms, o, out=self._obs[0])

    def paths(self) -> dict[str, str]:
        """Which path each part of a step takes (for benchmarks and diagnostics): the compiled observation
        writer or ``build_observation`` (``built_observations`` counts the steps that built it), and per
        model IOBinding or ``session.run``."""
        out = {
            "observation": "ObservationWriter" if self._writer is not None else "build_observation",
            "policy": "IOBinding" if isinstance(self._run_policy, BoundRun) else "session.run",
        }
        if self.backbone is not None:
            out["backbone"] = "IOBinding" if isinstance(self._run_backbone, BoundRun) else "session.run"
        return out

    def step(self, state: RobotState, command: FloatArray) -> FloatArray:
        """One control tick: returns joint position targets (rad) in policy order."""
        self.observe(state, command)
        self._run_policy()
        if self.hidden_in_name:
            np.copyto(self.hidden, self._hidden_out)
        action = self._action_out[0].astype(np.float64)
        np.maximum(action, self._low, out=action)  # np.clip's own loop is max then min; NaN stays NaN
        np.minimum(action, self._high, out=action)
        self.last_action = action
        targets = np.multiply(action, self._scale)
        np.add(targets, self.default_q, out=targets)  # default_q + scale * action: addition commutes
        return targets
