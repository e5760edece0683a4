"""Simulated G1: MuJoCo bridge (Unitree DDS) + safety supervisor + policy + scripted teleop.

ros2 launch launch/sim.launch.py [config:=/path/to/g1_sim.yaml] [namespace:=robot1]

The nodes are the sim graph's of parkour_core.interfaces, the list `parkour sim` starts. Under a
namespace every topic and the simulator's clock are the namespace's; a second simulated robot in
the same ROS domain takes a namespace of its own and a dds.domain of its own.
"""

import os

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from parkour_core.interfaces import CLOCK_REMAP, nodes

# Read by tests/test_launch_files.py with `ast`: keep it literal.
CONFIG_FILES = ["g1_sim.yaml"]

CONFIG_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "config")


def generate_launch_description() -> LaunchDescription:
    config = LaunchConfiguration("config")
    actions = [
        DeclareLaunchArgument(
            "config",
            default_value=os.path.normpath(os.path.join(CONFIG_DIR, CONFIG_FILES[0])),
            description="stack configuration (YAML)",
        ),
        DeclareLaunchArgument("namespace", default_value="", description="ROS namespace (empty: the root)"),
    ]
    for node in nodes("sim"):
        actions.append(
            Node(
                package=node.package,
                executable=node.executable,
                name=node.executable,
                namespace=LaunchConfiguration("namespace"),
                output="screen",
                arguments=["--config", config],
                parameters=[{"use_sim_time": True}],
                remappings=[CLOCK_REMAP],
            )
        )
    return LaunchDescription(actions)
