"""BlendedDistillation and HybridPPO on rsl_rl's storage, driven by the one runner on a small numpy task."""

import numpy as np
import pytest
import torch
from rsl_rl.models import MLPModel
from rsl_rl.modules.distribution import GaussianDistribution

from training.rl.algorithms import BlendedDistillation, HybridPPO
from training.rl.env import NumpyVecEnv
from training.rl.models import ObservedTeacher
from training.rl.runner import Budget, Runner

A = 2


class Reach:
    """Observations x ~ N(0, 1); the teacher's label is -x; the reward is ``sign * |a|^2`` (PPO's signal)."""

    num_actions, max_episode_length = A, 5

    def __init__(self, num_envs: int = 8, seed: int = 0, sign: float = 1.0) -> None:
        self.num_envs, self.sign = num_envs, sign
        self.rng = np.random.default_rng(seed)
        self.t = 0
        self._draw()

    def _draw(self) -> None:
        x = self.rng.normal(size=(self.num_envs, A))
        self.groups = {"policy": x, "teacher_actions": -x}

    def observe(self):
        return self.groups

    def step(self, actions):
        reward = self.sign * np.sum(actions**2, axis=1)
        self.t += 1
        done = np.full(self.num_envs, self.t % self.max_episode_length == 0)
        self._draw()
        return self.groups, reward, done, {"time_outs": done, "log": {}}

    def close(self) -> None:
        pass


def distillation_cfg(**algorithm):
    groups = {"student": ["policy"], "teacher": ["teacher_actions"]}
    return {"num_steps_per_env": 4, "save_interval": 100, "obs_groups": groups,
            "algorithm": {"class_name": BlendedDistillation, "learning_rate": 1e-2, "num_mini_batches": 2,
                          **algorithm},
            "student": {"class_name": MLPModel, "hidden_dims": [8]},
            "teacher": {"class_name": ObservedTeacher}}  # fmt: skip


def hybrid_cfg(**algorithm):
    return {"num_steps_per_env": 4, "save_interval": 100, "obs_groups": {"actor": ["policy"], "critic": ["policy"]},
            "algorithm": {"class_name": HybridPPO, "num_learning_epochs": 1, "num_mini_batches": 1,
                          "learning_rate": 1e-2, "schedule": "fixed", **algorithm},
            "actor": {"class_name": MLPModel, "hidden_dims": [8],
                      "distribution_cfg": {"class_name": GaussianDistribution, "init_std": 0.5}},
            "critic": {"class_name": MLPModel, "hidden_dims": [8]}}  # fmt: skip


def runner(tmp_path, cfg, task=None, seed=0):
    torch.manual_seed(seed)
    return Runner(NumpyVecEnv(task or Reach()), cfg, tmp_path)


def test_the_blend_is_the_teacher_at_beta_one_and_the_student_at_zero_but_in_the_reference_envs(tmp_path):
    r = runner(tmp_path, distillation_cfg(teacher_env_fraction=0.25))
    alg = r.alg
    assert isinstance(alg, BlendedDistillation) and alg.teacher_envs == 2
    obs = r.env.get_observations()
    with torch.inference_mode():
        alg.set_progress(0.0)
        assert torch.allclose(alg.act(obs), obs["teacher_actions"])
        alg.set_progress(0.5)  # beta_end_fraction 0.5: the student's own action
        student = alg.student(obs)
        blended = alg.act(obs)
    assert torch.allclose(blended[:2], obs["teacher_actions"][:2]) and torch.allclose(blended[2:], student[2:])
    alg.storage.clear()


def test_distillation_learns_the_teachers_labels(tmp_path):
    r = runner(tmp_path, distillation_cfg())
    rows = r.train(Budget(iterations=30))
    assert rows[-1]["behavior"] < 0.3 * rows[0]["behavior"]


def actor_after_one_update(tmp_path, sign: float, k: int, total: int) -> torch.Tensor:
    r = runner(tmp_path / f"{sign}_{k}", hybrid_cfg(), Reach(sign=sign))
    alg = r.alg
    assert isinstance(alg, HybridPPO)
    alg.schedule_iteration, alg.total_iterations = k, total
    r.train(Budget(iterations=1))
    return torch.cat([p.detach().flatten() for p in alg.actor.parameters()])


def test_at_lambda_ppo_zero_the_actor_learns_from_the_teacher_alone(tmp_path):
    """k = 0: lambda_PPO = 0, so the reward's sign cannot change the actor's update; at k = K/2 it does."""
    assert torch.allclose(actor_after_one_update(tmp_path, 1.0, 0, 10), actor_after_one_update(tmp_path, -1.0, 0, 10))
    assert not torch.allclose(
        actor_after_one_update(tmp_path, 1.0, 5, 10), actor_after_one_update(tmp_path, -1.0, 5, 10)
    )


def test_the_hybrid_update_reports_php_s_schedule(tmp_path):
    r = runner(tmp_path, hybrid_cfg())
    alg = r.alg
    assert isinstance(alg, HybridPPO)
    alg.total_iterations = 10
    for k, (dagger, ppo) in ((0, (1.0, 0.0)), (2, (0.6, 0.4)), (5, (0.1, 0.9)), (9, (0.1, 0.9))):
        alg.schedule_iteration = k
        row = r.train(Budget(iterations=1))[-1]
        assert (row["dagger_weight"], row["ppo_weight"]) == pytest.approx((dagger, ppo))


def test_hybrid_ppo_refuses_what_its_update_does_not_restate(tmp_path):
    with pytest.raises(ValueError, match="RND, symmetry"):
        runner(tmp_path, hybrid_cfg(symmetry_cfg={"use_data_augmentation": True}))


class MaskedReach(Reach):
    """Reach whose first half of the envs is not imitated (mask 0), their labels ``masked_label``."""

    def __init__(self, masked_label: float, imitate_rest: bool = True) -> None:
        self.masked_label, self.imitate_rest = masked_label, imitate_rest
        super().__init__()

    def _draw(self) -> None:
        super()._draw()
        half = self.num_envs // 2
        self.groups["teacher_actions"][:half] = self.masked_label
        self.groups["imitate"] = np.zeros((self.num_envs, 1))
        self.groups["imitate"][half:] = float(self.imitate_rest)


def actor_after_masked_update(tmp_path, task: MaskedReach) -> torch.Tensor:
    r = runner(tmp_path / f"{task.masked_label}_{task.imitate_rest}", hybrid_cfg(mask_group="imitate"), task)
    r.alg.schedule_iteration, r.alg.total_iterations = 0, 10  # lambda_PPO = 0: the actor learns from L_D alone
    r.train(Budget(iterations=1))
    return torch.cat([p.detach().flatten() for p in r.alg.actor.parameters()])


def test_the_dagger_mask_keeps_the_labels_of_steps_not_imitated_out_of_the_update(tmp_path):
    before = runner(tmp_path / "init", hybrid_cfg(mask_group="imitate"), MaskedReach(0.0)).alg.actor
    initial = torch.cat([p.detach().flatten() for p in before.parameters()])
    clean, corrupt = MaskedReach(0.0), MaskedReach(1000.0)
    assert torch.allclose(actor_after_masked_update(tmp_path, clean), actor_after_masked_update(tmp_path, corrupt))
    nothing = actor_after_masked_update(tmp_path, MaskedReach(1000.0, imitate_rest=False))
    assert torch.allclose(nothing, initial) and not torch.allclose(actor_after_masked_update(tmp_path, clean), initial)


class ProbedActor(MLPModel):
    """An actor with a training-only head: a linear probe of its latent towards the observation's sum."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.probe = torch.nn.Linear(self._get_latent_dim(), 1)
        self.latent: torch.Tensor | None = None

    def get_latent(self, obs, masks=None, hidden_state=None):
        self.latent = super().get_latent(obs, masks, hidden_state)
        return self.latent

    def auxiliary_losses(self, observations, masks):
        target = observations["policy"].sum(-1, keepdim=True)
        return {"probe": (self.probe(self.latent) - target).pow(2).mean()}


def test_an_actors_auxiliary_losses_join_the_hybrid_loss(tmp_path):
    """Only the auxiliary term reaches the probe: it trains, and the update reports the term by its name."""
    cfg = hybrid_cfg()
    cfg["actor"]["class_name"] = ProbedActor
    r = runner(tmp_path, cfg)
    before = r.alg.actor.probe.weight.detach().clone()
    rows = r.train(Budget(iterations=3))
    assert not torch.equal(before, r.alg.actor.probe.weight)
    assert all(np.isfinite(row["probe"]) for row in rows)


@pytest.mark.parametrize(("k", "adapts"), [(0, False), (5, False), (6, True), (100, True)])
def test_the_kl_rule_waits_until_lambda_ppo_passes_a_tenth(tmp_path, k, adapts):
    """K = 100: lambda_PPO = k / 50 passes 0.1 after k = 5. With a desired KL no update can meet, the
    second mini-batch (the first has KL 0: nothing changed yet) divides the rate by 1.5, once it may."""
    r = runner(tmp_path, hybrid_cfg(schedule="adaptive", desired_kl=1e-9, num_mini_batches=2))
    alg = r.alg
    assert isinstance(alg, HybridPPO)
    alg.total_iterations, alg.schedule_iteration = 100, k
    row = r.train(Budget(iterations=1))[-1]
    assert row["kl"] > 0.0
    expected = 1e-2 / 1.5 if adapts else 1e-2
    assert row["learning_rate"] == pytest.approx(expected) and alg.optimizer.param_groups[0]["lr"] == pytest.approx(
        expected
    )
