"""Runs a verified bundle on onnxruntime: observation in, joint position targets out."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parkour_core.bundle import Bundle, BundleError, as_array
from parkour_core.gait import GaitClock
from parkour_core.obs import FloatArray, ObsInput, build_observation


@dataclass
class RobotState:
    """Proprioception in policy joint order."""

    q: FloatArray
    dq: FloatArray
    quat_wxyz: FloatArray
    gyro: FloatArray


def _dims_match(onnx_shape: list, expected: list[int]) -> bool:
    if len(onnx_shape) != len(expected):
        return False
    return all(not isinstance(a, int) or a == b for a, b in zip(onnx_shape, expected, strict=True))


class PolicyRunner:
    """Owns the policy's state between ticks (previous action, gait clock); ``reset`` on (re)activation."""

    def __init__(self, bundle: Bundle, intra_op_threads: int = 1, providers: list[str] | None = None) -> None:
        import onnxruntime as ort

        m = bundle.manifest
        self.bundle = bundle
        self.manifest = m
        options = ort.SessionOptions()
        options.intra_op_num_threads = intra_op_threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        try:
            self.session = ort.InferenceSession(
                str(bundle.file(m.policy.file)), options, providers=providers or ["CPUExecutionProvider"]
            )
        except Exception as e:  # onnxruntime raises its own exception types
            raise BundleError(f"bundle {m.name!r}: onnxruntime cannot load {m.policy.file}: {e}") from None
        self.obs_name = m.policy.inputs.get("obs", "")
        self.action_name = m.policy.outputs.get("action", "")
        n = len(m.joint_names)
        self._check_io(self.session.get_inputs(), self.obs_name, [1, m.obs_size], "input")
        self._check_io(self.session.get_outputs(), self.action_name, [1, n], "output")
        self.default_q = as_array(m.default_joint_pos)
        self.action_scale = m.action_scale
        self.action_clip = m.action_clip
        dt = 1.0 / m.policy_hz
        self.gait = GaitClock(m.gait_period_s, dt) if m.gait_period_s else None
        self.last_action = np.zeros(n)
        self._obs = np.empty((1, m.obs_size), dtype=np.float32)
        self.warm_up()

    def _check_io(self, nodes: list, name: str, shape: list[int], kind: str) -> None:
        by_name = {node.name: node for node in nodes}
        if name not in by_name:
            raise BundleError(
                f"bundle {self.manifest.name!r}: the ONNX model has no {kind} named {name!r} "
                f"(it has {sorted(by_name)}); fix models.policy.{kind}s in the manifest"
            )
        if not _dims_match(list(by_name[name].shape), shape):
            raise BundleError(
                f"bundle {self.manifest.name!r}: ONNX {kind} {name!r} has shape {by_name[name].shape}, "
                f"the manifest implies {shape}"
            )

    def warm_up(self, ticks: int = 3) -> None:
        zero = np.zeros(len(self.default_q))
        state = RobotState(self.default_q.copy(), zero, np.array([1.0, 0, 0, 0]), np.zeros(3))
        for _ in range(ticks):
            targets = self.step(state, np.zeros(3))
            if not np.all(np.isfinite(targets)):
                raise BundleError(f"bundle {self.manifest.name!r}: the policy outputs NaN/inf on a standing robot")
        self.reset()

    def reset(self) -> None:
        self.last_action[:] = 0.0
        if self.gait is not None:
            self.gait.reset()

    def observe(self, state: RobotState, command: FloatArray) -> np.ndarray:
        phase = self.gait.advance(command) if self.gait is not None else np.zeros(0)
        o = ObsInput(
            q=state.q,
            dq=state.dq,
            quat_wxyz=state.quat_wxyz,
            gyro=state.gyro,
            command=command,
            last_action=self.last_action,
            default_q=self.default_q,
            gait_phase=phase,
        )
        return build_observation(self.manifest.obs_terms, o, out=self._obs[0])

    def step(self, state: RobotState, command: FloatArray) -> FloatArray:
        """One control tick: returns joint position targets (rad) in policy order."""
        self.observe(state, command)
        action = self.session.run([self.action_name], {self.obs_name: self._obs})[0][0].astype(np.float64)
        action = np.clip(action, -self.action_clip, self.action_clip)
        self.last_action = action
        return self.default_q + self.action_scale * action
