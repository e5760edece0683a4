import json
import shutil

import pytest

from parkour_bringup.cli import main
from parkour_core.bundles import resolve_bundle
from parkour_core.paths import config_dir


def test_config_check_accepts_the_shipped_configs(capsys):
    assert main(["config", str(config_dir() / "g1_sim.yaml")]) == 0
    assert main(["config", str(config_dir() / "g1_robot.yaml")]) == 0
    assert "OK" in capsys.readouterr().out


def test_config_check_names_the_bad_key(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("robot: g1\npolicy:\n  intra_op_threads: 0\n")
    assert main(["config", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "policy.intra_op_threads" in err and len(err.strip().splitlines()) == 1


def test_config_check_gives_a_yaml_error_as_one_line_naming_the_file(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("robot: g1\nmode: sim: robot\n")
    assert main(["config", str(bad)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"parkour config: error: {bad}:2:10: not valid YAML: mapping values are not allowed here"]


def test_model_verify_and_inspect(capsys):
    assert main(["model", "verify", "g1_walk"]) == 0
    assert main(["model", "inspect", "g1_walk"]) == 0
    out = capsys.readouterr().out
    info = json.loads(out[out.index("{") :])
    assert info["obs_size"] == 100
    assert info["observation"][0].startswith("actions[29]")


@pytest.mark.parametrize("sealed", [True, False], ids=["sealed", "unsealed"])
def test_model_verify_and_inspect_say_whether_the_manifest_is_sealed(tmp_path, capsys, sealed):
    """An unsealed bundle still verifies (it runs), and both verbs say it is unsealed."""
    bundle = tmp_path / "g1_walk"
    shutil.copytree(resolve_bundle("g1_walk"), bundle)
    if not sealed:
        (bundle / "manifest.sha256").unlink()
    assert main(["model", "verify", str(bundle)]) == 0
    verified = capsys.readouterr().out
    assert ("manifest sealed" in verified) is sealed, verified
    assert ("manifest unsealed (no manifest.sha256)" in verified) is not sealed, verified
    assert main(["model", "inspect", str(bundle)]) == 0
    out = capsys.readouterr().out
    assert json.loads(out[out.index("{") :])["manifest_verified"] is sealed


def test_model_verify_checks_the_bundle_against_the_robot_given(capsys):
    assert main(["model", "verify", "g1_walk", "--robot", "g1"]) == 0
    assert main(["model", "verify", "g1_walk", "--robot", "h1"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "trained for robot 'g1', but this is a 'h1'" in err[0]


def test_model_verify_fails_on_a_missing_file(tmp_path, capsys):
    bundle = tmp_path / "b"
    shutil.copytree(resolve_bundle("g1_walk"), bundle)
    (bundle / "policy.onnx").unlink()
    assert main(["model", "verify", str(bundle)]) == 1
    assert "missing" in capsys.readouterr().err


def test_model_import_writes_a_bundle_that_verifies(tmp_path, capsys):
    out = tmp_path / "g1_walk_fastsac"
    assert main(["model", "import", "holosoma", "fastsac", "--out", str(out)]) == 0
    assert main(["model", "verify", str(out)]) == 0
    text = capsys.readouterr().out
    assert "wrote bundle g1_walk_fastsac" in text and "imported from holosoma" in text


def test_model_import_refuses_in_one_line_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "new" / "bundle"
    policy = resolve_bundle("g1_walk") / "policy.onnx"
    assert main(["model", "import", "rsl_rl", str(policy), "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("parkour model: error: an rsl_rl export records no robot"), err
    assert not (tmp_path / "new").exists()


def test_robot_refuses_a_config_of_the_other_robot(capsys, tmp_path):
    code = main(["robot", "--robot", "h1", "--iface", "lo", "--config", str(config_dir() / "g1_robot.yaml"),
                 "--out", str(tmp_path / "run")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1 and "config for the g1, not the h1" in err
    assert not (tmp_path / "run").exists()
    assert main(["config", str(config_dir() / "h1_robot.yaml")]) == 0


def test_robot_refuses_an_interface_this_machine_does_not_have_before_anything_starts(capsys, tmp_path):
    import socket

    code = main(["robot", "--iface", "nope0", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err.strip().splitlines()
    names = ", ".join(n for _, n in socket.if_nameindex())
    assert code == 1 and err == [
        f"parkour robot: error: --iface nope0: no such network interface here; this machine "
        f"has {names} (the one wired to the robot; lo for a simulator on this machine)"
    ], err
    assert "lo" in names
    assert not (tmp_path / "run").exists()


def _sim_refuses(capsys, tmp_path, *args):
    """`parkour sim ARGS` exits 1 with one line on stderr, before a run folder exists; that line."""
    code = main(["sim", *args, "--duration", "1", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1, err
    assert not (tmp_path / "run").exists()
    return err[0]


def test_sim_refuses_a_bundle_that_would_not_load_before_anything_starts(capsys, tmp_path):
    line = _sim_refuses(capsys, tmp_path, "--bundle", "nope")
    assert line.startswith("parkour sim: error: --bundle nope: 'nope' is neither a bundle folder nor a registered "
                           "bundle (registered: "), line  # fmt: skip
    line = _sim_refuses(capsys, tmp_path, "--robot", "h1", "--bundle", "g1_walk")
    assert line == ("parkour sim: error: --bundle g1_walk: bundle 'g1_walk' was trained for robot 'g1', but this is "
                    "a 'h1'; use a h1 bundle"), line  # fmt: skip
    broken = tmp_path / "broken"
    shutil.copytree(resolve_bundle("g1_walk"), broken)
    (broken / "policy.onnx").unlink()
    line = _sim_refuses(capsys, tmp_path, "--bundle", str(broken))
    assert line.startswith(f"parkour sim: error: --bundle {broken}: bundle 'g1_walk': file policy.onnx"), line


def test_sim_refuses_a_namespace_ros_would_not_take(capsys, tmp_path):
    line = _sim_refuses(capsys, tmp_path, "--namespace", "robot-1")
    assert line == ("parkour sim: error: --namespace robot-1: expected names of letters, digits and _ separated "
                    "by /, e.g. robot1"), line  # fmt: skip


def test_sim_names_the_config_key_of_a_bad_bundle_it_did_not_get_as_an_option(capsys, tmp_path):
    import yaml

    cfg = yaml.safe_load((config_dir() / "g1_sim.yaml").read_text())
    cfg["policy"]["bundle"] = "nope"
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    line = _sim_refuses(capsys, tmp_path, "--config", str(path))
    assert line.startswith(f"parkour sim: error: {path}: policy.bundle: 'nope' is neither a bundle folder"), line


def test_sim_refuses_a_robot_model_the_robot_has_not_by_name(capsys, tmp_path):
    line = _sim_refuses(capsys, tmp_path, "--robot", "h1", "--robot-model", "mjlab")
    known = "known: ['unitree', 'simplified']"
    assert line == f"parkour sim: error: --robot-model mjlab: the h1 has no model 'mjlab'; {known}", line


def test_sim_refuses_cuda_providers_where_onnxruntime_has_no_cuda(capsys, tmp_path):
    """The policy node would refuse them at startup; refused here first, with what to do."""
    import onnxruntime as ort
    import yaml

    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("this onnxruntime has CUDA")
    config = yaml.safe_load((config_dir() / "g1_sim.yaml").read_text())
    config.setdefault("policy", {})["providers"] = "cuda"
    path = tmp_path / "cuda.yaml"
    path.write_text(yaml.safe_dump(config))
    line = _sim_refuses(capsys, tmp_path, "--config", str(path))
    assert line.startswith(
        f"parkour sim: error: {path}: policy.providers is 'cuda' but this onnxruntime offers only "
    ), line
    assert line.endswith("or set policy.providers to auto or cpu"), line


def test_sim_names_the_script_file_a_bad_step_is_in(capsys, tmp_path):
    script = tmp_path / "bad.yaml"
    script.write_text("steps:\n  - {at_s: 1.0, request: stand_up}\n  - {at_s: 2.0, request: jump}\n")
    line = _sim_refuses(capsys, tmp_path, "--script", str(script))
    assert line.startswith(f"parkour sim: error: --script {script}: steps[1].request: 'jump' is not one of ["), line
    script.write_text("steps:\n  - {at_s: 1.0, request: stand_up\n")
    line = _sim_refuses(capsys, tmp_path, "--script", str(script))
    assert line.startswith(f"parkour sim: error: --script {script}:3:1: not valid YAML: "), line


def test_sim_refuses_keyboard_teleop_without_a_terminal_before_anything_starts(tmp_path):
    """The keyboard teleop node reads the terminal it inherits; with none it would fail once the graph is up."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "parkour_bringup.cli", "sim", "--teleop", "keyboard", "--out", str(tmp_path / "run")],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1 and proc.stderr.strip().splitlines() == [
        "parkour sim: error: --teleop keyboard reads the keys from this terminal, and stdin is not a terminal; run it "
        "in one, or drive with --teleop gamepad or --teleop joy"
    ], proc.stdout + proc.stderr  # fmt: skip
    assert not (tmp_path / "run").exists()


def test_sim_refuses_a_unitree_like_bridge_and_says_what_drives_one(capsys, tmp_path):
    """Its lowstate has no tick, by which parkour sim's nodes age lowstate: they would damp at once."""
    import yaml

    cfg = yaml.safe_load((config_dir() / "g1_sim.yaml").read_text())
    cfg["bridge"]["peer"] = "unitree_sim"
    path = tmp_path / "unitree_like.yaml"
    path.write_text(yaml.safe_dump(cfg))
    code = main(["sim", "--config", str(path), "--duration", "1", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 1 and "bridge.peer unitree_sim" in err and "parkour robot --iface lo" in err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("scene", "message"),
    [
        ("nope", "scene 'nope' not found (known scenes: "),
        ("boxes: [{pos: [1, 0], half_size: [0.4, 1.5, 0.05]}]", "boxes[0].pos must be 3 numbers"),
        ("boxes: [{pos: [1, 0, 0.05], half_size: [0.4, -1, 0.05]}]", "boxes[0].half_size must be 3 positive"),
        ("boxes: {pos: 1}", "boxes must be a list"),
        ("floor_friction: slippery", "floor_friction must be a number"),
        ("boxes: [{pos: [1, 0, 0.05]\n", "not valid YAML"),
        ("- just\n- a list", "expected a mapping"),
    ],
)
def test_sim_refuses_a_bad_scene_in_one_line_before_anything_starts(capsys, tmp_path, scene, message):
    if scene != "nope":
        (tmp_path / "bad.yaml").write_text(scene)
        scene = str(tmp_path / "bad.yaml")
    code = main(["sim", "--scene", scene, "--duration", "1", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and message in err[0], err
    assert not (tmp_path / "run").exists()


XBOX = ["A", "B", "X", "Y", "LB", "RB", "Back", "Start"]  # the normalised /teleop/joy order


def test_the_robot_help_gives_the_chords_the_robot_config_has():
    """`parkour robot --help` walks the operator through the gantry procedure with these chords."""
    from parkour_bringup.commands import robot_cmd
    from parkour_core.config import load_config
    from parkour_core.paths import config_dir

    cfg = load_config(config_dir() / "g1_robot.yaml")
    s = cfg.supervisor

    def pad(buttons):
        return "+".join(XBOX[b] for b in buttons)

    doc = " ".join(robot_cmd.__doc__.split())
    assert (
        f"Stand up on the gantry: remote {'+'.join(s.remote_stand_up_keys)}, gamepad {pad(s.gamepad_stand_up_buttons)}"
        in doc
    )
    assert (
        f"Activate on the gantry: remote {'+'.join(s.remote_activate_keys)}, gamepad {pad(s.gamepad_activate_buttons)}"
        in doc
    )
    assert f"Stop walking: remote {'+'.join(s.remote_stand_keys)}, gamepad {pad(s.gamepad_stand_buttons)}" in doc
    assert f"Damp: gamepad {pad(cfg.teleop.damp_buttons)}" in doc
    assert f"E-stop at any time: remote {'+'.join(s.remote_estop_keys)}, gamepad {pad(s.gamepad_estop_buttons)}" in doc
    steps = [doc.index(w) for w in ("Stand up on the gantry", "Activate on the gantry", "Lower the gantry", "Walk:")]
    assert steps == sorted(steps)
