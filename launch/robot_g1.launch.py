"""Real Unitree G1: safety supervisor + policy + RealSense depth + teleop. Dry-run unless live:=true.

    ros2 launch launch/robot_g1.launch.py [config:=/path/to/g1_robot.yaml] [domain:=0] [iface:=eth0] [live:=true]
        [namespace:=robot1]

Only the safety supervisor writes rt/lowcmd, and only with --live.
"""

import os

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition, UnlessCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from parkour_core.interfaces import nodes

# Read by tests/test_launch_files.py with `ast`: keep these literal.
CONFIG_FILES = ["g1_robot.yaml"]

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


def generate_launch_description() -> LaunchDescription:
    config = LaunchConfiguration("config")
    live = LaunchConfiguration("live")
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
    ]
    for node in nodes("robot"):
        package, executable = node.package, node.executable
        # `--live` is passed only when live:=true (one of the two variants starts).
        actions.append(_node(package, executable, [*args, "--live"], condition=IfCondition(live)))
        actions.append(_node(package, executable, args, condition=UnlessCondition(live)))
    return LaunchDescription(actions)
