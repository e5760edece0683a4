"""Checks of launch/*.launch.py (run against stand-ins for launch and launch_ros, which are not
importable here), of the node list they and the bringup share, and of the src/ package layout."""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import re
import sys
import types
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from parkour_core.interfaces import NODES, nodes

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


@pytest.mark.parametrize("spec", [n for n in NODES if n.modes], ids=lambda n: n.key)
def test_the_graphs_nodes_are_console_scripts_named_as_their_ros_nodes(spec) -> None:
    assert spec.executable in console_scripts(spec.package), (
        f"src/{spec.package}/setup.py declares no console_scripts entry {spec.executable!r}"
    )
    source = ROOT / "src" / spec.package / (spec.module.replace(".", "/") + ".py")
    assert re.search(rf"""(create_node|_wall_clock_node)\(\s*"{spec.executable}\"""", source.read_text()), (
        f"{source.relative_to(ROOT)} creates no ROS node named {spec.executable!r}"
    )


class _Fake:
    """What a launch or launch_ros class was called with (launch_ros is not importable here)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        self.args, self.kwargs = args, kwargs


def launch_nodes(launch_file: Path, monkeypatch) -> list[dict[str, object]]:
    """The keyword arguments of every launch_ros Node the launch file's description holds."""
    modules = {name: types.ModuleType(name) for name in
               ("launch", "launch.actions", "launch.conditions", "launch.substitutions", "launch_ros",
                "launch_ros.actions")}  # fmt: skip
    modules["launch"].LaunchDescription = lambda actions: list(actions)
    modules["launch.actions"].DeclareLaunchArgument = _Fake
    for name in ("IfCondition", "UnlessCondition"):
        setattr(modules["launch.conditions"], name, _Fake)
    for name in ("LaunchConfiguration", "PythonExpression"):
        setattr(modules["launch.substitutions"], name, _Fake)
    node_type = type("Node", (_Fake,), {})
    modules["launch_ros.actions"].Node = node_type
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    spec = importlib.util.spec_from_file_location(launch_file.stem.replace(".", "_"), launch_file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [a.kwargs for a in module.generate_launch_description() if isinstance(a, node_type)]


@pytest.mark.parametrize("launch_file", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_files_start_the_node_list_of_parkour_core_interfaces(launch_file: Path, monkeypatch) -> None:
    """The node list is written once: a launch file starts the nodes of its graph's mode, read from
    parkour_core.interfaces, each under the namespace argument, and names no package itself."""
    mode = "sim" if launch_file.name.startswith("sim") else "robot"
    started = launch_nodes(launch_file, monkeypatch)
    assert {(n["package"], n["executable"]) for n in started} == {(s.package, s.executable) for s in nodes(mode)}
    assert all(n["name"] == n["executable"] and "namespace" in n for n in started)
    text = launch_file.read_text()
    assert "NODES" not in module_literals(launch_file), f"{launch_file.name}: a node list of its own"
    for package in {s.package for s in NODES}:
        assert f'"{package}"' not in text, f"{launch_file.name} names {package} itself"


def test_the_bringup_starts_the_node_list_of_parkour_core_interfaces() -> None:
    from parkour_bringup import graph

    assert (*graph.SIM_NODES, "bridge") == tuple(n.key for n in nodes("sim"))
    assert tuple(n.key for n in nodes("robot")) == graph.ROBOT_NODES
    assert {n.key: n.module for n in NODES} == graph.MODULES
    for path in (ROOT / "src" / "parkour_bringup" / "parkour_bringup").rglob("*.py"):
        for spec in NODES:
            assert f'"{spec.module}"' not in path.read_text(), f"{path.relative_to(ROOT)} names {spec.module} itself"


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
