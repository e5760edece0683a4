from setuptools import find_packages, setup

package_name = "parkour_core"

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    package_data={"parkour_core.bundles.importers": ["examples/*.yaml"]},
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
    ],
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="parkour stack maintainers",
    maintainer_email="parkour@example.org",
    description="Robot specs, observation contract, model bundles, runners and safety rules (no ROS)",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [],
    },
)
