from setuptools import find_packages, setup

package_name = "parkour_safety"

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
    description="Safety supervisor: the only writer of rt/lowcmd",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "supervisor_node = parkour_safety.supervisor_node:main",
        ],
    },
)
