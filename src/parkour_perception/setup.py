from setuptools import find_packages, setup

package_name = "parkour_perception"

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
    description="Depth camera: RealSense capture with hardware-time stamping and the policy preprocessing",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "depth_node = parkour_perception.depth_node:main",
        ],
    },
)
