"""`parkour model import`: rsl_rl + spec, holosoma's two G1 walkers and PHP's student pair, and every refusal.

The rsl_rl and PHP files are built here with torch the way their exporters write them (rsl_rl's
``export_policy_as_onnx``: input ``obs``, output ``actions``; PHP's ``wbt_training/utils/exporter.py``:
``depth_image`` -> ``depth_latent``, ``obs`` + ``time_step`` -> ``actions`` and six reference outputs,
comma-separated metadata): PHP's released files cannot be fetched here, so its importer is tested
on files made from that documented format. Each import is checked against the trainer's own network,
fed the observation restated here from the trainer's config, not through the importer's mapping.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from parkour_core.bundle import FORMAT_VERSION, BundleError, Manifest, ModelIO, load_bundle, write_manifest
from parkour_core.bundles import resolve_bundle, verify_bundle
from parkour_core.bundles.importers import ImportRefused, import_bundle
from parkour_core.bundles.importers.holosoma import NAMED
from parkour_core.bundles.importers.rsl_rl import EXAMPLES
from parkour_core.hashing import sha256_file
from parkour_core.math3d import projected_gravity
from parkour_core.obs import ObsTerm
from parkour_core.robots import G1
from parkour_core.runner import PolicyRunner, RobotState

try:
    import onnx  # noqa: F401  (the adapter needs it)
    import torch
except ImportError:  # a robot-only install has neither: it imports nothing, it runs bundles
    pytest.skip("torch and onnx build the exports here; a robot-only install has neither", allow_module_level=True)
# rsl_rl's and PHP's exporters use torch's TorchScript exporter, which torch marks as deprecated.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SPEC_29 = EXAMPLES / "isaaclab_g1_29dof_velocity.yaml"
SPEC_37 = EXAMPLES / "isaaclab_g1_velocity.yaml"


def _mlp(n_in: int, n_out: int, seed: int) -> torch.nn.Sequential:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(n_in, 64), torch.nn.ELU(), torch.nn.Linear(64, n_out))


class RslRlExport(torch.nn.Module):
    """rsl_rl's ONNX exporter: the actor behind the observation normalizer, input ``obs``, output ``actions``."""

    def __init__(self, n_obs: int, n_act: int, seed: int = 0) -> None:
        super().__init__()
        self.n_obs = n_obs
        self.actor = _mlp(n_obs, n_act, seed)
        gen = torch.Generator().manual_seed(seed + 1)
        self.mean = torch.nn.Buffer(torch.randn(n_obs, generator=gen) * 0.1)
        self.std = torch.nn.Buffer(torch.rand(n_obs, generator=gen) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.actor((x - self.mean) / (self.std + 1e-2))

    def export(self, path: Path) -> Path:
        torch.onnx.export(self.eval(), (torch.zeros(1, self.n_obs),), str(path), export_params=True, opset_version=17,
                          input_names=["obs"], output_names=["actions"], dynamic_axes={}, dynamo=False)  # fmt: skip
        return path


def isaac_29_default(name: str) -> float:
    """G1_29DOF_CFG.init_state.joint_pos, restated."""
    return {"hip_pitch": -0.10, "knee": 0.30, "ankle_pitch": -0.20}.get(
        next((k for k in ("hip_pitch", "knee", "ankle_pitch") if f"_{k}_joint" in name), ""), 0.0
    )


def random_state(rng: np.random.Generator) -> RobotState:
    quat = np.array([1.0, *rng.normal(0, 0.05, 3)])
    q, dq, gyro = G1.default_q + rng.normal(0, 0.1, 29), rng.normal(0, 0.5, 29), rng.normal(0, 0.3, 3)
    return RobotState(q, dq, quat / np.linalg.norm(quat), gyro)


def write_spec(tmp_path: Path, spec: dict, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def isaac(tmp_path_factory) -> tuple[Path, RslRlExport]:
    model = RslRlExport(96, 29)
    return model.export(tmp_path_factory.mktemp("isaac") / "policy.onnx"), model


@pytest.fixture(scope="module")
def isaac_bundle(isaac, tmp_path_factory) -> Path:
    return import_bundle("rsl_rl", str(isaac[0]), tmp_path_factory.mktemp("b") / "isaac_walk", spec=SPEC_29)


def test_isaac_lab_g1_29dof_import_verifies_and_runs_as_the_trainer_s_network(isaac_bundle, isaac):
    """The runtime's targets equal Isaac Lab's: its observation in its joint order, 0.5 x action + default."""
    _, model = isaac
    bundle, runner = verify_bundle(str(isaac_bundle))
    assert bundle.manifest_verified  # sealed, and within the bounds with its upper body at kp 3000-5000
    joints = yaml.safe_load(SPEC_29.read_text())["joints"]
    to_isaac = [G1.joint_names.index(j) for j in joints]
    default = np.array([isaac_29_default(j) for j in joints])
    np.testing.assert_allclose(bundle.manifest.default_joint_pos, default[np.argsort(to_isaac)])
    assert bundle.manifest.action_scale == 0.5 and bundle.manifest.obs_size == 96
    rng = np.random.default_rng(1)
    last = np.zeros(29)
    for _ in range(5):
        s, command = random_state(rng), rng.normal(0, 0.5, 3)
        obs = np.concatenate(
            [s.gyro, projected_gravity(s.quat_wxyz), command, s.q[to_isaac] - default, s.dq[to_isaac], last]
        )
        with torch.no_grad():
            action = model(torch.tensor(obs, dtype=torch.float32)[None])[0].numpy().astype(np.float64)
        expected = np.empty(29)
        expected[to_isaac] = default + 0.5 * action
        np.testing.assert_allclose(runner.step(s, command), expected, atol=1e-5)
        last = action
    record = bundle.manifest.provenance["import"]
    assert record["format"] == "rsl_rl" and record["trainer_joint_order"] == joints
    assert [t["name"] for t in record["observation"]["terms"]][:3] == ["base_ang_vel", "projected_gravity",
                                                                          "velocity_commands"]  # fmt: skip
    assert record["observation"]["terms"][0]["noise_free"] is False and record["observation"]["terms"][2]["noise_free"]
    assert any("reordered" in a for a in record["adapter"]) and record["assumed"]


def test_the_observation_clip_is_applied_before_the_scale_as_isaac_lab_does(isaac, tmp_path):
    spec = yaml.safe_load(SPEC_29.read_text())
    spec["observation"]["terms"][4].update(scale=0.05, clip=20.0)  # joint_vel: clip(dq, 20) x 0.05
    out = import_bundle("rsl_rl", str(isaac[0]), tmp_path / "b", spec=write_spec(tmp_path, spec))
    term = next(t for t in load_bundle(out).manifest.obs_terms if t.name == "dof_vel")
    assert (term.scale, term.clip) == (0.05, pytest.approx(1.0))


# ---------------------------------------------------------------------------------------------- holosoma


def former_g1_walk(out: Path) -> Path:
    """models/g1_walk as the hand-written adapter wrote it before the importer: the contract to keep."""
    from parkour_core.assets import resolve
    from parkour_core.bundles.importers.common import onnx_io

    source = resolve(NAMED["ppo"])
    _, _, meta = onnx_io(source)
    out.mkdir(parents=True)
    shutil.copyfile(source, out / "policy.onnx")
    terms = (ObsTerm("actions", 29), ObsTerm("base_ang_vel", 3, 0.25), ObsTerm("command_ang_vel", 1),
             ObsTerm("command_lin_vel", 2), ObsTerm("cos_phase", 2), ObsTerm("dof_pos", 29),
             ObsTerm("dof_vel", 29, 0.05), ObsTerm("projected_gravity", 3), ObsTerm("sin_phase", 2))  # fmt: skip
    write_manifest(out, Manifest(
        format_version=FORMAT_VERSION, name="g1_walk", robot="g1", joint_names=G1.joint_names,
        default_joint_pos=tuple(float(x) for x in G1.default_q), action_scale=0.25, action_clip=100.0,
        kp=tuple(json.loads(meta["kp"])), kd=tuple(json.loads(meta["kd"])), obs_terms=terms, policy_hz=50.0,
        policy=ModelIO("policy.onnx", {"obs": "actor_obs"}, {"action": "action"}),
        files={"policy.onnx": sha256_file(out / "policy.onnx")}, gait_period_s=1.0,
    ))  # fmt: skip
    return out


def test_holosoma_ppo_import_keeps_g1_walk_s_contract_and_actions(tmp_path):
    imported = load_bundle(import_bundle("holosoma", "ppo", tmp_path / "g1_walk"))
    former = load_bundle(former_g1_walk(tmp_path / "former"))
    a, b = imported.manifest.to_dict(), former.manifest.to_dict()
    provenance = a.pop("provenance")
    b.pop("provenance")
    assert a == b
    assert provenance["source_sha256"] == sha256_file(tmp_path / "g1_walk" / "policy.onnx")
    assert provenance["import"]["adapter"] == [] and provenance["import"]["format"] == "holosoma"
    assert imported.manifest_verified  # sealed as written: how `make setup` builds models/g1_walk
    ours, theirs = PolicyRunner(imported), PolicyRunner(former)
    rng = np.random.default_rng(2)
    for _ in range(100):
        s, command = random_state(rng), rng.uniform(-1, 1, 3)
        assert np.array_equal(ours.step(s, command), theirs.step(s, command))


def test_the_built_g1_walk_is_the_importer_s(g1_walk_dir, tmp_path):
    """`make setup` builds models/g1_walk with the importer: the same manifest, the same file."""
    fresh = load_bundle(import_bundle("holosoma", "ppo", tmp_path / "g1_walk")).manifest.to_dict()
    built = load_bundle(g1_walk_dir).manifest.to_dict()
    provenance = built.pop("provenance")
    assert provenance["import"]["format"] == "holosoma", "models/g1_walk predates the importer: run make setup"
    assert fresh.pop("provenance")["source_sha256"] == provenance["source_sha256"]
    assert fresh == built


def test_holosoma_fastsac_imports_through_the_same_importer(tmp_path):
    out = import_bundle("holosoma", "fastsac", tmp_path / "g1_walk_fastsac")
    bundle, runner = verify_bundle(str(out))
    ppo = PolicyRunner(load_bundle(import_bundle("holosoma", "ppo", tmp_path / "ppo")))
    assert bundle.manifest.provenance["trained_with"] == "holosoma FastSAC"
    assert bundle.manifest_verified
    assert bundle.manifest.obs_terms == ppo.manifest.obs_terms and bundle.manifest.kp == ppo.manifest.kp
    s = random_state(np.random.default_rng(3))
    a, b = runner.step(s, np.array([0.5, 0, 0])), ppo.step(s, np.array([0.5, 0, 0]))
    assert np.all(np.isfinite(a)) and not np.allclose(a, b)


def holosoma_like(path: Path, dof_names: list[str]) -> Path:
    """A holosoma-inference-format file: ``actor_obs`` -> ``action`` with its JSON metadata."""
    import onnx

    torch.onnx.export(_mlp(100, 29, 4).eval(), (torch.zeros(1, 100),), str(path), input_names=["actor_obs"],
                      output_names=["action"], opset_version=17, dynamo=False)  # fmt: skip
    model = onnx.load(str(path))
    for key, value in {"dof_names": dof_names, "kp": [40.0] * 29, "kd": [2.0] * 29}.items():
        model.metadata_props.add(key=key, value=json.dumps(value))
    onnx.save(model, str(path))
    return path


# ---------------------------------------------------------------------------------------------- PHP

PHP_REFERENCE = ("joint_pos", "joint_vel", "body_pos_w", "body_quat_w", "body_lin_vel_w", "body_ang_vel_w")
PHP_TERMS = ("actions", "base_ang_vel", "dof_pos", "dof_vel", "robot_anchor_projected_gravity", "velocity_command")
PHP_ACTOR = 29 + 3 + 29 + 29 + 3 + 15
PHP_SCALE = np.round(np.linspace(0.2, 0.6, 29), 3)


class PhpBackbone(torch.nn.Module):
    """A small depth CNN with PHP's interface: (B, 58, 87) -> (B, 32), the channel added inside."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(5)
        self.conv = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 5, stride=4), torch.nn.ELU(), torch.nn.Flatten())
        self.out = torch.nn.Linear(4 * 14 * 21, 32)

    def forward(self, depth: torch.Tensor) -> torch.Tensor:
        return self.out(self.conv(depth.unsqueeze(1)))


class PhpStudent(torch.nn.Module):
    """PHP's student exporter: the MLP on [actor terms, latent], and the first clip's references at time_step."""

    def __init__(self, clock: float = 0.0) -> None:
        super().__init__()
        self.clock = clock  # how much the actions read time_step (PHP's do not)
        self.actor = _mlp(PHP_ACTOR + 32, 29, 6)
        gen = torch.Generator().manual_seed(7)
        shapes = ((4, 29), (4, 29), (4, 2, 3), (4, 2, 4), (4, 2, 3), (4, 2, 3))
        for name, shape in zip(PHP_REFERENCE, shapes, strict=True):
            self.register_buffer(name, torch.randn(*shape, generator=gen))

    def forward(self, obs: torch.Tensor, time_step: torch.Tensor):
        ts = torch.clamp(time_step.long().squeeze(-1), max=3)
        return (self.actor(obs) + self.clock * time_step, *(getattr(self, name)[ts] for name in PHP_REFERENCE))


def php_csv(values) -> str:
    """PHP's ``_list_to_csv``: numbers with three decimals, names as they are."""
    return ",".join(f"{v:.3f}" if isinstance(v, int | float) else str(v) for v in values)


def php_pair(folder: Path, clock: float = 0.0, **metadata_changes) -> tuple[Path, PhpBackbone, PhpStudent]:
    import onnx

    folder.mkdir(parents=True, exist_ok=True)
    backbone, student = PhpBackbone().eval(), PhpStudent(clock).eval()
    torch.onnx.export(backbone, (torch.zeros(1, 58, 87),), str(folder / "depth_backbone.onnx"), opset_version=11,
                      input_names=["depth_image"], output_names=["depth_latent"], dynamo=False)  # fmt: skip
    torch.onnx.export(student, (torch.zeros(1, PHP_ACTOR + 32), torch.zeros(1, 1)), str(folder / "student.onnx"),
                      opset_version=11, input_names=["obs", "time_step"], output_names=["actions", *PHP_REFERENCE],
                      dynamic_axes={}, dynamo=False)  # fmt: skip
    metadata = {
        "run_path": "",
        "joint_names": list(G1.joint_names),
        "action_scale": [float(x) for x in PHP_SCALE],
        "default_joint_pos": [float(x) for x in G1.default_q],
        "joint_stiffness": [40.0] * 29, "joint_damping": [2.0] * 29, "kp": [40.0] * 29, "kd": [2.0] * 29,
        "command_names": ["motion_command"],
        "observation_names": [*PHP_TERMS, "placeholder"],
        "anchor_body_name": "pelvis",
        "body_names": ["pelvis", "torso_link"],
    } | metadata_changes  # fmt: skip
    model = onnx.load(str(folder / "student.onnx"))
    for key, value in metadata.items():
        if value is not None:
            model.metadata_props.add(key=key, value=php_csv(value) if isinstance(value, list) else str(value))
    onnx.save(model, str(folder / "student.onnx"))
    return folder, backbone, student


FORWARD = [1.0] + [0.0] * 14  # the one-hot the spec pins velocity_command to (its layout is not in the files)


@pytest.fixture(scope="module")
def php(tmp_path_factory):
    return php_pair(tmp_path_factory.mktemp("php") / "student")


def php_spec(tmp_path: Path) -> Path:
    return write_spec(tmp_path, {"observation": {"terms": [{"name": "velocity_command", "constant": FORWARD}]}})


def test_php_student_pair_imports_and_runs_as_php_s_network(php, tmp_path):
    folder, backbone, student = php
    out = import_bundle("php", str(folder), tmp_path / "php_student", spec=php_spec(tmp_path))
    bundle, runner = verify_bundle(str(out))
    m = bundle.manifest
    assert m.uses_depth and not m.recurrent and m.depth is not None and m.depth.latent_dim == 32
    assert m.action_scale == 1.0  # PHP's per-joint scale is folded into the model
    assert bundle.manifest_verified
    image = np.random.default_rng(8).uniform(0, 1, (58, 87)).astype(np.float32)
    runner.set_depth(image, stamp_s=0.0)
    with torch.no_grad():
        latent = backbone(torch.tensor(image)[None]).numpy()[0]
    rng, last = np.random.default_rng(9), np.zeros(29)
    for _ in range(4):
        s = random_state(rng)
        actor = np.concatenate([last, s.gyro, s.q - G1.default_q, s.dq, projected_gravity(s.quat_wxyz), FORWARD])
        with torch.no_grad():
            obs = torch.tensor(np.concatenate([actor, latent]), dtype=torch.float32)[None]
            action = student(obs, torch.zeros(1, 1))[0][0].numpy().astype(np.float64)
        np.testing.assert_allclose(runner.step(s, np.zeros(3)), G1.default_q + PHP_SCALE * action, atol=1e-5)
        last = action
    record = m.provenance["import"]
    assert record["observation"]["terms"][5]["constant"] == FORWARD
    assert any("time_step" in v for v in record["verified"]) and any("depth image" in a for a in record["assumed"])


def test_php_without_a_mapping_for_its_one_hot_command_is_refused(php, tmp_path):
    refused(lambda out: import_bundle("php", str(php[0]), out), tmp_path, "observation term 'velocity_command' "
            "maps to no parkour_core term")  # fmt: skip


def test_php_gravity_of_another_anchor_than_the_pelvis_is_refused(tmp_path):
    folder, _, _ = php_pair(tmp_path / "torso", anchor_body_name="torso_link")
    refused(lambda out: import_bundle("php", str(folder), out, spec=php_spec(tmp_path)), tmp_path,
            "observation term 'robot_anchor_projected_gravity' maps to no parkour_core term")  # fmt: skip


def test_php_student_action_depending_on_time_step_is_refused(tmp_path):
    folder, _, _ = php_pair(tmp_path / "clocked", clock=0.01)
    refused(lambda out: import_bundle("php", str(folder), out, spec=php_spec(tmp_path)), tmp_path,
            "student.onnx's actions depend on time_step, which the runtime does not feed")  # fmt: skip


# ---------------------------------------------------------------------------------------------- refusals


def refused(do, tmp_path: Path, words: str) -> str:
    """``do(out)`` is refused with one line holding ``words``, and writes nothing: no bundle to swap in."""
    out = tmp_path / "refused" / "bundle"
    with pytest.raises(ImportRefused) as e:
        do(out)
    message = str(e.value)
    assert words in message and "\n" not in message, message
    assert not (tmp_path / "refused").exists()
    with pytest.raises(BundleError):
        resolve_bundle(str(out))
    return message


def spec_without(tmp_path: Path, *path: str) -> Path:
    spec = yaml.safe_load(SPEC_29.read_text())
    d = spec
    for key in path[:-1]:
        d = d[key]
    del d[path[-1]]
    return write_spec(tmp_path, spec)


def test_refused_unknown_term(isaac, tmp_path):
    spec = yaml.safe_load(SPEC_29.read_text())
    spec["observation"]["terms"].insert(0, {"name": "base_lin_vel", "dims": 3})
    message = refused(lambda out: import_bundle("rsl_rl", str(isaac[0]), out, spec=write_spec(tmp_path, spec)),
                      tmp_path, "observation term 'base_lin_vel' maps to no parkour_core term")  # fmt: skip
    assert "maps_to:" in message and "constant:" in message


def test_refused_joint_order_mismatch(tmp_path):
    shuffled = list(G1.joint_names)
    shuffled[0], shuffled[1] = shuffled[1], shuffled[0]
    path = holosoma_like(tmp_path / "walk.onnx", shuffled)
    refused(lambda out: import_bundle("holosoma", str(path), out), tmp_path,
            "joint order: walk.onnx records 'left_hip_roll_joint' at position 0, the declaration "
            "'left_hip_pitch_joint'")  # fmt: skip


def test_refused_missing_default_pose(isaac, tmp_path):
    spec = spec_without(tmp_path, "default_joint_pos")
    refused(lambda out: import_bundle("rsl_rl", str(isaac[0]), out, spec=spec), tmp_path,
            "default_joint_pos is missing: supply the default pose")  # fmt: skip


def test_refused_missing_action_scale(isaac, tmp_path):
    spec = spec_without(tmp_path, "action", "scale")
    refused(lambda out: import_bundle("rsl_rl", str(isaac[0]), out, spec=spec), tmp_path,
            "action.scale is missing: supply the action scale")  # fmt: skip
    folder, _, _ = php_pair(tmp_path / "no_scale", action_scale=None)
    refused(lambda out: import_bundle("php", str(folder), out, spec=php_spec(tmp_path)), tmp_path,
            "action.scale is missing")  # fmt: skip


def test_refused_gains_and_scale_beyond_the_bundle_bounds(isaac, tmp_path):
    """The bounds every loaded bundle keeps (bundle.check_bounds) refuse the import too: nothing is written."""
    spec = yaml.safe_load(SPEC_29.read_text())
    spec["action"]["kp"][".*_(shoulder_.*|elbow|wrist_.*)_joint"] = 30000.0  # a zero too many
    refused(lambda out: import_bundle("rsl_rl", str(isaac[0]), out, spec=write_spec(tmp_path, spec)), tmp_path,
            "kp 30000 of left_shoulder_pitch_joint asks for its motor's peak 25 N m")  # fmt: skip
    spec = yaml.safe_load(SPEC_29.read_text())
    spec["action"]["scale"] = 5.0
    refused(lambda out: import_bundle("rsl_rl", str(isaac[0]), out, spec=write_spec(tmp_path, spec, "s.yaml")),
            tmp_path, "action_scale 5 moves left_ankle_roll_joint's target")  # fmt: skip


def test_refused_wrong_robot(isaac, tmp_path):
    spec = yaml.safe_load(SPEC_29.read_text()) | {"robot": "go2"}
    refused(lambda out: import_bundle("rsl_rl", str(isaac[0]), out, spec=write_spec(tmp_path, spec)), tmp_path,
            "robot 'go2' is not one this stack runs (g1, h1)")  # fmt: skip


def test_refused_dof_count_isaac_lab_s_stock_g1(tmp_path):
    """Isaac Lab's stock G1 task trains a 37-joint G1: its example spec is refused, as it says."""
    path = RslRlExport(123, 37).export(tmp_path / "policy.onnx")
    refused(lambda out: import_bundle("rsl_rl", str(path), out, spec=SPEC_37), tmp_path,
            "DoF count: the policy drives 37 joints, the g1 has 29")  # fmt: skip


def test_refused_history_and_a_model_of_other_sizes(isaac, tmp_path):
    spec = yaml.safe_load(SPEC_29.read_text())
    spec["observation"]["terms"][0]["history"] = 5
    refused(lambda out: import_bundle("rsl_rl", str(isaac[0]), out, spec=write_spec(tmp_path, spec, "h.yaml")),
            tmp_path, "stacks 5 frames of history")  # fmt: skip
    small = RslRlExport(90, 29).export(tmp_path / "small.onnx")
    refused(lambda out: import_bundle("rsl_rl", str(small), out, spec=SPEC_29), tmp_path,
            "the declared terms add up to 96 values, small.onnx's input 'obs' takes 90")  # fmt: skip


def test_a_refused_import_leaves_the_bundle_at_out_as_it_was(isaac, isaac_bundle, tmp_path):
    out = tmp_path / "walk"
    shutil.copytree(isaac_bundle, out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(ImportRefused):
        import_bundle("rsl_rl", str(isaac[0]), out, spec=spec_without(tmp_path, "action", "kp"))
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spec.yaml", "walk"]


def test_a_policy_that_fails_its_warm_up_is_refused_and_its_partial_bundle_removed(tmp_path):
    model = RslRlExport(96, 29)
    last = model.actor[2]
    assert isinstance(last, torch.nn.Linear)
    with torch.no_grad():
        last.bias[3] = float("nan")
    path = model.export(tmp_path / "policy.onnx")
    refused(lambda out: import_bundle("rsl_rl", str(path), out, spec=SPEC_29), tmp_path,
            "the policy outputs NaN/inf on a standing robot")  # fmt: skip


def test_the_docs_show_the_example_spec_as_the_file_holds_it(repo_root):
    assert f"```yaml\n{SPEC_29.read_text()}```" in (repo_root / "docs" / "byop.md").read_text()
