"""The depth student as an rsl_rl model: the exported pair computes its actions, and PPO's padded
trajectories give what the rollout computed step by step."""

import torch
from rsl_rl.modules.distribution import GaussianDistribution
from rsl_rl.utils import split_and_pad_trajectories
from tensordict import TensorDict

from training.rl.models import DepthRecurrentModel, ObservedTeacher

N, T, OBS, A = 3, 7, 10, 4
GROUPS = {"actor": ["policy", "depth"], "teacher": ["teacher_actions"]}
SIZES = {"hidden_dims": [16], "rnn_hidden_dim": 8, "conv_channels": [2, 3], "backbone_hidden": 8, "latent_dim": 5}


def observations(g: torch.Generator, lead: tuple[int, ...] = (N,)) -> TensorDict:
    return TensorDict({"policy": torch.randn(*lead, OBS, generator=g), "depth": torch.rand(*lead, 12, 14, generator=g),
                       "teacher_actions": torch.randn(*lead, A, generator=g)}, batch_size=list(lead))  # fmt: skip


def model(g: torch.Generator, **extra) -> DepthRecurrentModel:
    torch.manual_seed(int(torch.randint(0, 1000, (1,), generator=g)))
    return DepthRecurrentModel(observations(g), GROUPS, "actor", A, **SIZES, **extra)


def test_the_bundle_pair_computes_the_models_actions_with_the_hidden_state_outside():
    g = torch.Generator().manual_seed(0)
    m = model(g)
    backbone, student = m.bundle_pair()
    hidden = torch.zeros(1, N, SIZES["rnn_hidden_dim"])
    with torch.no_grad():
        for _ in range(5):
            obs = observations(g)
            action = m(obs)
            expected, hidden = student(obs["policy"], backbone(obs["depth"]), hidden)
            assert torch.allclose(action, expected, atol=1e-6)


def test_pair_weights_round_trip():
    g = torch.Generator().manual_seed(1)
    a, b = model(g), model(g)
    obs = observations(g)
    with torch.no_grad():
        assert not torch.allclose(a(obs), b(obs))
        b.load_pair_state_dict(a.pair_state_dict())
        a.reset(), b.reset()
        assert torch.allclose(a(obs), b(obs))


def test_padded_trajectories_give_the_rollouts_actions():
    """PPO's recurrent mini-batches (split at dones, padded, masked, hidden state at each trajectory's
    start) must reproduce the actions the policy computed step by step, resets included."""
    g = torch.Generator().manual_seed(2)
    m = model(g, distribution_cfg={"class_name": GaussianDistribution, "init_std": 0.3})
    steps = [observations(g) for _ in range(T)]
    dones = torch.zeros(T, N, 1, dtype=torch.uint8)
    dones[2, 0] = dones[4, 1] = dones[5, 0] = 1
    means, hiddens = [], []
    with torch.no_grad():
        for t in range(T):
            hiddens.append(m.get_hidden_state())
            means.append(m(steps[t]))
            m.reset(dones[t, :, 0])
    rollout = torch.stack(means)
    stacked = torch.stack(steps)
    padded, masks = split_and_pad_trajectories(stacked, dones)
    # Each trajectory's initial hidden state: zeros at t = 0 and after every done.
    first = torch.zeros(1, padded.shape[1], SIZES["rnn_hidden_dim"])
    with torch.no_grad():
        batch = m(padded, masks=masks, hidden_state=first)
    assert batch.shape == rollout.shape
    assert torch.allclose(batch, rollout, atol=1e-5)


def test_the_observed_teacher_returns_its_group():
    g = torch.Generator().manual_seed(3)
    obs = observations(g)
    teacher = ObservedTeacher(obs, GROUPS, "teacher", A)
    assert torch.equal(teacher(obs), obs["teacher_actions"])


def test_repeated_frames_reuse_their_latent_and_give_what_every_frame_through_the_backbone_gives():
    """The camera publishes at 30 Hz, the policy ticks at 50 Hz: a repeated frame's latent is reused, in
    sequences (with gradients) and in the rollout (without), and a weight change invalidates the rollout's cache."""
    g = torch.Generator().manual_seed(4)
    m = model(g)
    frames = torch.rand(T, N, 12, 14, generator=g)
    frames[2], frames[3, 1], frames[5] = frames[1], frames[2, 1], frames[4]  # held frames
    full = m.backbone(frames.reshape(T * N, 12, 14)).reshape(T, N, -1)
    assert torch.allclose(m.encode_depth(frames), full, atol=1e-6)
    with torch.no_grad():
        ticks = torch.stack([m.encode_depth(frames[t]) for t in range(T)])
        assert torch.allclose(ticks, full, atol=1e-6)
        for p in m.backbone.parameters():
            p.add_(0.1)  # in place, as an optimizer step
        assert torch.allclose(m.encode_depth(frames[T - 1]), m.backbone(frames[T - 1]), atol=1e-6)
