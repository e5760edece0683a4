"""The conditional transition prior: labels from the phase, the label in the critic only, D separates."""

from __future__ import annotations

import numpy as np
import torch

from parkour_core.obs import observation_size
from training.envs.privileged import privileged_size
from training.export.student import STUDENT_OBS_TERMS
from training.methods.llp.transition_prior import (
    GROUPS,
    ConditionalPrior,
    PriorConfig,
    actor_input_layout,
    critic_input_layout,
    group_labels,
    style_reward,
    transitions,
)


def test_group_labels_follow_the_motions_phase() -> None:
    phase = np.array([0, 0, 1, 1, 1, 2])
    np.testing.assert_array_equal(group_labels(phase, np.array([0, 2, 5, 9])), [0, 1, 2, 2])
    assert GROUPS == ("approach", "skill", "exit")


def test_the_label_is_an_input_of_the_critic_only() -> None:
    """The task's own actor and critic (llp_student_tiny): a changed label changes the value, never the action."""
    from rsl_rl.models import MLPModel
    from tensordict import TensorDict

    from training.configs.schema import load_train_config
    from training.methods.llp.task import GROUP, llp_train_cfg

    train_cfg = llp_train_cfg(load_train_config("llp_student_tiny"))
    groups = train_cfg["obs_groups"]
    assert GROUP not in groups["actor"] and GROUP in groups["critic"]
    latent = train_cfg["actor"]["latent_dim"]
    actor_layout = actor_input_layout(latent)
    assert not any("group" in name or "label" in name for name, _ in actor_layout)
    assert critic_input_layout()[-1] == ("group_onehot", len(GROUPS))
    n = 3
    obs = TensorDict(
        {"policy": torch.randn(n, observation_size(STUDENT_OBS_TERMS)), "depth": torch.rand(n, 58, 87),
         "privileged": torch.randn(n, privileged_size()), GROUP: torch.zeros(n, len(GROUPS))},
        batch_size=[n],
    )  # fmt: skip
    actor_kwargs = {k: v for k, v in train_cfg["actor"].items() if k != "class_name"}
    actor = train_cfg["actor"]["class_name"](obs, groups, "actor", 29, **actor_kwargs)
    critic_kwargs = {k: v for k, v in train_cfg["critic"].items() if k != "class_name"}
    critic = MLPModel(obs, groups, "critic", 1, **critic_kwargs)
    # The actor's input width is the bundle's terms + the latent: no room for a label.
    _, student = actor.bundle_pair()
    assert student.gru.input_size == sum(d for _, d in actor_layout)
    assert critic.obs_dim == sum(d for _, d in critic_input_layout())
    means, values = [], []
    for g in range(len(GROUPS)):
        obs[GROUP] = torch.nn.functional.one_hot(torch.full((n,), g), len(GROUPS)).float()
        actor.reset()
        with torch.no_grad():
            means.append(actor(obs))
            values.append(critic(obs))
    torch.testing.assert_close(means[0], means[1])
    torch.testing.assert_close(means[1], means[2])
    assert not torch.allclose(values[0], values[1]) and not torch.allclose(values[1], values[2])


def test_the_discriminator_learns_per_group_and_rewards_reference_like_transitions() -> None:
    g = torch.Generator().manual_seed(0)
    p, p_next = torch.randn(256, privileged_size(), generator=g), torch.randn(256, privileged_size(), generator=g)
    fake, real = transitions(p, p_next)
    real = real * 0.1 + 0.5  # the reference's transitions sit elsewhere
    group = torch.randint(0, 3, (256,), generator=g)
    prior = ConditionalPrior(PriorConfig(epochs=1, learning_rate=3e-3), transition_dim=fake.shape[-1], seed=0)
    first = prior.update(real, group, fake, group)
    for _ in range(60):
        last = prior.update(real, group, fake, group)
    assert last.loss < 0.5 * first.loss
    assert last.real_score > last.fake_score + 1.0
    assert float(prior.reward(real, group).mean()) > float(prior.reward(fake, group).mean())
    torch.testing.assert_close(style_reward(torch.tensor([1.0, -1.0, 5.0])), torch.tensor([1.0, 0.0, 0.0]))
