import pytest

from parkour_core.nodeargs import parse_node_args
from parkour_core.paths import config_dir

ROBOT = str(config_dir() / "g1_robot.yaml")


def test_domain_and_interface_from_the_command_line_override_the_config():
    args = parse_node_args("", ["--config", ROBOT, "--domain", "1", "--iface", "enp3s0"])
    assert args.config.dds.domain == 1 and args.config.dds.interface == "enp3s0"


def test_empty_domain_and_interface_keep_the_config_s():
    """A launch file passes domain:= and iface:= through, empty when not given."""
    args = parse_node_args("", ["--config", ROBOT, "--domain", "", "--iface", ""])
    assert args.config.dds.domain == 0 and args.config.dds.interface == "eth0"


@pytest.mark.parametrize("domain", ["one", "1.5"])
def test_a_domain_that_is_not_an_integer_is_refused(domain):
    with pytest.raises(SystemExit, match="--domain must be an integer"):
        parse_node_args("", ["--config", ROBOT, "--domain", domain])


def test_a_domain_out_of_range_is_a_config_error():
    with pytest.raises(SystemExit, match="bad config"):
        parse_node_args("", ["--config", ROBOT, "--domain", "500"])


def test_a_node_given_a_stack_config_runs_on_its_own_keys_only():
    """As from a params file: the supervisor has the robot's safety limits, and the simulator's scene (not one of
    its keys) at the default."""
    from parkour_core.config import load_config

    args = parse_node_args("", ["--config", ROBOT], "supervisor")
    robot = load_config(ROBOT)
    assert args.config.supervisor == robot.supervisor and args.config.dds == robot.dds
    assert args.config.teleop.max_vx_mps == 1.0 and args.config_path is not None


def test_a_params_file_is_the_node_s_config_and_rclpy_s(tmp_path):
    from parkour_core import params
    from parkour_core.config import load_config

    path = params.write_params_file(load_config(ROBOT, {"teleop.max_vx_mps": 0.8}), tmp_path / "params.yaml")
    args = parse_node_args("", ["--params", str(path), "--iface", "enp3s0", "--ros-args", "-p", "x:=1"], "teleop")
    assert args.config.teleop.max_vx_mps == 0.8 and args.config_path is None
    assert args.ros_args == ["--params-file", str(path), "--ros-args", "-p", "x:=1"]
    sup = parse_node_args("", ["--params", str(path), "--iface", "enp3s0", "--domain", "3"], "supervisor")
    assert (sup.config.dds.interface, sup.config.dds.domain) == ("enp3s0", 3)


def test_a_node_needs_a_params_file_or_a_stack_config(capsys):
    with pytest.raises(SystemExit):
        parse_node_args("", [], "supervisor")
    assert "give --params FILE" in capsys.readouterr().err


def test_a_bad_params_file_is_one_line(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("/**/supervisor_node:\n  ros__parameters: {supervisor.rate_hz: 5.0}\n")
    with pytest.raises(SystemExit, match=r"bad config: .*params\.yaml: supervisor_node: supervisor\.rate_hz: 5\.0 is "):
        parse_node_args("", ["--params", str(path)], "supervisor")
