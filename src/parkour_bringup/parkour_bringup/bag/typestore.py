"""The message types a stack bag is written and read with: ROS 2 Kilted's and the stack's own.

rosbags knows the standard messages; the stack's (``parkour_interfaces``) are registered from their
``.msg`` definitions, read where the package is installed (the ament index: ``.venv`` after
``make setup``, a colcon install on a robot) or else from the source folder of this checkout. The
type hashes it computes from them are the ones rclpy's generated types carry (RIHS01), and the
definitions go into the bag's MCAP schemas, so any MCAP reader decodes the stack's topics. A bag
recorded with an earlier definition of one of them (before a field was added) is decoded with the
definition it recorded (:func:`recorded_typestore`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

PACKAGE = "parkour_interfaces"


def interface_definitions_dir() -> Path:
    """The folder of ``parkour_interfaces``' .msg files: installed, else this checkout's source."""
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
    except ImportError:  # no ROS in this environment: the source folder still describes the messages
        pass
    else:
        try:
            installed = Path(get_package_share_directory(PACKAGE)) / "msg"
            if installed.is_dir():
                return installed
        except (PackageNotFoundError, OSError):  # not installed, or AMENT_PREFIX_PATH unset
            pass
    from parkour_core.paths import repo_root

    source = repo_root() / "src" / PACKAGE / "msg"
    if not source.is_dir():
        raise FileNotFoundError(f"no {PACKAGE} message definitions: neither installed (make setup) nor at {source}")
    return source


def stack_typestore() -> Any:
    """A rosbags typestore of ROS 2 Kilted with the stack's own message types registered."""
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    typestore = get_typestore(Stores.ROS2_KILTED)
    types: dict[str, Any] = {}
    for path in sorted(interface_definitions_dir().glob("*.msg")):
        types.update(get_types_from_msg(path.read_text(), f"{PACKAGE}/msg/{path.stem}"))
    typestore.register(types)
    return typestore


def recorded_typestore(msgtype: str, definition: str, current: Any) -> Any | None:
    """A typestore that decodes the stack's ``msgtype`` as a bag recorded it, where the ``definition`` the bag
    recorded (its MCAP schema, ``ros2msg``) is not ``current``'s: a message recorded before a field was added
    has fewer bytes than today's type reads. None where they agree, for another package's type, or where the
    recorded definition cannot be parsed (today's is used then)."""
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    if not msgtype.startswith(f"{PACKAGE}/") or not definition.strip():
        return None
    try:
        recorded = {k: v for k, v in get_types_from_msg(definition, msgtype).items() if k.startswith(f"{PACKAGE}/")}
        typestore = get_typestore(Stores.ROS2_KILTED)
        typestore.register(recorded)
        if typestore.hash_rihs01(msgtype) == current.hash_rihs01(msgtype):
            return None
    except Exception:  # rosbags' parse and type errors: a schema it cannot read decodes as today's type
        return None
    return typestore
