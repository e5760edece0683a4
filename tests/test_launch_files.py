"""Static checks of launch/*.launch.py and the src/ package layout (launch_ros is not importable here)."""

from __future__ import annotations

import ast
import contextlib
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAUNCH_FILES = sorted((ROOT / "launch").glob("*.launch.py"))
# 'name = module.path:function' strings in setup.py (ament_python console_scripts).
ENTRY_POINT = re.compile(r"""['"]\s*([A-Za-z0-9_.-]+)\s*=\s*[A-Za-z0-9_.]+:[A-Za-z0-9_]+\s*['"]""")
PACKAGES = sorted(p for p in (ROOT / "src").iterdir() if p.is_dir() and (p / "package.xml").exists())


def module_literals(path: Path) -> dict[str, object]:
    """Module-level `NAME = <literal>` assignments of a Python file, evaluated with ast.literal_eval."""
    values: dict[str, object] = {}
    for node in ast.parse(path.read_text(), filename=str(path)).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            with contextlib.suppress(ValueError):
                values[node.targets[0].id] = ast.literal_eval(node.value)
    return values


def console_scripts(package: str) -> set[str]:
    setup_py = ROOT / "src" / package / "setup.py"
    if not setup_py.exists():
        return set()
    return set(ENTRY_POINT.findall(setup_py.read_text()))


def test_launch_files_exist() -> None:
    names = {p.name for p in LAUNCH_FILES}
    assert {"sim.launch.py", "robot_g1.launch.py"} <= names


@pytest.mark.parametrize("launch_file", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_nodes_are_console_scripts(launch_file: Path) -> None:
    values = module_literals(launch_file)
    nodes = values.get("NODES")
    assert isinstance(nodes, list) and nodes, f"{launch_file.name}: no literal NODES list"
    for entry in nodes:
        package, executable = entry
        assert (ROOT / "src" / package).is_dir(), f"{launch_file.name}: no package src/{package}"
        assert executable in console_scripts(package), (
            f"{launch_file.name}: {package}/setup.py declares no console_scripts entry {executable!r}"
        )


@pytest.mark.parametrize("launch_file", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_config_files_exist(launch_file: Path) -> None:
    values = module_literals(launch_file)
    configs = values.get("CONFIG_FILES")
    assert isinstance(configs, list) and configs, f"{launch_file.name}: no literal CONFIG_FILES list"
    for name in configs:
        assert (ROOT / "config" / name).is_file(), f"{launch_file.name}: config/{name} does not exist"


def test_packages_found() -> None:
    names = {p.name for p in PACKAGES}
    assert {"parkour_core", "parkour_sim", "parkour_safety", "parkour_control", "parkour_teleop",
            "parkour_bringup", "parkour_perception"} <= names  # fmt: skip


def build_type(pkg: Path) -> str:
    return (ET.parse(pkg / "package.xml").getroot().findtext("export/build_type") or "").strip()


@pytest.mark.parametrize("pkg", PACKAGES, ids=lambda p: p.name)
def test_package_layout(pkg: Path) -> None:
    name = pkg.name
    root = ET.parse(pkg / "package.xml").getroot()
    if build_type(pkg) == "ament_cmake":  # a message package: rosidl generates its Python
        assert (pkg / "CMakeLists.txt").is_file() and (pkg / "msg").is_dir(), f"src/{name}: CMakeLists.txt, msg/"
        groups = {g.text for g in root.findall("member_of_group")}
        assert "rosidl_interface_packages" in groups, f"src/{name}/package.xml: not a rosidl interface package"
    else:
        assert build_type(pkg) == "ament_python", f"src/{name}/package.xml: build_type {build_type(pkg)!r}"
        for rel in ("setup.py", "setup.cfg", f"resource/{name}", f"{name}/__init__.py"):
            assert (pkg / rel).is_file(), f"src/{name}: missing {rel}"
    assert (pkg / "test").is_dir(), f"src/{name}: missing test/ folder"
    xml_name = root.findtext("name")
    assert xml_name is not None and xml_name.strip() == name, f"src/{name}/package.xml: <name> is {xml_name!r}"


def test_colcon_and_the_setup_script_install_the_same_packages() -> None:
    """colcon builds every package on a robot computer; scripts/setup.sh installs the same ones into .venv:
    the ament_python ones with pip, the message package with cmake."""
    import json

    assert set(json.loads((ROOT / "colcon.meta").read_text())["names"]) == {p.name for p in PACKAGES}
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    editable = re.search(r"^PACKAGES=\((.*)\)$", setup, re.MULTILINE)
    assert editable is not None, "scripts/setup.sh: no PACKAGES=(...) line"
    assert set(editable.group(1).split()) == {p.name for p in PACKAGES if build_type(p) == "ament_python"}
    built = set(re.findall(r"^IFACE_SRC=src/(\w+)$", setup, re.MULTILINE))
    assert built == {p.name for p in PACKAGES if build_type(p) == "ament_cmake"}


@pytest.mark.parametrize("name", ["robot_g1.launch.py", "robot_h1.launch.py"])
def test_robot_launch_files_take_the_domain_and_the_interface(name: str) -> None:
    text = (ROOT / "launch" / name).read_text()
    for arg in ("domain", "iface"):
        assert f'DeclareLaunchArgument(\n            "{arg}"' in text or f'"{arg}", default_value=""' in text, arg
        assert f'"--{arg}", LaunchConfiguration("{arg}")' in text, arg
