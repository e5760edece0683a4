"""The imported policies the policy bench times: each through ``import_bundle``, as a user's would be.

``g1_walk``: models/g1_walk, holosoma-inference's PPO walker (``make setup`` imports it); ``g1_walk_fastsac``:
its FastSAC sibling from the same wheel; ``php_format``: a depth student pair in PHP's exporter format
(``depth_image`` -> ``depth_latent``; ``obs`` + ``time_step`` -> ``actions`` and six reference outputs;
comma-separated metadata) built here with torch, since PHP's released files cannot be fetched: small
random networks with PHP's interface, not PHP's sizes or weights; ``rsl_rl_isaaclab``: an MLP exported as
rsl_rl's ``export_policy_as_onnx`` writes it, with the Isaac Lab G1 29-DoF example spec. More with
``--import FORMAT:SRC[:SPEC]`` (any format ``parkour model import`` reads, mjlab's included).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from parkour_core.bundle import Bundle, load_bundle
from parkour_core.bundles.importers import import_bundle
from parkour_core.bundles.importers.rsl_rl import EXAMPLES
from parkour_core.robots import G1

RSL_RL_SPEC = EXAMPLES / "isaaclab_g1_29dof_velocity.yaml"
PHP_TERMS = ("actions", "base_ang_vel", "dof_pos", "dof_vel", "robot_anchor_projected_gravity", "velocity_command")
PHP_ACTOR = 29 + 3 + 29 + 29 + 3 + 15  # its actor terms' widths, the one-hot command's 15 last
PHP_LATENT = 32
PHP_FORWARD = [1.0] + [0.0] * 14  # the one-hot the import spec pins velocity_command to


@dataclass
class Imported:
    bundle: Bundle
    format: str
    source: str  # where the file came from, in words


def imported_bundles(root: Path, work: Path, extra: list[str]) -> tuple[dict[str, Imported], dict[str, str]]:
    """Every imported policy this machine can make: name -> bundle, and name -> why one was skipped.

    ``work``: a folder for the files built and the bundles imported here (emptied first).
    """
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    found: dict[str, Imported] = {}
    skipped: dict[str, str] = {}
    g1_walk = root / "models" / "g1_walk"
    if (g1_walk / "manifest.json").is_file():
        found["g1_walk"] = Imported(load_bundle(g1_walk), "holosoma", "models/g1_walk: holosoma-inference's PPO walker")
    else:
        skipped["g1_walk"] = "models/g1_walk is missing: make setup imports it"

    def attempt(name: str, fmt: str, source: str, make) -> None:
        try:
            src, spec = make()
            found[name] = Imported(load_bundle(import_bundle(fmt, str(src), work / name, spec=spec)), fmt, source)
        except Exception as e:  # a refused import, no torch or onnx, the wheel missing: noted, the rest timed
            skipped[name] = f"{type(e).__name__}: {e}"

    attempt("g1_walk_fastsac", "holosoma", "holosoma-inference's FastSAC walker (fastsac_g1_29dof.onnx)",
            lambda: ("fastsac", None))  # fmt: skip
    attempt("php_format", "php", "built here in PHP's exporter format: random weights, not PHP's files",
            lambda: (php_format_pair(work / "php_src"), php_spec(work)))  # fmt: skip
    attempt("rsl_rl_isaaclab", "rsl_rl", "built here as rsl_rl's export_policy_as_onnx writes it: random weights",
            lambda: (rsl_rl_export(work / "rsl_rl_src" / "policy.onnx"), RSL_RL_SPEC))  # fmt: skip
    for k, item in enumerate(extra):
        fmt, _, rest = item.partition(":")
        src, _, spec = rest.partition(":")
        attempt(f"{fmt}_{k}" if fmt in found else fmt, fmt, f"--import {item}",
                lambda src=src, spec=spec: (src, Path(spec) if spec else None))  # fmt: skip
    return found, skipped


def _mlp(n_in: int, n_out: int, seed: int):
    import torch

    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(n_in, 64), torch.nn.ELU(), torch.nn.Linear(64, n_out))


def rsl_rl_export(path: Path) -> Path:
    """An actor behind an observation normaliser, input ``obs`` [1, 96], output ``actions`` [1, 29]."""
    import torch

    class Export(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.actor = _mlp(96, 29, 0)
            gen = torch.Generator().manual_seed(1)
            self.mean = torch.nn.Buffer(torch.randn(96, generator=gen) * 0.1)
            self.std = torch.nn.Buffer(torch.rand(96, generator=gen) + 0.5)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.actor((x - self.mean) / (self.std + 1e-2))

    path.parent.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(Export().eval(), (torch.zeros(1, 96),), str(path), export_params=True, opset_version=17,
                      input_names=["obs"], output_names=["actions"], dynamic_axes={}, dynamo=False)  # fmt: skip
    return path


def php_format_pair(folder: Path) -> Path:
    """``depth_backbone.onnx`` + ``student.onnx`` with PHP's names, shapes and metadata."""
    import onnx
    import torch

    class Backbone(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            torch.manual_seed(5)
            self.conv = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 5, stride=4), torch.nn.ELU(), torch.nn.Flatten())
            self.out = torch.nn.Linear(4 * 14 * 21, PHP_LATENT)

        def forward(self, depth: torch.Tensor) -> torch.Tensor:
            return self.out(self.conv(depth.unsqueeze(1)))

    reference = ("joint_pos", "joint_vel", "body_pos_w", "body_quat_w", "body_lin_vel_w", "body_ang_vel_w")

    class Student(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.actor = _mlp(PHP_ACTOR + PHP_LATENT, 29, 6)
            gen = torch.Generator().manual_seed(7)
            shapes = ((4, 29), (4, 29), (4, 2, 3), (4, 2, 4), (4, 2, 3), (4, 2, 3))
            for name, shape in zip(reference, shapes, strict=True):
                self.register_buffer(name, torch.randn(*shape, generator=gen))

        def forward(self, obs: torch.Tensor, time_step: torch.Tensor):
            ts = torch.clamp(time_step.long().squeeze(-1), max=3)
            return (self.actor(obs), *(getattr(self, name)[ts] for name in reference))

    folder.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(Backbone().eval(), (torch.zeros(1, 58, 87),), str(folder / "depth_backbone.onnx"),
                      opset_version=11, input_names=["depth_image"], output_names=["depth_latent"],
                      dynamo=False)  # fmt: skip
    torch.onnx.export(Student().eval(), (torch.zeros(1, PHP_ACTOR + PHP_LATENT), torch.zeros(1, 1)),
                      str(folder / "student.onnx"), opset_version=11, input_names=["obs", "time_step"],
                      output_names=["actions", *reference], dynamic_axes={}, dynamo=False)  # fmt: skip
    scale = np.round(np.linspace(0.2, 0.6, 29), 3)
    metadata = {
        "run_path": "", "joint_names": list(G1.joint_names), "action_scale": [float(x) for x in scale],
        "default_joint_pos": [float(x) for x in G1.default_q], "joint_stiffness": [40.0] * 29,
        "joint_damping": [2.0] * 29, "kp": [40.0] * 29, "kd": [2.0] * 29, "command_names": ["motion_command"],
        "observation_names": [*PHP_TERMS, "placeholder"], "anchor_body_name": "pelvis",
        "body_names": ["pelvis", "torso_link"],
    }  # fmt: skip
    model = onnx.load(str(folder / "student.onnx"))
    for key, value in metadata.items():
        model.metadata_props.add(key=key, value=_php_csv(value) if isinstance(value, list) else str(value))
    onnx.save(model, str(folder / "student.onnx"))
    return folder


def _php_csv(values: list) -> str:
    """PHP's ``_list_to_csv``: numbers with three decimals, names as they are."""
    return ",".join(f"{v:.3f}" if isinstance(v, int | float) else str(v) for v in values)


def php_spec(work: Path) -> Path:
    """The import spec PHP's files need: the one-hot ``velocity_command`` held at walking forward."""
    import yaml

    path = work / "php_spec.yaml"
    terms = [{"name": "velocity_command", "constant": PHP_FORWARD}]
    path.write_text(yaml.safe_dump({"observation": {"terms": terms}}))
    return path
