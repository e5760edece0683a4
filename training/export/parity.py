"""Numerical checks of an exported student: the runtime path against torch, and fast variants against fp32.

Both sides see the same recurrent rollout: by default random robot states and commands at the
policy rate, and a new (synthetic) depth frame whenever the camera (``depth.camera_hz``) has
produced one, as on the robot; or a rollout recorded in the simulator
(:mod:`training.export.calibration`), episodes and all. The runtime side is parkour_core's
:class:`PolicyRunner` (``set_depth`` + ``step``), so the check covers the observation layout, the
discrete command, the action clip and the hidden-state handling, not just the ONNX graphs. The
torch side builds its observation with the same ``parkour_core.obs`` functions from the manifest's
terms and keeps its own hidden state and previous action. The fp32 ONNX must match torch within an
absolute tolerance (float reordering only). A fast (int8) variant is judged against the fp32
reference relative to the reference's own action range over the same rollout
(:func:`check_against_reference`): int8 error scales with the model's weights and activations, so
one absolute bar is vacuous for small random models and meaningless for trained ones.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import torch

from parkour_core.bundle import Bundle, Manifest
from parkour_core.command import discretise_command
from parkour_core.depth import DepthSpec, preprocess_depth
from parkour_core.gait import GaitClock
from parkour_core.obs import ObsInput, build_observation
from parkour_core.runner import PolicyRunner, RobotState
from training.export.models import DepthBackbone, RecurrentStudent


class ParityError(Exception):
    """An exported model does not compute what it should; the message gives the measured error.

    ``comparison`` and ``tolerance`` (when the check measured one) let a caller record the numbers.
    """

    def __init__(self, message: str, comparison: Comparison | None = None, tolerance: float | None = None) -> None:
        super().__init__(message)
        self.comparison = comparison
        self.tolerance = tolerance


@dataclass(frozen=True)
class Rollout:
    """Inputs of a recurrent rollout, one entry per control tick."""

    states: list[RobotState]
    commands: list[np.ndarray]
    depth_frames: list[np.ndarray | None]  # a preprocessed policy image on ticks where a frame is new
    tick_s: float
    # Ticks where an episode starts: the runtime resets there (hidden state, previous action, gait
    # clock), as the policy node does on entering ACTIVE. Tick 0 starts fresh either way.
    starts: tuple[int, ...] = ()

    def __len__(self) -> int:
        return len(self.states)

    def head(self, ticks: int) -> Rollout:
        """The first ``ticks`` ticks."""
        starts = tuple(k for k in self.starts if k < ticks)
        return Rollout(self.states[:ticks], self.commands[:ticks], self.depth_frames[:ticks], self.tick_s, starts)


def concat_rollouts(rollouts: list[Rollout]) -> Rollout:
    """One rollout of several, each starting an episode (the runtime resets where the next begins)."""
    if not rollouts or len({r.tick_s for r in rollouts}) != 1:
        raise ValueError("concat_rollouts needs one or more rollouts at the same tick period")
    states: list[RobotState] = []
    commands: list[np.ndarray] = []
    frames: list[np.ndarray | None] = []
    starts: list[int] = []
    for r in rollouts:
        offset = len(states)
        starts += [offset + k for k in sorted({0, *r.starts})]
        states += r.states
        commands += r.commands
        frames += r.depth_frames
    return Rollout(states, commands, frames, rollouts[0].tick_s, tuple(starts))


@dataclass(frozen=True)
class RolloutOutputs:
    actions: np.ndarray  # [ticks, joints], after the runtime's action clip
    hidden: np.ndarray  # [ticks, *hidden_shape]


# The reference's action range, read against an error: p99.9 - p0.1 over every joint and tick, so one
# outlying tick does not set it (max - min would), while the extremes a policy really commands do.
RANGE_PERCENTILES = (0.1, 99.9)


def action_range(actions: np.ndarray) -> float:
    """The spread of a rollout's actions over all joints and ticks (:data:`RANGE_PERCENTILES`)."""
    lo, hi = np.percentile(np.asarray(actions, dtype=np.float64), RANGE_PERCENTILES)
    return float(hi - lo)


@dataclass(frozen=True)
class Comparison:
    steps: int
    max_action_error: float
    max_hidden_error: float
    max_abs_action: float  # of the reference, to read the error against
    action_range: float = 0.0  # of the reference: p99.9 - p0.1 over all joints and ticks
    rms_action_error: float = 0.0
    p99_action_error: float = 0.0  # over every joint and tick

    @property
    def relative_action_error(self) -> float:
        """The worst action error as a fraction of the reference's action range (inf for a constant reference)."""
        if self.action_range > 0.0:
            return self.max_action_error / self.action_range
        return 0.0 if self.max_action_error == 0.0 else math.inf

    def to_dict(self) -> dict[str, float | int]:
        return {**dataclasses.asdict(self), "relative_action_error": self.relative_action_error}


def new_frame_ticks(ticks: int, policy_hz: float, camera_hz: float) -> list[bool]:
    """Which ticks see a new camera frame: frame j is captured at j / camera_hz, tick k runs at k / policy_hz."""
    frame_index = [math.floor(k * camera_hz / policy_hz + 1e-9) for k in range(ticks)]
    return [k == 0 or frame_index[k] != frame_index[k - 1] for k in range(ticks)]


def synthetic_depth_frame(rng: np.random.Generator, spec: DepthSpec) -> np.ndarray:
    """A policy image of a plausible scene, made the way the robot makes one: a metric z16 frame
    (floor, a box, noise, holes) at a D435 resolution through parkour_core's preprocess_depth."""
    rows, cols = 270, 480
    floor_m = np.linspace(4.0, 0.4, rows, dtype=np.float32)[:, None]  # far at the top, floor close below
    metres = np.broadcast_to(floor_m, (rows, cols)).copy()
    top, left = rng.integers(0, rows // 2), rng.integers(0, cols // 2)
    metres[top : top + rng.integers(20, rows // 2), left : left + rng.integers(20, cols // 2)] = rng.uniform(0.3, 1.8)
    metres += rng.normal(0.0, 0.03, metres.shape).astype(np.float32)
    z16 = np.clip(metres * 1000.0, 0, 65535).astype(np.uint16)
    z16[rng.random(z16.shape) < 0.02] = 0  # holes: no stereo match
    return preprocess_depth(z16, spec, depth_scale_m=0.001)


def random_rollout(manifest: Manifest, ticks: int, seed: int) -> Rollout:
    """Random but plausible inputs: joints near the default pose, a tilted base, commands in range."""
    rng = np.random.default_rng(seed)
    n = len(manifest.joint_names)
    default_q = np.asarray(manifest.default_joint_pos)
    frames = new_frame_ticks(ticks, manifest.policy_hz, manifest.depth.camera_hz) if manifest.depth else [False] * ticks
    states, commands, depth_frames = [], [], []
    for k in range(ticks):
        axis = rng.normal(size=3)
        half_angle = 0.5 * rng.uniform(0.0, 0.4)
        quat = np.concatenate([[math.cos(half_angle)], math.sin(half_angle) * axis / np.linalg.norm(axis)])
        states.append(
            RobotState(
                q=default_q + rng.normal(0.0, 0.2, n),
                dq=rng.normal(0.0, 1.5, n),
                quat_wxyz=quat,
                gyro=rng.normal(0.0, 0.5, 3),
            )
        )
        commands.append(np.array([rng.uniform(-0.5, 1.5), rng.uniform(-0.5, 0.5), rng.uniform(-1.0, 1.0)]))
        if frames[k] and manifest.depth is not None:
            depth_frames.append(synthetic_depth_frame(rng, manifest.depth.spec))
        else:
            depth_frames.append(None)
    return Rollout(states, commands, depth_frames, tick_s=1.0 / manifest.policy_hz)


@torch.no_grad()
def torch_rollout(
    backbone: DepthBackbone, student: RecurrentStudent, manifest: Manifest, rollout: Rollout
) -> RolloutOutputs:
    """The torch modules through the rollout, with observations built from the manifest's terms."""
    if manifest.depth is None or manifest.hidden_shape is None:
        raise ValueError(f"bundle {manifest.name!r} is not a recurrent depth student")
    backbone.eval()
    student.eval()
    n = len(manifest.joint_names)
    default_q = np.asarray(manifest.default_joint_pos)
    latent = torch.zeros(1, manifest.depth.latent_dim)
    hidden = torch.zeros(manifest.hidden_shape)
    last_action = np.zeros(n)
    clock = GaitClock(manifest.gait_period_s, 1.0 / manifest.policy_hz) if manifest.gait_period_s else None
    actions, hiddens = [], []
    starts = set(rollout.starts)
    for k, (state, command, frame) in enumerate(
        zip(rollout.states, rollout.commands, rollout.depth_frames, strict=True)
    ):
        if k in starts:
            hidden = torch.zeros(manifest.hidden_shape)
            last_action = np.zeros(n)
            if clock is not None:
                clock.reset()
        if frame is not None:
            latent = backbone(torch.from_numpy(frame[None]))
        phase = clock.advance(command) if clock is not None else np.zeros(0)
        discrete = discretise_command(command, manifest.command) if manifest.command else np.zeros(0)
        obs = build_observation(
            manifest.obs_terms,
            ObsInput(
                q=state.q,
                dq=state.dq,
                quat_wxyz=state.quat_wxyz,
                gyro=state.gyro,
                command=command,
                last_action=last_action,
                default_q=default_q,
                gait_phase=phase,
                command_discrete=discrete,
            ),
        )
        action, hidden = student(torch.from_numpy(obs[None]), latent, hidden)
        last_action = np.clip(action[0].numpy().astype(np.float64), -manifest.action_clip, manifest.action_clip)
        actions.append(last_action)
        hiddens.append(hidden.numpy().copy())
    return RolloutOutputs(np.array(actions), np.array(hiddens))


def runner_rollout(bundle: Bundle, rollout: Rollout) -> RolloutOutputs:
    """The runtime path: PolicyRunner.set_depth on new frames, PolicyRunner.step every tick."""
    runner = PolicyRunner(bundle)
    actions, hiddens = [], []
    starts = set(rollout.starts)
    for k, (state, command, frame) in enumerate(
        zip(rollout.states, rollout.commands, rollout.depth_frames, strict=True)
    ):
        if k in starts:
            runner.reset()
        if frame is not None:
            runner.set_depth(frame, stamp_s=k * rollout.tick_s)
        runner.step(state, command)
        actions.append(runner.last_action.copy())
        hiddens.append(np.array(runner.hidden, copy=True))
    return RolloutOutputs(np.array(actions), np.array(hiddens))


def compare(reference: RolloutOutputs, candidate: RolloutOutputs) -> Comparison:
    error = np.abs(candidate.actions - reference.actions)
    return Comparison(
        steps=len(reference.actions),
        max_action_error=float(np.max(error)),
        max_hidden_error=float(np.max(np.abs(candidate.hidden - reference.hidden))),
        max_abs_action=float(np.max(np.abs(reference.actions))),
        action_range=action_range(reference.actions),
        rms_action_error=float(np.sqrt(np.mean(error**2))),
        p99_action_error=float(np.percentile(error, 99)),
    )


def with_models(bundle: Bundle, policy_file: str, backbone_file: str) -> Bundle:
    """The same bundle with its models pointed at other files (e.g. the fp32 reference)."""
    m = bundle.manifest
    if m.depth_backbone is None:
        raise ValueError(f"bundle {m.name!r} has no depth backbone")
    manifest = dataclasses.replace(
        m,
        policy=dataclasses.replace(m.policy, file=policy_file),
        depth_backbone=dataclasses.replace(m.depth_backbone, file=backbone_file),
    )
    return dataclasses.replace(bundle, manifest=manifest)


def check_against_torch(
    bundle: Bundle,
    backbone: DepthBackbone,
    student: RecurrentStudent,
    steps: int = 50,
    tolerance: float = 1e-5,
    seed: int = 0,
) -> Comparison:
    """The bundle's models through PolicyRunner against torch; raises ParityError beyond ``tolerance``."""
    rollout = random_rollout(bundle.manifest, steps, seed)
    result = compare(torch_rollout(backbone, student, bundle.manifest, rollout), runner_rollout(bundle, rollout))
    worst = max(result.max_action_error, result.max_hidden_error)
    if not worst <= tolerance:  # also catches NaN
        raise ParityError(
            f"ONNX ({bundle.manifest.policy.file}, {_backbone_file(bundle)}) differs from torch over {steps} "
            f"recurrent steps: max action error {result.max_action_error:.3g}, max hidden-state error "
            f"{result.max_hidden_error:.3g}, tolerance {tolerance:g}; the export is wrong, do not use this bundle",
            result,
            tolerance,
        )
    return result


def check_against_reference(
    candidate: Bundle,
    reference: Bundle,
    steps: int,
    relative_tolerance: float,
    seed: int = 1,
    rollout: Rollout | None = None,
) -> Comparison:
    """A fast variant against the fp32 reference, both through PolicyRunner over one rollout.

    Passes when the worst action error is at most ``relative_tolerance`` times the reference's own
    action range over that rollout (:func:`action_range`), so the bar scales with what the model
    commands: a random student whose actions stay within +-0.1 and a trained walker commanding 5
    are held to the same fraction. ``rollout`` (e.g. recorded in the simulator,
    :mod:`training.export.calibration`) replaces the default random one of ``steps`` ticks.
    Raises :class:`ParityError` (with the comparison and the absolute tolerance) beyond it.
    """
    rollout = rollout if rollout is not None else random_rollout(reference.manifest, steps, seed)
    result = compare(runner_rollout(reference, rollout), runner_rollout(candidate, rollout))
    tolerance = relative_tolerance * result.action_range
    if not result.max_action_error <= tolerance:  # also catches NaN
        raise ParityError(
            f"{candidate.manifest.policy.file} + {_backbone_file(candidate)} differ from the fp32 reference over "
            f"{result.steps} recurrent steps: max action error {result.max_action_error:.3g} = "
            f"{100 * result.relative_action_error:.2f} % of the reference's action range {result.action_range:.3g} "
            f"(largest reference action {result.max_abs_action:.3g}), tolerance {100 * relative_tolerance:g} % "
            f"= {tolerance:.3g}; export with --precision fp32 instead",
            result,
            tolerance,
        )
    return result


def _backbone_file(bundle: Bundle) -> str:
    io = bundle.manifest.depth_backbone
    return "no backbone" if io is None else io.file
