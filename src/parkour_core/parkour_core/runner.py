"""Runs a verified bundle on onnxruntime: observation in, joint position targets out.

For a depth student the runner owns everything recurrent: the GRU hidden state (zeroed by
``reset`` on every (re)activation) and the cached depth latent with the stamp of the frame it
came from, so callers can see its age. The backbone runs only when a new frame arrives
(``set_depth``); the student runs every tick (``step``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parkour_core.bundle import Bundle, BundleError, Manifest, ModelIO, as_array
from parkour_core.command import discretise_command
from parkour_core.gait import GaitClock
from parkour_core.inference import make_session
from parkour_core.obs import FloatArray, ObsInput, build_observation


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


def _dims_match(onnx_shape: list, expected: list[int]) -> bool:
    if len(onnx_shape) != len(expected):
        return False
    return all(not isinstance(a, int) or a == b for a, b in zip(onnx_shape, expected, strict=True))


class PolicyRunner:
    """Owns the policy's state between ticks (previous action, gait clock); ``reset`` on (re)activation."""

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
        self._feeds: dict[str, np.ndarray] = {}
        self._output_names = [self.action_name]

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
            self.latent = np.zeros((1, d.latent_dim), dtype=np.float32)
            self._feeds[latent_in] = self.latent
            self._depth_in = np.zeros((1, d.spec.height, d.spec.width), dtype=np.float32)

        self.hidden = np.zeros(0, dtype=np.float32)
        self.hidden_in_name = ""
        if m.hidden_shape is not None:
            shape = list(m.hidden_shape)
            self.hidden_in_name = self._io_name(m.policy, "inputs", "hidden")
            hidden_out = self._io_name(m.policy, "outputs", "hidden")
            self._check_io(self.session.get_inputs(), self.hidden_in_name, shape, "input")
            self._check_io(self.session.get_outputs(), hidden_out, shape, "output")
            self.hidden = np.zeros(shape, dtype=np.float32)
            self._output_names.append(hidden_out)

        self.default_q = as_array(m.default_joint_pos)
        self.action_scale = m.action_scale
        self.action_clip = m.action_clip
        dt = 1.0 / m.policy_hz
        self.gait = GaitClock(m.gait_period_s, dt) if m.gait_period_s else None
        self.last_action = np.zeros(n)
        self._obs = np.empty((1, m.obs_size), dtype=np.float32)
        self._feeds[self.obs_name] = self._obs
        self.warm_up()

    def _load(self, io: ModelIO, intra_op_threads: int, providers: list[str] | None):
        try:
            return make_session(self.bundle.file(io.file), intra_op_threads, providers)
        except Exception as e:  # onnxruntime raises its own exception types
            raise BundleError(f"bundle {self.manifest.name!r}: onnxruntime cannot load {io.file}: {e}") from None

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
        self.latent[:] = self.backbone.run([self.latent_out_name], {self.depth_name: self._depth_in})[0]
        self.latent_stamp_s = stamp_s

    def observe(self, state: RobotState, command: FloatArray) -> np.ndarray:
        phase = self.gait.advance(command) if self.gait is not None else np.zeros(0)
        o = observation_input(self.manifest, state, command, self.last_action, self.default_q, phase)
        return build_observation(self.manifest.obs_terms, o, out=self._obs[0])

    def step(self, state: RobotState, command: FloatArray) -> FloatArray:
        """One control tick: returns joint position targets (rad) in policy order."""
        self.observe(state, command)
        if self.hidden_in_name:
            self._feeds[self.hidden_in_name] = self.hidden
        outputs = self.session.run(self._output_names, self._feeds)
        action = outputs[0][0].astype(np.float64)
        if self.hidden_in_name:
            self.hidden = outputs[1]
        action = np.clip(action, -self.action_clip, self.action_clip)
        self.last_action = action
        return self.default_q + self.action_scale * action
