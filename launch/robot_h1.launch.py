"""Real Unitree H1: safety supervisor + RealSense depth + teleop (+ policy). Dry-run unless live:=true.

    ros2 launch launch/robot_h1.launch.py [config:=h1_robot.yaml] [domain:=0] [iface:=eth0] [live:=true] [policy:=true]
        [namespace:=robot1]

Only the safety supervisor writes rt/lowcmd (unitree_go LowCmd_, the H1's 20 motor slots), and only
with live:=true. No trained H1 policy exists yet, so policy_node starts only with policy:=true, once
policy.bundle in the config names a bundle trained for the h1; until then the supervisor stands the
robot up, holds the stand pose and damps it. Keep the H1 on its gantry (see config/h1_robot.yaml).
"""

import os

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration, PythonExpression
from launch_ros.actions import Node

from parkour_core.interfaces import nodes

# Read by tests/test_launch_files.py with `ast`: keep these literal.
OPTIONAL_NODES = ["policy_node"]  # started only with policy:=true
CONFIG_FILES = ["h1_robot.yaml"]

CONFIG_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "config")


def _node(package: str, executable: str, arguments: list, **kwargs) -> Node:
    return Node(
        package=package,
        executable=executable,
        name=executable,
        namespace=LaunchConfiguration("namespace"),
        output="screen",
        arguments=arguments,
        **kwargs,
    )


def _when(live_value: str, executable: str, live: LaunchConfiguration, policy: LaunchConfiguration) -> IfCondition:
    """live:=<live_value>, and policy:=true for an optional node."""
    terms = ["'", live, f"' == '{live_value}'"]
    if executable in OPTIONAL_NODES:
        terms += [" and '", policy, "' == 'true'"]
    return IfCondition(PythonExpression(terms))


def generate_launch_description() -> LaunchDescription:
    config = LaunchConfiguration("config")
    live = LaunchConfiguration("live")
    policy = LaunchConfiguration("policy")
    args = ["--config", config, "--domain", LaunchConfiguration("domain"), "--iface", LaunchConfiguration("iface")]
    actions = [
        DeclareLaunchArgument(
            "config",
            default_value=os.path.normpath(os.path.join(CONFIG_DIR, CONFIG_FILES[0])),
            description="stack configuration (YAML)",
        ),
        DeclareLaunchArgument(
            "domain", default_value="", description="Unitree DDS domain (empty: the config's dds.domain; robots use 0)"
        ),
        DeclareLaunchArgument(
            "iface", default_value="", description="network interface wired to the robot (empty: the config's)"
        ),
        DeclareLaunchArgument(
            "live",
            default_value="false",
            choices=["true", "false"],
            description="true: the supervisor writes rt/lowcmd (moves the robot); false: dry run",
        ),
        DeclareLaunchArgument("namespace", default_value="", description="ROS namespace (empty: the root)"),
        DeclareLaunchArgument(
            "policy",
            default_value="false",
            choices=["true", "false"],
            description="true: start policy_node (policy.bundle must name a bundle trained for the h1)",
        ),
    ]
    for node in nodes("robot"):
        package, executable = node.package, node.executable
        # `--live` is passed only when live:=true (one of the two variants starts).
        actions.append(_node(package, executable, [*args, "--live"], condition=_when("true", executable, live, policy)))
        actions.append(_node(package, executable, args, condition=_when("false", executable, live, policy)))
    return LaunchDescription(actions)
