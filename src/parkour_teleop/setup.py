from setuptools import find_packages, setup

package_name = "parkour_teleop"

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
    ],
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="parkour stack maintainers",
    maintainer_email="parkour@example.org",
    description="Command sources: scripted sequences, gamepad (evdev), sensor_msgs/Joy, Unitree remote, keyboard",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "script_node = parkour_teleop.script_node:main",
            "teleop_node = parkour_teleop.teleop_node:main",
        ],
    },
)
