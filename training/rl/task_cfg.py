"""rsl_rl's train configs, built here only, from our typed config: PPO on MLPs, the hybrid DAgger + PPO
student and the blended DAgger student (a task picks one in its ``train_cfg`` and names its groups)."""

from __future__ import annotations

from typing import Any

from rsl_rl.algorithms import PPO
from rsl_rl.models import MLPModel
from rsl_rl.modules.distribution import GaussianDistribution

from training.configs.schema import TrainConfig
from training.rl.algorithms import BlendedDistillation, HybridPPO
from training.rl.models import DEPTH_GROUP, DepthRecurrentModel, ObservedTeacher


def ppo_mlp_cfg(cfg: TrainConfig, actor_groups: list[str], critic_groups: list[str]) -> dict[str, Any]:
    """rsl_rl's PPO with ``MLPModel`` actor (Gaussian head) and critic, from the config's ``ppo`` and ``policy``."""
    p, pol = cfg.ppo, cfg.policy
    mlp = {"activation": pol.activation, "obs_normalization": pol.obs_normalization}
    return {
        "num_steps_per_env": p.num_steps_per_env,
        "save_interval": cfg.run.save_interval,
        "obs_groups": {"actor": actor_groups, "critic": critic_groups},
        "algorithm": {
            "class_name": PPO, "num_learning_epochs": p.num_epochs, "num_mini_batches": p.num_mini_batches,
            "clip_param": p.clip_param, "gamma": p.gamma, "lam": p.lam, "value_loss_coef": p.value_loss_coef,
            "entropy_coef": p.entropy_coef, "learning_rate": p.learning_rate, "max_grad_norm": p.max_grad_norm,
            "use_clipped_value_loss": p.use_clipped_value_loss, "schedule": p.schedule, "desired_kl": p.desired_kl,
        },
        "actor": {"class_name": MLPModel, **mlp, "hidden_dims": list(pol.actor_hidden),
                  "distribution_cfg": {"class_name": GaussianDistribution, "init_std": pol.init_noise_std}},
        "critic": {"class_name": MLPModel, **mlp, "hidden_dims": list(pol.critic_hidden)},
    }  # fmt: skip


def student_model_cfg(cfg: TrainConfig) -> dict[str, Any]:
    """The student's DepthRecurrentModel settings from the config's ``policy`` section."""
    p = cfg.policy
    return {
        "class_name": DepthRecurrentModel, "hidden_dims": list(p.actor_hidden), "rnn_hidden_dim": p.rnn_hidden,
        "conv_channels": list(p.conv_channels), "backbone_hidden": p.backbone_hidden, "latent_dim": p.depth_latent,
    }  # fmt: skip


def hybrid_student_cfg(cfg: TrainConfig, critic_groups: list[str], **algorithm: Any) -> dict[str, Any]:
    """HybridPPO on the depth student (actor: proprioception + depth) and an MLP critic on ``critic_groups``."""
    p, d = cfg.ppo, cfg.distill
    return {
        "num_steps_per_env": p.num_steps_per_env,
        "save_interval": cfg.run.save_interval,
        "obs_groups": {"actor": ["policy", DEPTH_GROUP], "critic": critic_groups},
        "algorithm": {
            "class_name": HybridPPO, "num_learning_epochs": p.num_epochs, "num_mini_batches": p.num_mini_batches,
            "clip_param": p.clip_param, "gamma": p.gamma, "lam": p.lam, "value_loss_coef": p.value_loss_coef,
            "entropy_coef": p.entropy_coef, "learning_rate": p.learning_rate, "max_grad_norm": p.max_grad_norm,
            "use_clipped_value_loss": p.use_clipped_value_loss, "schedule": p.schedule,
            "desired_kl": p.desired_kl, "dagger_coef": d.dagger_coef, "critic_always_trained":
            d.critic_always_trained, "min_lr": p.min_lr, "max_lr": p.max_lr, **algorithm,
        },
        "actor": student_model_cfg(cfg) | {
            "distribution_cfg": {"class_name": GaussianDistribution, "init_std": cfg.policy.init_noise_std,
                                 "std_type": "log"},
        },
        "critic": {"class_name": MLPModel, "hidden_dims": list(cfg.policy.critic_hidden),
                   "activation": cfg.policy.activation, "obs_normalization": True},
    }  # fmt: skip


def distillation_cfg(cfg: TrainConfig, student_groups: list[str], teacher_groups: list[str]) -> dict[str, Any]:
    """``BlendedDistillation`` (DAgger, the teacher's share of the acted action falling to zero) of the depth
    student from a teacher whose actions are an observation group, from the config's ``distill`` section."""
    d = cfg.distill
    return {
        "num_steps_per_env": cfg.ppo.num_steps_per_env,
        "save_interval": cfg.run.save_interval,
        "obs_groups": {"student": student_groups, "teacher": teacher_groups},
        "algorithm": {
            "class_name": BlendedDistillation, "num_learning_epochs": d.num_epochs,
            "num_mini_batches": d.num_mini_batches, "learning_rate": d.learning_rate,
            "max_grad_norm": cfg.ppo.max_grad_norm, "loss_type": "mse",
            "beta_end_fraction": d.beta_end_fraction, "teacher_env_fraction": d.teacher_env_fraction,
        },
        "student": student_model_cfg(cfg),
        "teacher": {"class_name": ObservedTeacher},
    }  # fmt: skip
