"""LLP's student: the height-scan decoder trains, and the export drops it into PHP's bundle contract."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import torch
from tensordict import TensorDict

from parkour_core.bundle import load_bundle
from parkour_core.obs import observation_size
from parkour_core.runner import PolicyRunner
from training.envs.privileged import privileged_size
from training.export.parity import random_rollout
from training.export.student import STUDENT_OBS_TERMS
from training.methods.llp.student import HEIGHT_SCAN, HEIGHT_SCAN_DIM, EncodedGRU, LLPModel, export_llp_student

OBS = observation_size(STUDENT_OBS_TERMS)
TINY = {
    "hidden_dims": [32, 16], "rnn_hidden_dim": 16, "conv_channels": [4, 8], "backbone_hidden": 16, "latent_dim": 16,
    "encoder_hidden": [32], "encoder_out": 32, "decoder_hidden": [32],
}  # fmt: skip


def _model(seed: int, batch: int = 8) -> LLPModel:
    torch.manual_seed(seed)
    obs = TensorDict(
        {"policy": torch.zeros(batch, OBS), "depth": torch.zeros(batch, 58, 87),
         "privileged": torch.zeros(batch, privileged_size())},
        batch_size=[batch],
    )  # fmt: skip
    return LLPModel(obs, {"actor": ["policy", "depth"]}, "actor", 29, **TINY)


def _fixed_batch(seed: int, steps: int = 4, batch: int = 8) -> tuple[TensorDict, torch.Tensor]:
    """Sequences whose height scan is a step of height h seen in the depth image (a function of the input)."""
    g = torch.Generator().manual_seed(seed)
    h = torch.rand(batch, generator=g) * 0.6 + 0.3  # step height per sequence, metres
    depth = torch.zeros(steps, batch, 58, 87)
    depth[:, :, 29:, :] = (h[None, :, None, None] - 0.6) * 2.0  # the step's rows in the (normalised) image
    privileged = torch.zeros(steps, batch, privileged_size())
    ramp = torch.linspace(0.0, 1.0, HEIGHT_SCAN_DIM)
    privileged[..., HEIGHT_SCAN] = 0.75 - h[None, :, None] * (ramp > 0.5)  # pelvis height over flat, then step
    obs = TensorDict(
        {"policy": torch.randn(steps, batch, OBS, generator=g) * 0.1, "depth": depth, "privileged": privileged},
        batch_size=[steps, batch],
    )
    return obs, torch.ones(steps, batch, dtype=torch.bool)  # whole trajectories (rsl_rl's masks)


def test_the_height_scan_decoder_trains_from_the_gru_states_of_the_update() -> None:
    model = _model(0)
    obs, masks = _fixed_batch(0)
    hidden = torch.zeros(1, 8, 16)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

    def loss() -> torch.Tensor:
        model.get_latent(obs, masks, hidden)  # the update's forward pass: padded trajectories with masks
        return model.auxiliary_losses(obs, masks)["reconstruction"]

    start = float(loss().detach())
    for _ in range(60):
        optimizer.zero_grad()
        value = loss()
        value.backward()
        optimizer.step()
    end = float(loss().detach())
    assert end < 0.3 * start, (start, end)
    # It used the depth: the per-sequence scan variance is explained, not only the mean scan.
    scan = obs["privileged"][..., HEIGHT_SCAN]
    mean_only = float((scan - scan.mean(dim=(0, 1))).pow(2).mean())
    assert end < 0.5 * mean_only, (end, mean_only)


def test_the_student_is_mlp_gru_mlp_and_the_bundle_pair_shares_its_weights() -> None:
    model = _model(0)
    backbone, student = model.bundle_pair()
    assert isinstance(student.gru, EncodedGRU)
    assert isinstance(student.gru.encoder[0][0], torch.nn.Linear)  # MLP before the GRU
    assert isinstance(student.mlp[-1], torch.nn.Linear)  # MLP after it
    assert student.gru.encoder is model.encoder and student.gru.gru is model.rnn.rnn and backbone is model.backbone
    # One tick of the pair is the model's own mean action.
    obs = TensorDict({"policy": torch.randn(3, OBS), "depth": torch.rand(3, 58, 87)}, batch_size=[3])
    model.reset()
    with torch.no_grad():
        mean = model(obs)
        pair, _ = student(obs["policy"], backbone(obs["depth"]), torch.zeros(1, 3, 16))
    torch.testing.assert_close(pair, mean)


def test_export_drops_the_decoder_and_the_bundle_runs_in_the_policy_runner(tmp_path: Path) -> None:
    model = _model(1)
    bundle_dir = export_llp_student(model, tmp_path / "bundle", "llp_test", {}, (0.03, 0.06), 30.0, precision="fp32")
    manifest = json.loads((bundle_dir / "manifest.json").read_text())
    assert manifest["depth"]["latency_s"] == [0.03, 0.06]
    assert "height_scan_decoder" in manifest["provenance"]["dropped_at_export"]
    assert sorted(p.name for p in bundle_dir.glob("*.onnx")) == ["depth_backbone.onnx", "student.onnx"]
    # No decoder in the graphs: the ONNX weights are exactly the backbone's and the student's parameters.
    exported = sum(
        int(np.prod(t.dims))
        for f in ("depth_backbone.onnx", "student.onnx")
        for t in onnx.load(bundle_dir / f).graph.initializer
    )
    backbone, student = model.bundle_pair()
    decoder = sum(p.numel() for p in model.decoder.parameters())
    kept = sum(p.numel() for p in backbone.parameters()) + sum(p.numel() for p in student.parameters())
    assert exported < kept + decoder and abs(exported - kept) <= 64  # ONNX may add a few shape constants
    outputs = [o.name for o in onnx.load(bundle_dir / "student.onnx").graph.output]
    assert outputs == ["action", "hidden_out"]
    bundle = load_bundle(bundle_dir)
    runner = PolicyRunner(bundle)
    rollout = random_rollout(bundle.manifest, 5, seed=0)
    runner.reset()
    for k in range(5):
        frame = rollout.depth_frames[k]
        if frame is not None:
            runner.set_depth(frame, stamp_s=k * 0.02)
        targets = runner.step(rollout.states[k], rollout.commands[k])
        assert targets.shape == (29,) and np.all(np.isfinite(targets))
    checks = bundle.manifest.provenance["checks"]
    assert checks["fp32_onnx_vs_torch"]["max_action_error"] <= checks["fp32_onnx_vs_torch"]["tolerance"]
