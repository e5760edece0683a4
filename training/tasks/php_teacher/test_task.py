"""The php_teacher task through the one runner, at test size (about half a minute)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from training.rl.train import train
from training.tasks.php_teacher.task import load_teacher


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("php_teacher")
    return out, train("php_teacher_tiny", out)


def test_every_iteration_has_a_row_and_the_curve_is_written(tiny):
    out, result = tiny
    rows = result["iterations"]
    assert [r["iteration"] for r in rows] == [0, 1, 2]
    assert all(np.isfinite(r["episode_return"]) and np.isfinite(r["tracking_error_m"]) for r in rows)
    assert len((out / "curve.jsonl").read_text().splitlines()) == 3 and (out / "curves.png").is_file()


def test_the_adaptive_sampler_is_told_where_episodes_failed(tiny):
    """Failed episodes move start probability onto their bins (uniform would mean it heard nothing)."""
    _, result = tiny
    p = np.array(result["start_sampler_probabilities"])
    assert p.sum() == pytest.approx(1.0) and p.max() > p.min()
    assert sum(r["episodes"] for r in result["iterations"]) > 0


def test_the_saved_teacher_labels_with_the_trained_actor_s_mean_action(tiny):
    """Normalizer, MLP, no noise: the checkpoint's actor computed by hand on the same observations."""
    out, result = tiny
    teacher = load_teacher(Path(result["teacher"]))
    actor = torch.load(out / "model_latest.pt", map_location="cpu", weights_only=False)["actor_state_dict"]
    obs = torch.randn(5, actor["mlp.0.weight"].shape[1], generator=torch.Generator().manual_seed(0))
    x = (obs - actor["obs_normalizer._mean"]) / (actor["obs_normalizer._std"] + 1e-2)
    for i in (0, 2):
        x = torch.nn.functional.elu(x @ actor[f"mlp.{i}.weight"].T + actor[f"mlp.{i}.bias"])
    expected = x @ actor["mlp.4.weight"].T + actor["mlp.4.bias"]
    assert torch.allclose(teacher.act_inference(obs), expected, atol=1e-5)
