"""Several references in one mjlab motion command, each environment tracking its own.

Runs inside ``.venv-mjlab`` only. mjlab's ``MotionCommand`` tracks one motion file for every
environment. :class:`ReferenceMotionCommand` keeps its code and changes only what it reads:

- the references' arrays are concatenated, and every array the parent indexes with ``time_steps``
  (its per-environment frame index) is a :class:`_Track` that adds each environment's offset into
  the concatenation, so ``time_steps`` stays each environment's frame in ITS reference and the
  parent's stepping, wrap-around (``time_step_total`` is each environment's reference length),
  reset pose, ``"start"`` sampling, rewards, observations and terminations run unchanged;
- the environment -> reference map is the terrain's column (:mod:`training.backends.mjlab.terrain`:
  tile k holds reference k's boxes), so an environment tracks the reference whose boxes it stands on;
- adaptive sampling is mjlab's (failure counts per 1 s bin, exponential average, uniform floor,
  optional smoothing kernel) with bins per reference: a failed episode counts in its own reference's
  bin, and a reset draws a bin of its own reference only. With one reference it is mjlab's sampler.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from mjlab.tasks.tracking.mdp.commands import MotionCommand, MotionCommandCfg, MotionLoader
from mjlab.utils.lab_api.math import sample_uniform

TRACKS = ("joint_pos", "joint_vel", "body_pos_w", "body_quat_w", "body_lin_vel_w", "body_ang_vel_w")


class _Track:
    """A concatenated array indexed by per-environment local frames (``t`` of length num_envs)."""

    def __init__(self, data: torch.Tensor, offset: torch.Tensor) -> None:
        self.data = data
        self.offset = offset

    def __getitem__(self, index):
        if isinstance(index, tuple):
            return self.data[(index[0] + self.offset, *index[1:])]
        return self.data[index + self.offset]

    def to(self, *args, **kwargs) -> torch.Tensor:  # mjlab's ONNX export bundles the arrays
        return self.data.to(*args, **kwargs)

    @property
    def shape(self) -> torch.Size:
        return self.data.shape


class _References:
    """MotionLoader's interface over several references; ``time_step_total`` is per environment."""

    def __init__(self, loaders: list[MotionLoader], ref_id: torch.Tensor) -> None:
        self.lengths = torch.tensor([m.time_step_total for m in loaders], device=ref_id.device)
        self.starts = torch.cumsum(self.lengths, 0) - self.lengths
        offset = self.starts[ref_id]
        for name in TRACKS:
            setattr(self, name, _Track(torch.cat([getattr(m, name) for m in loaders]), offset))
        self.time_step_total = self.lengths[ref_id]


class ReferenceMotionCommand(MotionCommand):
    cfg: ReferenceMotionCommandCfg

    def __init__(self, cfg: ReferenceMotionCommandCfg, env) -> None:
        files = list(cfg.motion_files) or [cfg.motion_file]
        cfg.motion_file = str(files[0])
        super().__init__(cfg, env)
        loaders = [MotionLoader(str(f), self.body_indexes, device=self.device) for f in files]
        terrain = env.scene.terrain
        if len(files) > 1:
            if terrain is None or getattr(terrain, "terrain_origins", None) is None:
                raise ValueError("several references need the reference terrain (one tile per reference)")
            cols = terrain.terrain_origins.shape[1]
            if cols != len(files):
                raise ValueError(f"{len(files)} references but the terrain has {cols} tiles")
            if self.num_envs < len(files):
                raise ValueError(f"{len(files)} references need at least as many environments, got {self.num_envs}")
            self.ref_id = terrain.terrain_types.to(self.device).long().clone()
        else:
            self.ref_id = torch.zeros(self.num_envs, dtype=torch.long, device=self.device)
        self.num_references = len(files)
        self.motion = _References(loaders, self.ref_id)
        # Adaptive sampling's bins: mjlab's 1 s bins, per reference, end to end.
        per_second = 1.0 / env.step_dt
        self.ref_bins = torch.tensor([int(m.time_step_total // per_second) + 1 for m in loaders], device=self.device)
        self.bin_start = torch.cumsum(self.ref_bins, 0) - self.ref_bins
        self.bin_count = int(self.ref_bins.sum())
        self.bin_ref = torch.repeat_interleave(torch.arange(len(files), device=self.device), self.ref_bins)
        self.bin_failed_count = torch.zeros(self.bin_count, dtype=torch.float, device=self.device)
        self._current_bin_failed = torch.zeros(self.bin_count, dtype=torch.float, device=self.device)

    def _bins_of(self, env_ids: torch.Tensor) -> torch.Tensor:
        """The global bin each environment's current frame lies in."""
        ref = self.ref_id[env_ids]
        length = self.motion.lengths[ref]
        local = torch.minimum(
            (self.time_steps[env_ids] * self.ref_bins[ref]) // length.clamp(min=1), self.ref_bins[ref] - 1
        )
        return self.bin_start[ref] + local

    def _adaptive_sampling(self, env_ids: torch.Tensor) -> None:
        episode_failed = self._env.termination_manager.terminated[env_ids]
        if torch.any(episode_failed):
            fail_bins = self._bins_of(env_ids)[episode_failed]
            self._current_bin_failed[:] = torch.bincount(fail_bins, minlength=self.bin_count)

        probs = self.bin_failed_count + self.cfg.adaptive_uniform_ratio / self.ref_bins[self.bin_ref].float()
        if self.cfg.adaptive_kernel_size > 1:  # mjlab's non-causal smoothing, inside each reference
            smoothed = torch.empty_like(probs)
            for r in range(self.num_references):
                lo, n = int(self.bin_start[r]), int(self.ref_bins[r])
                seg = torch.nn.functional.pad(
                    probs[lo : lo + n].view(1, 1, -1), (0, self.cfg.adaptive_kernel_size - 1), mode="replicate"
                )
                smoothed[lo : lo + n] = torch.nn.functional.conv1d(seg, self.kernel.view(1, 1, -1)).view(-1)
            probs = smoothed

        ref = self.ref_id[env_ids]
        rows = torch.where(self.bin_ref[None, :] == ref[:, None], probs[None, :], torch.zeros_like(probs)[None, :])
        rows = rows / rows.sum(dim=1, keepdim=True)
        sampled = torch.multinomial(rows, 1).squeeze(-1)
        local = (sampled - self.bin_start[ref]).float()
        u = sample_uniform(0.0, 1.0, (len(env_ids),), device=self.device)
        length = self.motion.lengths[ref]
        self.time_steps[env_ids] = ((local + u) / self.ref_bins[ref].float() * (length - 1).float()).long()

        entropy = -(rows * (rows + 1e-12).log()).sum(dim=1)
        norm = torch.log(self.ref_bins[ref].float()).clamp(min=1e-12)
        h = torch.where(self.ref_bins[ref] > 1, entropy / norm, torch.ones_like(entropy))
        pmax, imax = rows.max(dim=1)
        self.metrics["sampling_entropy"][env_ids] = h
        self.metrics["sampling_top1_prob"][env_ids] = pmax
        self.metrics["sampling_top1_bin"][env_ids] = (imax - self.bin_start[ref]).float() / self.ref_bins[ref].float()

    def _uniform_sampling(self, env_ids: torch.Tensor) -> None:
        length = self.motion.lengths[self.ref_id[env_ids]]
        self.time_steps[env_ids] = (torch.rand(len(env_ids), device=self.device) * length).long().clamp(max=length - 1)
        self.metrics["sampling_entropy"][:] = 1.0
        self.metrics["sampling_top1_prob"][:] = 1.0 / max(self.bin_count, 1)
        self.metrics["sampling_top1_bin"][:] = 0.5

    def sampling_probabilities(self, reference: int) -> torch.Tensor:
        """Start-bin probabilities of one reference (what a reset of its environments draws from)."""
        lo, n = int(self.bin_start[reference]), int(self.ref_bins[reference])
        p = self.bin_failed_count[lo : lo + n] + self.cfg.adaptive_uniform_ratio / n
        return p / p.sum()


@dataclass(kw_only=True)
class ReferenceMotionCommandCfg(MotionCommandCfg):
    motion_files: tuple[str, ...] = ()
    """The references (converted npz), in terrain-tile order; ``motion_file`` is set to the first."""

    def build(self, env) -> ReferenceMotionCommand:
        return ReferenceMotionCommand(self, env)
