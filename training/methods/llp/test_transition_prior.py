"""The conditional transition prior: labels from the phase, the label in the critic only, D separates."""

from __future__ import annotations

import numpy as np
import torch

from parkour_core.obs import observation_size
from training.envs.privileged import privileged_size
from training.export.student import STUDENT_OBS_TERMS
from training.methods.llp.student import SIZES, build_llp_student, with_group
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
    latent = SIZES["tiny"].student.latent_dim
    actor = actor_input_layout(latent)
    assert not any("group" in name or "label" in name for name, _ in actor)
    model = build_llp_student(SIZES["tiny"], 0, privileged_size(), len(GROUPS))
    # The actor's input width is the bundle's terms + the latent: no room for a label.
    assert model.student.gru.input_size == sum(d for _, d in actor) == observation_size(STUDENT_OBS_TERMS) + latent
    assert critic_input_layout()[-1] == ("group_onehot", len(GROUPS))
    assert model.critic[0].in_features == sum(d for _, d in critic_input_layout())
    # Changing the label changes the value, never the action.
    obs, depth = torch.randn(3, model.student.gru.input_size - latent), torch.randn(3, 58, 87)
    p = torch.randn(3, privileged_size())
    mean0, _ = model.step(obs, depth, model.initial_hidden(3))
    values = [model.value(with_group(p, torch.full((3,), g))) for g in range(len(GROUPS))]
    mean1, _ = model.step(obs, depth, model.initial_hidden(3))
    torch.testing.assert_close(mean0, mean1)
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
