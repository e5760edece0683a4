"""The installed walking policy (``models/g1_walk``, holosoma-inference's ppo_g1_29dof.onnx) as a batched teacher.

Each environment gets the observation ``PolicyRunner`` would build on the robot: the bundle's own terms
through ``parkour_core`` (``observation_input`` + ``build_observation``) with a per-environment
``GaitClock`` (reset with the episode, advanced once per tick with the command in force). The ONNX
model declares a batch of 1; its graph (Gemm and Elu layers) has nothing that depends on the batch,
so the teacher re-declares the batch axis in memory and runs every environment in one call (the
same kernels as ``PolicyRunner``; equal to the row-by-row outputs, checked in the tests; 32 rows in
one call cost a quarter of 32 calls).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from parkour_core.bundle import Bundle, as_array, load_bundle
from parkour_core.gait import GaitClock
from parkour_core.inference import make_session
from parkour_core.obs import build_observation
from parkour_core.paths import repo_root
from parkour_core.runner import RobotState, observation_input

F = NDArray[np.float64]
REPO = repo_root()
WALK_BUNDLE = REPO / "models" / "g1_walk"
TEACHER_PROVENANCE = {
    "policy": "holosoma-inference ppo_g1_29dof.onnx (models/g1_walk), run through onnxruntime",
    "source_repository": "amazon-far/holosoma (Apache-2.0)",
}


def batched_model(path: Path) -> bytes:
    """The ONNX model at ``path`` with its inputs' and outputs' first axis declared symbolic (``batch``)."""
    import onnx

    model = onnx.load(str(path))
    for value in (*model.graph.input, *model.graph.output):
        value.type.tensor_type.shape.dim[0].dim_param = "batch"
    return model.SerializeToString()


class WalkTeacher:
    """``act(q, dq, quat, gyro, command, last_action) -> actions (N, 29)`` for N environments."""

    def __init__(self, num_envs: int, bundle: Bundle | Path | str = WALK_BUNDLE, intra_op_threads: int = 1) -> None:
        self.bundle = bundle if isinstance(bundle, Bundle) else load_bundle(bundle)
        m = self.manifest = self.bundle.manifest
        self.num_envs = num_envs
        self.session = make_session(batched_model(self.bundle.file(m.policy.file)), intra_op_threads, None)
        self.obs_name = str(m.policy.inputs["obs"])
        self.action_name = str(m.policy.outputs["action"])
        self.default_q = as_array(m.default_joint_pos)
        self.kp, self.kd = as_array(m.kp), as_array(m.kd)
        dt = 1.0 / m.policy_hz
        self.clocks = [GaitClock(m.gait_period_s, dt) if m.gait_period_s else None for _ in range(num_envs)]
        self.obs = np.zeros((num_envs, m.obs_size), dtype=np.float32)

    def reset(self, env_ids: NDArray[np.int64] | None = None) -> None:
        """Episode starts: the gait clocks restart (as ``PolicyRunner.reset``)."""
        for i in range(self.num_envs) if env_ids is None else env_ids:
            clock = self.clocks[int(i)]
            if clock is not None:
                clock.reset()

    def observe(
        self, q: F, dq: F, quat: F, gyro: F, command: F, last_action: F, phase: F | None = None
    ) -> NDArray[np.float32]:
        """Build each environment's teacher observation.

        ``phase`` (N, 2): the gait phase to observe, from the environment's clocks (``StudentEnv.gait_phase``,
        the one the student sees); None: this teacher's own clocks advance one tick.
        """
        m = self.manifest
        if phase is None:
            phase = np.stack([self._tick(i, command[i]) for i in range(self.num_envs)])
        o = observation_input(m, RobotState(q, dq, quat, gyro), command, last_action, self.default_q, phase)
        self.obs = build_observation(m.obs_terms, o)
        return self.obs

    def _tick(self, i: int, command: F) -> F:
        clock = self.clocks[i]
        return clock.advance(command) if clock is not None else np.zeros(0)

    def act(self, q: F, dq: F, quat: F, gyro: F, command: F, last_action: F, phase: F | None = None) -> F:
        return self.action(self.observe(q, dq, quat, gyro, command, last_action, phase))

    def action(self, obs: NDArray[np.float32]) -> F:
        """The policy's actions (N, 29) on observations ``observe`` built, clipped to the bundle's action clip."""
        out = self.session.run([self.action_name], {self.obs_name: obs})[0].astype(np.float64)
        return np.clip(out, -self.manifest.action_clip, self.manifest.action_clip)
