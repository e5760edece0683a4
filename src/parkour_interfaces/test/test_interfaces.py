"""The message package: what `make setup` installed is this source, rclpy publishes it, and bags agree on it.

Bags get the stack's types from rosbags, which hashes them from the .msg text: the hash must be the one
rosidl generated and rclpy advertises, or a bag's schema would not match the live topic's type.
"""

import json
import random
import re
import time
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1]
MSG_FILES = sorted((PACKAGE / "msg").glob("*.msg"))
NAMES = [p.stem for p in MSG_FILES]


def _installed_share() -> Path:
    from ament_index_python.packages import get_package_share_directory

    return Path(get_package_share_directory("parkour_interfaces"))


def test_every_message_file_is_generated_and_every_generated_one_exists():
    listed = re.findall(r'"msg/(\w+)\.msg"', (PACKAGE / "CMakeLists.txt").read_text())
    assert sorted(listed) == NAMES


def test_the_installed_definitions_are_this_checkout_s():
    """`make setup` rebuilds the package when its sources change: an installed copy never lags behind."""
    share = _installed_share() / "msg"
    for path in MSG_FILES:
        assert (share / path.name).read_text() == path.read_text(), f"{path.name}: run make setup"


@pytest.mark.parametrize("name", NAMES)
def test_rosbags_hashes_each_type_as_rosidl_does(name):
    from parkour_bringup.bag.typestore import stack_typestore

    described = json.loads((_installed_share() / "msg" / f"{name}.json").read_text())
    own = f"parkour_interfaces/msg/{name}"
    rosidl = {h["type_name"]: h["hash_string"] for h in described["type_hashes"]}[own]
    assert stack_typestore().hash_rihs01(own) == rosidl


def test_the_supervisor_s_mode_constants_are_the_safety_core_s_modes():
    from parkour_core.safety import Mode
    from parkour_interfaces.msg import SupervisorState

    for mode in Mode:
        assert getattr(SupervisorState, mode.value) == mode.value


def test_each_type_goes_over_dds_with_its_fields_and_advertised_hash():
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import DurabilityPolicy, QoSProfile

    import parkour_interfaces.msg as msgs
    from parkour_bringup.bag.typestore import stack_typestore

    typestore = stack_typestore()
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=random.randint(180, 199))
    node = rclpy.create_node("interfaces_test", context=context)
    try:
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        received: dict[str, object] = {}
        for name in NAMES:
            cls = getattr(msgs, name)
            node.create_subscription(cls, f"/t/{name}", lambda m, n=name: received.setdefault(n, m), latched)
            pub = node.create_publisher(cls, f"/t/{name}", latched)
            msg = cls()
            msg.header.frame_id = name
            pub.publish(msg)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        deadline = time.monotonic() + 20
        while len(received) < len(NAMES) and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
        assert sorted(received) == NAMES
        for name in NAMES:
            assert received[name].header.frame_id == name
            (info,) = node.get_publishers_info_by_topic(f"/t/{name}")
            assert str(info.topic_type_hash) == typestore.hash_rihs01(f"parkour_interfaces/msg/{name}")
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)
