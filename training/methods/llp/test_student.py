"""LLP's student: the height-scan decoder trains, and the export drops it into PHP's bundle contract."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import torch

from parkour_core.bundle import load_bundle
from parkour_core.runner import PolicyRunner
from training.envs.privileged import privileged_size
from training.export.parity import random_rollout
from training.methods.llp.student import (
    HEIGHT_SCAN,
    HEIGHT_SCAN_DIM,
    SIZES,
    EncodedGRU,
    build_llp_student,
    export_llp_student,
    reconstruction_loss,
    with_group,
)


def _fixed_batch(seed: int, steps: int = 4, batch: int = 8):
    """Sequences whose height scan is a step of height h seen in the depth image (a function of the input)."""
    g = torch.Generator().manual_seed(seed)
    model = build_llp_student(SIZES["tiny"], seed, privileged_size(), 3)
    obs = torch.randn(steps, batch, model.student.gru.input_size - 16, generator=g) * 0.1
    h = torch.rand(batch, generator=g) * 0.6 + 0.3  # step height per sequence, metres
    depth = torch.zeros(steps, batch, 58, 87)
    depth[:, :, 29:, :] = (h[None, :, None, None] - 0.6) * 2.0  # the step's rows in the (normalised) image
    privileged = torch.zeros(steps, batch, privileged_size())
    ramp = torch.linspace(0.0, 1.0, HEIGHT_SCAN_DIM)
    privileged[..., HEIGHT_SCAN] = 0.75 - h[None, :, None] * (ramp > 0.5)  # pelvis height over flat, then step
    starts = torch.zeros(steps, batch, dtype=torch.bool)
    starts[0] = True
    return model, obs, depth, privileged, starts


def test_the_height_scan_decoder_trains() -> None:
    model, obs, depth, privileged, starts = _fixed_batch(0)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

    def loss() -> torch.Tensor:
        _, states = model.sequence_with_hidden(obs, depth, model.initial_hidden(obs.shape[1]), starts)
        return reconstruction_loss(model.decode(states), privileged)

    start = float(loss().detach())
    for _ in range(60):
        optimizer.zero_grad()
        value = loss()
        value.backward()
        optimizer.step()
    end = float(loss().detach())
    print(f"reconstruction loss {start:.4f} -> {end:.4f}")
    assert end < 0.3 * start, (start, end)
    # It used the depth: the per-sequence scan variance is explained, not only the mean scan.
    scan = privileged[..., HEIGHT_SCAN]
    mean_only = float((scan - scan.mean(dim=(0, 1))).pow(2).mean())
    assert end < 0.5 * mean_only, (end, mean_only)


def test_the_student_is_mlp_gru_mlp_and_the_critic_reads_the_group() -> None:
    model = build_llp_student(SIZES["tiny"], 0, privileged_size(), 3)
    assert isinstance(model.student.gru, EncodedGRU)
    assert isinstance(model.student.gru.encoder[0][0], torch.nn.Linear)  # MLP before the GRU
    assert isinstance(model.student.mlp[-1], torch.nn.Linear)  # MLP after it
    p = torch.randn(4, privileged_size())
    v0, v2 = model.value(with_group(p, torch.zeros(4))), model.value(with_group(p, torch.full((4,), 2)))
    assert not torch.allclose(v0, v2)


def test_export_drops_the_decoder_and_the_bundle_runs_in_the_policy_runner(tmp_path: Path) -> None:
    model = build_llp_student(SIZES["tiny"], 1, privileged_size(), 3)
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
    decoder = sum(p.numel() for p in model.decoder.parameters())
    kept = sum(p.numel() for p in model.backbone.parameters()) + sum(p.numel() for p in model.student.parameters())
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
