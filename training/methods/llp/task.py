"""The ``llp_student`` task: PHP's student task (:class:`training.php_student.task.StudentTask`) with LLP's changes.

Config: ``training/configs/llp_student.yaml`` (``llp_student_tiny.yaml`` for tests), section ``llp``.
The runner, the storage and :class:`~training.rl.algorithms.HybridPPO` (PHP's ``lambda_PPO L_PPO +
lambda_D L_D``, its schedule, the DAgger mask) are PHP's student's; what LLP adds (the student, the
camera timing, the transition prior, the group in the critic only): :class:`LLPStudentTask`.

The references are LLP's cuts around each skill (:func:`training.methods.llp.references.skill_references`,
``llp.around_skill_s``), handed in by the smoke chain or read from ``env.motions``. ``finish`` exports
the student without the decoder and with LLP's trained depth timing in the manifest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from training.configs.schema import TrainConfig
from training.envs.student import CameraConfig, StudentConfig, StudentEnv
from training.export.models import parameter_count
from training.methods.llp.evaluate import evaluate_entry_exit
from training.methods.llp.references import LLPReference, skill_references
from training.methods.llp.student import LLPModel, export_llp_student
from training.methods.llp.timing import LLPTiming, llp_student_env
from training.methods.llp.transition_prior import GROUPS, ConditionalPrior, PriorConfig, group_labels, transitions
from training.php_student.task import MASK_GROUP, StudentTask
from training.php_teacher.task import TrackingTeacher
from training.rl.runner import Runner
from training.rl.task_cfg import hybrid_student_cfg

GROUP = "llp_group"


def timing_of(cfg: TrainConfig) -> LLPTiming:
    return LLPTiming(
        hz=(cfg.llp.camera_hz[0], cfg.llp.camera_hz[1]), latency_s=(cfg.llp.latency_s[0], cfg.llp.latency_s[1])
    )


def prior_of(cfg: TrainConfig) -> PriorConfig:
    c = cfg.llp
    return PriorConfig(
        reward_weight=c.style_weight, learning_rate=c.prior_learning_rate, gradient_penalty=c.prior_gradient_penalty,
        epochs=c.prior_epochs, hidden=tuple(c.prior_hidden),
    )  # fmt: skip


def llp_train_cfg(cfg: TrainConfig) -> dict[str, Any]:
    """PHP's student's rsl_rl config with LLP's actor, and the group beside the privileged observation in the critic."""
    train_cfg = hybrid_student_cfg(cfg, ["privileged", GROUP], mask_group=MASK_GROUP)
    c = cfg.llp
    train_cfg["actor"] |= {
        "class_name": LLPModel, "encoder_hidden": list(c.encoder_hidden), "encoder_out": c.encoder_out,
        "decoder_hidden": list(c.decoder_hidden), "reconstruction_weight": c.reconstruction_weight,
    }  # fmt: skip
    return train_cfg


class LLPStudentTask(StudentTask):
    """PHP's student task with LLP's additions.

    - the student :class:`~training.methods.llp.student.LLPModel` (MLP -> GRU -> MLP) and its height-scan
      decoder, whose MSE (``llp.reconstruction_weight``) the update adds to every mini-batch through the
      model's ``auxiliary_losses``;
    - the camera timing of :mod:`training.methods.llp.timing` (``llp.camera_hz`` drawn per episode,
      ``llp.latency_s`` per frame);
    - the transition prior (:mod:`training.methods.llp.transition_prior`): each step's policy transition
      is scored under its group (approach / skill / exit, from the reference's phase at the state's frame)
      and ``llp.style_weight`` x the style reward joins the task reward; after each iteration the
      discriminator trains on that iteration's reference transitions (real) against the policy's (fake);
    - the group in the critic only: observation group ``llp_group`` (one-hot) goes to the critic beside
      the privileged observation; the actor, the exported student, never reads it.
    """

    name = "llp_student"
    figures = ("tracking_error_m", "reconstruction", "style_reward_per_step", "reward_per_step")

    def __init__(
        self,
        cfg: TrainConfig,
        num_envs: int | None = None,
        references: list[LLPReference] | None = None,
        teacher: TrackingTeacher | None = None,
        provenance: dict[str, Any] | None = None,
    ) -> None:
        if references is None:
            if not cfg.env.motions:
                raise ValueError("llp_student: set env.motions to a folder of motion_*.npz (`parkour mm synth`)")
            references = skill_references(Path(cfg.env.motions), *cfg.llp.around_skill_s)
        self.llp_references = references
        self.phases = [r.phase for r in references]
        self.timing = timing_of(cfg)
        self.prior = ConditionalPrior(prior_of(cfg), seed=cfg.run.seed + 3)
        self._real: list[torch.Tensor] = []
        self._fake: list[torch.Tensor] = []
        self._labels: list[torch.Tensor] = []
        self._style: list[float] = []
        super().__init__(cfg, num_envs, [r.skill_reference for r in references], teacher, provenance)

    def make_env(self, references: list[Any], config: StudentConfig) -> StudentEnv:
        return llp_student_env(references, config, self.manifest, self.timing)

    def groups_now(self) -> NDArray[np.int64]:
        """Each environment's group: its reference's phase at the frame of its state."""
        t = self.env.tracking
        return np.array([group_labels(self.phases[r], f) for r, f in zip(t.ref_id, t.frame, strict=True)])

    def _observation(self, obs: dict[str, NDArray[np.float32]]) -> dict[str, NDArray[np.floating]]:
        onehot = np.eye(len(GROUPS), dtype=np.float32)[self.groups_now()]
        return super()._observation(obs) | {GROUP: onehot}

    def shaped_reward(
        self, before: dict[str, NDArray[np.floating]], after: dict[str, NDArray[np.float32]], reward: Any, done: Any
    ) -> Any:
        """The task reward plus the prior's style reward for the transition just made (none into a reset)."""
        group = torch.from_numpy(np.argmax(before[GROUP], axis=-1))
        alive = torch.from_numpy(~np.asarray(done, dtype=bool))
        policy_tr, reference_tr = transitions(
            torch.from_numpy(before["privileged"]), torch.from_numpy(after["privileged"])
        )
        style = self.prior.reward(policy_tr, group) * alive
        self._fake.append(policy_tr[alive])
        self._real.append(reference_tr[alive])
        self._labels.append(group[alive])
        self._style.append(float(style.mean()))
        return reward + style.numpy()

    def after_iteration(self, runner: Runner, k: int, row: dict[str, Any]) -> dict[str, Any]:
        row = super().after_iteration(runner, k, row)
        labels = torch.cat(self._labels)
        stats = self.prior.update(torch.cat(self._real), labels, torch.cat(self._fake), labels)
        counts = torch.bincount(labels, minlength=len(GROUPS)).tolist()
        row |= {
            **stats.as_dict(),
            "style_reward_per_step": float(np.mean(self._style)),
            **{f"group_{g}_fraction": c / max(1, sum(counts)) for g, c in zip(GROUPS, counts, strict=True)},
        }
        self._real, self._fake, self._labels, self._style = [], [], [], []
        return row

    def train_cfg(self) -> dict[str, Any]:
        return llp_train_cfg(self.cfg)

    def finish(self, runner: Runner, out: Path, size: str) -> dict[str, Any]:
        model = runner.alg.get_policy()
        assert isinstance(model, LLPModel)
        model = model.cpu().eval()
        torch.save(model.state_dict(), out / "student.pt")  # with the decoder: training state, kept before the export
        provenance = self.bundle_provenance(runner, size, "rsl_rl PPO + PHP's hybrid loss + LLP's decoder and prior")
        bundle = export_llp_student(
            model, out / "bundle", f"llp_student_{size}", provenance, self.timing.latency_s, self.timing.nominal_hz,
            self.frames,
        )  # fmt: skip
        camera = CameraConfig(width=self.cfg.env.camera_width, height=self.cfg.env.camera_height)
        entry_exit = evaluate_entry_exit(model, self.llp_references, self.cfg, camera, self.cfg.run.seed, self.timing)
        return {
            "bundle": str(bundle),
            "student": str(out / "student.pt"),
            "student_parameters": {
                "depth_backbone": parameter_count(model.backbone),
                "student": sum(parameter_count(m) for m in model.bundle_pair()[1].children()),
                "height_scan_decoder (not exported)": parameter_count(model.decoder),
                "critic (not exported)": parameter_count(runner.alg.critic),
            },
            "entry_exit": entry_exit,
        }
