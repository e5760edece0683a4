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
