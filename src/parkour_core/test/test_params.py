"""Each node's ROS parameters from the config's declarations: what they are, and a real node's services."""

from __future__ import annotations

import dataclasses
import time

import pytest

from parkour_core import params
from parkour_core.config import ConfigError, load_config
from parkour_core.domains import claim_domains
from parkour_core.paths import config_dir

_DOMAINS = claim_domains()  # held while the tests run: no other graph or test run takes it
CONFIGS = ("g1_robot.yaml", "g1_sim.yaml", "h1_robot.yaml", "h1_sim.yaml")
SAFETY_LIMITS = ("supervisor.max_tilt_rad", "supervisor.joint_limit_tolerance_rad",
                 "supervisor.velocity_limit_factor", "supervisor.lowstate_timeout_s", "dds.domain")  # fmt: skip


@pytest.mark.parametrize("node_key", sorted(params.NODE_PARAMS))
def test_every_parameter_has_a_ros_type_and_the_config_doc(node_key: str) -> None:
    specs = params.specs(node_key)
    assert specs and len({s.name for s in specs}) == len(specs)
    for s in specs:
        assert s.ros_type in params.ROS_TYPES, s
        assert (s.lo is None) == (s.hi is None), s


def test_safety_limits_and_the_dds_domain_are_read_only() -> None:
    by_name = {s.name: s for s in params.specs("supervisor")}
    for name in SAFETY_LIMITS:
        assert not by_name[name].live, name
    assert by_name["supervisor.max_tilt_rad"].hi == 1.5


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("node_key", sorted(params.NODE_PARAMS))
def test_a_config_survives_the_trip_through_parameters(config: str, node_key: str) -> None:
    cfg = load_config(config_dir() / config)
    assert params.with_values(cfg, node_key, params.values(cfg, node_key)) == cfg


def test_the_script_steps_travel_as_json() -> None:
    steps = [{"at_s": 0.2, "request": "stand_up"}, {"at_s": 1.0, "cmd": [0.5, 0.0, 0.0]}]
    cfg = load_config(config_dir() / "g1_sim.yaml", {"script.steps": steps})
    (spec,) = [s for s in params.specs("script") if s.name == "script.steps"]
    assert spec.ros_type == "json"
    assert params.with_values(cfg, "script", params.values(cfg, "script")) == cfg


def test_a_bad_value_is_refused_with_the_key_and_what_is_allowed() -> None:
    cfg = load_config(config_dir() / "g1_robot.yaml")
    with pytest.raises(ConfigError, match=r"supervisor\.max_tilt_rad: 2\.0 is outside the allowed range \[0.1, 1.5\]"):
        params.with_values(cfg, "supervisor", {"supervisor.max_tilt_rad": 2.0})
    with pytest.raises(ConfigError, match=r"supervisor\.fallback: 'run' is not one of"):
        params.with_values(cfg, "supervisor", {"supervisor.fallback": "run"})
    with pytest.raises(ConfigError, match=r"supervisor\.stand_gains: not valid JSON"):
        params.with_values(cfg, "supervisor", {"supervisor.stand_gains": "{"})
    gains = params.with_values(cfg, "supervisor", {"supervisor.stand_gains": '{"left_knee_joint": [80, 4]}'})
    assert gains.supervisor.stand_gains == {"left_knee_joint": [80, 4]}


def test_a_params_file_names_each_node() -> None:
    cfg = load_config(config_dir() / "g1_robot.yaml")
    content = params.params_file({"teleop_node": params.values(cfg, "teleop")})
    assert content["teleop_node"]["ros__parameters"]["teleop.max_vx_mps"] == cfg.teleop.max_vx_mps


def test_live_only_where_the_node_applies_a_change() -> None:
    """A live field is settable only on a node that applies it (LIVE_NODES): the bridge also declares a teleop
    key, and keeps it read-only. The teleop speed limits and their ramps are live; the rest of teleop is not."""
    for key in params.NODE_PARAMS:
        live = {s.name for s in params.specs(key) if s.live}
        assert not live or key in params.LIVE_NODES, (key, live)
    live = {s.name for s in params.specs("teleop") if s.live}
    assert live == {"teleop.max_vx_mps", "teleop.max_vy_mps", "teleop.max_yaw_rate_rps", "teleop.accel_vx_mps2",
                    "teleop.accel_vy_mps2", "teleop.accel_yaw_rps2"}  # fmt: skip
    by_name = {s.name: s for s in params.specs("teleop")}
    assert (by_name["teleop.accel_vx_mps2"].lo, by_name["teleop.accel_vx_mps2"].hi) == (0.05, 20.0)


@pytest.mark.parametrize("config", CONFIGS)
def test_a_params_file_gives_each_node_its_keys_of_the_config(config: str, tmp_path) -> None:
    """What a node runs on from the graph's params file: the config's value of every key it declares (its own
    ``bundle`` too), the declarations' defaults elsewhere; the same as a stack YAML given to it directly."""
    cfg = load_config(config_dir() / config)
    path = params.write_params_file(cfg, tmp_path / "params.yaml")
    for key in params.NODE_PARAMS:
        node_cfg = params.read_params_file(path, key)
        assert params.values(node_cfg, key) == params.values(cfg, key), key
        assert node_cfg == params.restrict(cfg, key)
        if key in ("policy", "recorder", "supervisor", "bridge"):
            assert node_cfg.policy.bundle == cfg.policy.bundle, key


def test_a_node_s_keys_alone_pass_the_config_s_rules_over_them(tmp_path) -> None:
    """A rule across keys (the gamepad chords against teleop.damp_buttons) holds on the node's keys alone:
    a chord the user moved onto the default damp chord is no error where damp moved too."""
    cfg = load_config(config_dir() / "g1_sim.yaml",
                      {"supervisor.gamepad_stand_buttons": [6, 1], "teleop.damp_buttons": [6, 2]})  # fmt: skip
    path = params.write_params_file(cfg, tmp_path / "params.yaml")
    for key in params.NODE_PARAMS:
        params.read_params_file(path, key)
    assert params.read_params_file(path, "supervisor").supervisor.gamepad_stand_buttons == [6, 1]


def test_a_params_file_s_error_is_one_line_naming_the_file_the_node_and_the_key(tmp_path) -> None:
    import yaml

    cfg = load_config(config_dir() / "g1_robot.yaml")
    path = params.write_params_file(cfg, tmp_path / "params.yaml")
    data = yaml.safe_load(path.read_text())
    data["/**/supervisor_node"]["ros__parameters"]["supervisor.max_tilt_rad"] = 3.0
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as e:
        params.read_params_file(path, "supervisor")
    assert str(e.value) == (f"{path}: supervisor_node: supervisor.max_tilt_rad: 3.0 is outside the allowed range "
                            "[0.1, 1.5]")  # fmt: skip
    data["/**/supervisor_node"]["ros__parameters"] = {"supervisor.max_tilt": 0.5}  # a typo is not a default
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"supervisor\.max_tilt: not a parameter of supervisor_node"):
        params.read_params_file(path, "supervisor")
    path.write_text("/**/supervisor_node:\n  ros__parameters: {robot: g1\n")
    with pytest.raises(ConfigError, match=rf"^{path}:\d+:\d+: not valid YAML"):
        params.read_params_file(path, "supervisor")


def test_a_section_for_the_node_s_name_in_any_namespace_applies(tmp_path) -> None:
    path = tmp_path / "params.yaml"
    path.write_text("/**:\n  ros__parameters: {use_sim_time: true}\n"
                    "/robot1/teleop_node:\n  ros__parameters: {teleop.max_vx_mps: 0.7}\n"
                    "supervisor_node:\n  ros__parameters: {teleop.max_vx_mps: 9.0}\n")  # fmt: skip
    assert params.read_params_file(path, "teleop").teleop.max_vx_mps == 0.7


def test_a_real_node_lists_describes_and_refuses_read_only_settings(monkeypatch) -> None:
    """The supervisor's settings on an rclpy node, read over its parameter services by another node."""
    monkeypatch.setenv("ROS_DOMAIN_ID", str(_DOMAINS.ros))
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    import rclpy
    from rcl_interfaces.msg import ParameterType
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from rclpy.parameter_client import AsyncParameterClient

    from parkour_core.ros_process import declare_from_config

    cfg = load_config(config_dir() / "g1_robot.yaml")
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("params_test_supervisor", context=context)
    peer = rclpy.create_node("params_test_peer", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    executor.add_node(peer)

    def call(future):
        deadline = time.monotonic() + 20.0  # a hang guard only
        while not future.done() and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.02)
        assert future.done()
        return future.result()

    try:
        declared = declare_from_config(node, cfg, "supervisor")
        assert declared.cfg == cfg
        client = AsyncParameterClient(peer, "params_test_supervisor")
        deadline = time.monotonic() + 20.0
        while not client.services_are_ready() and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.02)
        names = set(call(client.list_parameters()).result.names)
        assert {s.name for s in params.specs("supervisor")} <= names
        domain, tilt = call(client.describe_parameters(["dds.domain", "supervisor.max_tilt_rad"])).descriptors
        assert domain.type == ParameterType.PARAMETER_INTEGER and domain.read_only
        assert (domain.integer_range[0].from_value, domain.integer_range[0].to_value) == (0, 232)
        assert tilt.read_only and "falling" in tilt.description
        assert call(client.get_parameters(["supervisor.max_tilt_rad"])).values[0].double_value == 0.8
        for name, value in (("supervisor.max_tilt_rad", 1.2), ("dds.domain", 5)):
            result = call(client.set_parameters([Parameter(name, value=value)])).results[0]
            assert not result.successful and "read-only" in result.reason, name
        assert declared.cfg.supervisor.max_tilt_rad == 0.8 and declared.cfg.dds.domain == 0
    finally:
        executor.shutdown()
        peer.destroy_node()
        node.destroy_node()
        rclpy.shutdown(context=context)


def test_a_parameter_override_reaches_the_config_and_a_bad_one_is_one_line(monkeypatch) -> None:
    """A params file or ``-p`` overrides a declared value; one outside the range stops the node with one line."""
    monkeypatch.setenv("ROS_DOMAIN_ID", str(_DOMAINS.ros))
    import rclpy

    from parkour_core.ros_process import declare_from_config

    cfg = load_config(config_dir() / "g1_robot.yaml")
    for value in ("0.6", "2.0", "'steep'"):
        context = rclpy.Context()
        rclpy.init(args=["--ros-args", "-p", f"supervisor.max_tilt_rad:={value}"], context=context)
        node = rclpy.create_node("params_test_override", context=context)
        try:
            if value == "0.6":
                assert declare_from_config(node, cfg, "supervisor").cfg.supervisor.max_tilt_rad == 0.6
            else:
                with pytest.raises(ConfigError, match=r"parameter supervisor\.max_tilt_rad: ") as e:
                    declare_from_config(node, cfg, "supervisor")
                assert "\n" not in str(e.value)
        finally:
            node.destroy_node()
            rclpy.shutdown(context=context)


def test_a_live_value_that_breaks_a_config_rule_is_refused_with_the_rule(monkeypatch) -> None:
    """Past rclpy's type and range checks, a set value meets the config's own (here: a choice)."""
    monkeypatch.setenv("ROS_DOMAIN_ID", str(_DOMAINS.ros))
    import rclpy
    from rclpy.parameter import Parameter

    from parkour_core.ros_process import declare_from_config

    real = params.specs
    monkeypatch.setattr(
        params,
        "specs",
        lambda key: [dataclasses.replace(s, live=True) if s.name == "supervisor.fallback" else s for s in real(key)],
    )
    cfg = load_config(config_dir() / "g1_robot.yaml")
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("params_test_rules", context=context)
    try:
        applied: list = []
        declared = declare_from_config(node, cfg, "supervisor", applied.append)
        refused = node.set_parameters([Parameter("supervisor.fallback", value="run")])[0]
        assert not refused.successful and "supervisor.fallback: 'run' is not one of" in refused.reason
        assert node.set_parameters([Parameter("supervisor.fallback", value="stand")])[0].successful
        assert declared.cfg.supervisor.fallback == "stand" and applied == [declared.cfg]
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)


def test_a_node_declares_from_the_params_file_rcl_reads(monkeypatch, tmp_path) -> None:
    """The graph's params file given to rclpy (``--params-file``) and to the node's config agree: every declared
    value is the file's, an empty list included (rcl leaves it unset: the config reads it as [])."""
    monkeypatch.setenv("ROS_DOMAIN_ID", str(_DOMAINS.ros))
    import rclpy

    from parkour_core.ros_process import declare_from_config

    cfg = load_config(config_dir() / "g1_robot.yaml", {"supervisor.cpu_affinity": [], "supervisor.max_tilt_rad": 0.7})
    path = params.write_params_file(cfg, tmp_path / "params.yaml")
    node_cfg = params.read_params_file(path, "supervisor")
    context = rclpy.Context()
    rclpy.init(args=["--ros-args", "--params-file", str(path)], context=context)
    node = rclpy.create_node("supervisor_node", namespace="/robot1", context=context)
    try:
        declared = declare_from_config(node, node_cfg, "supervisor")
        assert declared.cfg == node_cfg and declared.cfg.supervisor.max_tilt_rad == 0.7
        assert declared.cfg.supervisor.cpu_affinity == []
        assert node.get_parameter("supervisor.max_tilt_rad").value == 0.7
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)
