"""Simulated G1: MuJoCo bridge (Unitree DDS) + safety supervisor + policy + scripted teleop.

ros2 launch launch/sim.launch.py [config:=/path/to/g1_sim.yaml]
"""

import os

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

# Read by tests/test_launch_files.py with `ast`: keep these literal.
NODES = [
    ("parkour_sim", "mujoco_bridge"),
    ("parkour_safety", "supervisor_node"),
    ("parkour_control", "policy_node"),
    ("parkour_teleop", "script_node"),
]
CONFIG_FILES = ["g1_sim.yaml"]

CONFIG_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "config")


def generate_launch_description() -> LaunchDescription:
    config = LaunchConfiguration("config")
    actions = [
        DeclareLaunchArgument(
            "config",
            default_value=os.path.normpath(os.path.join(CONFIG_DIR, CONFIG_FILES[0])),
            description="stack configuration (YAML)",
        )
    ]
    for package, executable in NODES:
        actions.append(
            Node(
                package=package,
                executable=executable,
                name=executable,
                output="screen",
                arguments=["--config", config],
                parameters=[{"use_sim_time": True}],
            )
        )
    return LaunchDescription(actions)
