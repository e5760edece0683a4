from setuptools import find_packages, setup

package_name = "parkour_bringup"

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
    description="The parkour CLI: in-process bringup, reports",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "parkour = parkour_bringup.cli:main",
        ],
    },
)
