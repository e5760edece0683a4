"""parkour_core's observation terms, discrete command and gait clock restated in torch, and an ONNX MLP in torch.

Imports torch, onnx and parkour_core only (no mjlab), so the runtime ``.venv`` can test it against the
numpy originals. An mjlab task runs thousands of environments on one device: building each step's
observation through ``parkour_core.obs.build_observation`` would copy the state to the host and back,
so the formulas are restated here, one function per ``parkour_core.obs.TERMS`` name, and
``test_policy_terms.py`` holds them equal to the originals on random states. What stays data:
the order, dims, scale and clip of each term come from a bundle manifest, as on the robot.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from parkour_core.command import DiscreteCommandSpec
from parkour_core.gait import STANDING_PHASE, START_PHASE
from parkour_core.obs import ObsTerm

GRAVITY_WORLD = (0.0, 0.0, -1.0)
STILL_THRESHOLD = 0.01  # parkour_core.gait.GaitClock's default


@dataclass
class ObsInput:
    """parkour_core.obs.ObsInput as [N, ...] tensors on one device (joints in the robot spec's order)."""

    q: torch.Tensor
    dq: torch.Tensor
    quat_wxyz: torch.Tensor
    gyro: torch.Tensor
    command: torch.Tensor
    last_action: torch.Tensor
    default_q: torch.Tensor  # [num_joints], shared
    gait_phase: torch.Tensor  # [N, 2], or [N, 0] without a clock
    command_discrete: torch.Tensor  # [N, 2], or [N, 0] without a discrete command


def rotate_inverse(quat_wxyz: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``parkour_core.math3d.rotate_inverse``: world vector ``v`` in the body frame."""
    w = quat_wxyz[..., :1]
    qv = quat_wxyz[..., 1:4]
    v = v.expand_as(qv)
    return v * (2.0 * w * w - 1.0) - torch.linalg.cross(qv, v) * (2.0 * w) + qv * (2.0 * (qv * v).sum(-1, keepdim=True))


def projected_gravity(quat_wxyz: torch.Tensor) -> torch.Tensor:
    g = torch.tensor(GRAVITY_WORLD, dtype=quat_wxyz.dtype, device=quat_wxyz.device)
    return rotate_inverse(quat_wxyz, g)


TERMS: dict[str, Callable[[ObsInput], torch.Tensor]] = {
    "actions": lambda o: o.last_action,
    "base_ang_vel": lambda o: o.gyro,
    "command_ang_vel": lambda o: o.command[..., 2:3],
    "command_discrete": lambda o: o.command_discrete,
    "command_lin_vel": lambda o: o.command[..., :2],
    "cos_phase": lambda o: torch.cos(o.gait_phase),
    "dof_pos": lambda o: o.q - o.default_q,
    "dof_vel": lambda o: o.dq,
    "projected_gravity": lambda o: projected_gravity(o.quat_wxyz),
    "sin_phase": lambda o: torch.sin(o.gait_phase),
}


def term_value(term: ObsTerm, o: ObsInput) -> torch.Tensor:
    """One term, scaled and clipped as ``parkour_core.obs.build_observation`` does."""
    if term.name not in TERMS:
        raise ValueError(f"observation term {term.name!r} has no torch restatement; known: {sorted(TERMS)}")
    value = TERMS[term.name](o)
    if value.shape[-1] != term.dims:
        raise ValueError(f"observation term {term.name!r} gave {value.shape[-1]} values, the manifest says {term.dims}")
    scaled = value * term.scale
    return scaled.clamp(-term.clip, term.clip) if term.clip is not None else scaled


def build_observation(terms: Sequence[ObsTerm], o: ObsInput) -> torch.Tensor:
    """The manifest's terms in order, each ``clip(value * scale)``.

    parkour_core's order of the two; mjlab's own observation pipeline clips before it scales, so the tasks
    do not use it.
    """
    return torch.cat([term_value(t, o) for t in terms], dim=-1).float()


def discretise_command(command: torch.Tensor, spec: DiscreteCommandSpec | None) -> torch.Tensor:
    """(N, 3) commands -> (N, 2) (speed level, heading sector) as floats; (N, 0) without a spec.

    ``parkour_core.command.discretise_command`` batched (nearest speed level, ties to the slower; heading
    sector of ``atan2(vy, vx)``), computed in float64.
    """
    if spec is None:
        return command.new_zeros((command.shape[0], 0))
    c = command.double()
    speed = torch.hypot(c[:, 0], c[:, 1])
    levels = torch.tensor(spec.speed_levels_mps, dtype=torch.float64, device=command.device)
    level = torch.argmin((levels[None, :] - speed[:, None]).abs(), dim=1)  # first minimum: ties to the slower
    width = 2.0 * math.pi / spec.heading_sectors
    sector = torch.remainder(torch.floor((torch.atan2(c[:, 1], c[:, 0]) + width / 2.0) / width), spec.heading_sectors)
    moving = (level > 0) & torch.isfinite(speed)
    out = torch.stack([level.double(), sector], dim=-1)
    return torch.where(moving[:, None], out, torch.zeros_like(out)).to(command.dtype)


class GaitClock:
    """``parkour_core.gait.GaitClock`` batched, with per-environment ``ids``; phases [N, 2] on ``device``.

    Advances by 2 pi dt / period, parked at pi while the command is ~0, restarted at (0, pi) when it is not.
    """

    def __init__(
        self, period_s: float, dt_s: float, num_envs: int, device: torch.device | str, still: float = STILL_THRESHOLD
    ) -> None:
        if period_s <= 0 or dt_s <= 0:
            raise ValueError(f"gait period ({period_s}) and control dt ({dt_s}) must be positive")
        self.step_rad = 2.0 * math.pi * dt_s / period_s
        self.still = still
        self.start = torch.tensor(START_PHASE, dtype=torch.float32, device=device)
        self.phase = self.start.repeat(num_envs, 1)
        self.standing = torch.zeros(num_envs, dtype=torch.bool, device=device)

    def reset(self, ids: torch.Tensor | slice) -> None:
        self.phase[ids] = self.start
        self.standing[ids] = False

    def advance(self, command: torch.Tensor, ids: torch.Tensor | slice = slice(None)) -> torch.Tensor:
        """The phase observed at the next tick of environments ``ids``, given their command in force."""
        phase = self.phase[ids]
        advanced = torch.fmod(phase + self.step_rad + math.pi, 2.0 * math.pi) - math.pi
        still = (torch.linalg.norm(command[:, :2], dim=-1) < self.still) & (command[:, 2].abs() < self.still)
        restart = ~still & self.standing[ids]
        new = torch.where(restart[:, None], self.start.expand_as(advanced), advanced)
        self.phase[ids] = torch.where(still[:, None], torch.full_like(new, STANDING_PHASE), new)
        self.standing[ids] = still
        return self.phase


class OnnxMlp(nn.Module):
    """The walking policy's graph as torch ``Linear`` + ``ELU`` with the ONNX file's weights.

    Only ``Gemm`` and ``Elu`` layers (as holosoma exports its actor); any other operator is refused, so a
    bundle whose graph is not a plain MLP fails loudly instead of being half-converted.
    ``forward(obs [N, in]) -> [N, out]`` in float32.
    """

    def __init__(self, path: Path | str) -> None:
        import onnx
        from onnx import numpy_helper

        super().__init__()
        model = onnx.load(str(path))
        weights = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
        layers: list[nn.Module] = []
        flowing = model.graph.input[0].name
        for node in model.graph.node:
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            if node.input[0] != flowing:
                raise ValueError(f"{path}: node {node.name or node.op_type} does not continue a chain of layers")
            if node.op_type == "Gemm":
                if attrs.get("transA", 0) or attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0:
                    raise ValueError(f"{path}: Gemm with transA/alpha/beta {attrs} is not a Linear layer")
                w = np.asarray(weights[node.input[1]], dtype=np.float32)
                w = w if attrs.get("transB", 0) else w.T
                linear = nn.Linear(w.shape[1], w.shape[0], bias=len(node.input) > 2)
                linear.weight.data = torch.from_numpy(w.copy())
                if linear.bias is not None:
                    linear.bias.data = torch.from_numpy(np.asarray(weights[node.input[2]], dtype=np.float32).copy())
                layers.append(linear)
            elif node.op_type == "Elu":
                layers.append(nn.ELU(alpha=float(attrs.get("alpha", 1.0))))
            else:
                raise ValueError(f"{path}: operator {node.op_type} is not part of a plain MLP (Gemm, Elu)")
            flowing = node.output[0]
        if flowing != model.graph.output[0].name:
            raise ValueError(f"{path}: the chain of layers does not end at the graph's output")
        self.net = nn.Sequential(*layers).requires_grad_(False)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs.float())
