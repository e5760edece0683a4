from setuptools import find_packages, setup

package_name = "parkour_sim"

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
    description="MuJoCo bridge speaking the Unitree DDS interface",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "mujoco_bridge = parkour_sim.bridge_node:main",
        ],
    },
)
