"""The stack's topics as bags recorded before ``parkour_interfaces`` hold them, both ways.

Such a bag has JSON in std_msgs/String on ``/supervisor/transition`` ({"t", "from", "to", "reason"}),
``/policy/bundle`` ({"name", "path", "kp", "kd", "uses_depth"}) and ``/sim/band`` ({"state":
"hanging"|"released", "t"}), the mode name on ``/supervisor/state``, and ``/policy/tick_inputs`` as a
std_msgs/Float64MultiArray whose one dimension is labelled :data:`TICK_INPUTS_LAYOUT`: stamp sec and
nanosec, reset (0/1), depth stamp (NaN: none), command (3), quaternion wxyz (4), gyro (3), q, dq. The
readers turn them into what the typed messages carry; the writers make such bags for the tests.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from parkour_bringup.bag.topics import BAND_TOPIC, BUNDLE_TOPIC, STATE_TOPIC, TICK_INPUTS_TOPIC, TRANSITION_TOPIC
from parkour_core.tick_inputs import TickInputs

STRING = "std_msgs/msg/String"
PACKED = "std_msgs/msg/Float64MultiArray"
# The types an older stack recorded its own topics with.
MSGTYPES = {TICK_INPUTS_TOPIC: PACKED, BUNDLE_TOPIC: STRING, STATE_TOPIC: STRING, TRANSITION_TOPIC: STRING,
            BAND_TOPIC: STRING}  # fmt: skip
TICK_INPUTS_LAYOUT = "parkour_tick_inputs_v1"  # names the packing, so a reader can refuse another one
HEADER_LEN = 4  # stamp_sec, stamp_nanosec, reset, depth_stamp_s
FIXED_LEN = HEADER_LEN + 3 + 4 + 3  # + command, quaternion, gyro


def encode_tick_inputs(t: TickInputs) -> tuple[str, list[float]]:
    """(layout label, data) of the Float64MultiArray an older policy node published."""
    depth = math.nan if t.depth_stamp_s is None else t.depth_stamp_s
    data = [float(t.stamp_sec), float(t.stamp_nanosec), 1.0 if t.reset else 0.0, depth]
    for part in (t.command, t.quat_wxyz, t.gyro, t.q, t.dq):
        data.extend(float(v) for v in np.asarray(part, dtype=np.float64).ravel())
    return TICK_INPUTS_LAYOUT, data


def decode_tick_inputs(label: str, data: Any) -> TickInputs:
    if label != TICK_INPUTS_LAYOUT:
        raise ValueError(f"{TICK_INPUTS_TOPIC} has layout {label!r}; this replay reads {TICK_INPUTS_LAYOUT!r}")
    values = np.asarray(data, dtype=np.float64)
    n2 = len(values) - FIXED_LEN
    if n2 <= 0 or n2 % 2:
        raise ValueError(f"{TICK_INPUTS_TOPIC} message has {len(values)} values, not {FIXED_LEN} + 2 x joints")
    n = n2 // 2
    depth = float(values[3])
    i = HEADER_LEN
    return TickInputs(
        stamp_sec=int(values[0]),
        stamp_nanosec=int(values[1]),
        reset=bool(values[2]),
        depth_stamp_s=None if math.isnan(depth) else depth,
        command=values[i : i + 3].copy(),
        quat_wxyz=values[i + 3 : i + 7].copy(),
        gyro=values[i + 7 : i + 10].copy(),
        q=values[i + 10 : i + 10 + n].copy(),
        dq=values[i + 10 + n : i + 10 + 2 * n].copy(),
    )


def tick_inputs_from_packed(msg: Any) -> TickInputs:
    return decode_tick_inputs(msg.layout.dim[0].label if msg.layout.dim else "", msg.data)


def _json_object(msg: Any, what: str) -> dict[str, Any]:
    try:
        value = json.loads(msg.data)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ValueError(f"a {what} message is not the JSON object an older stack wrote: {str(msg.data)[:60]!r}")
    return value


def transition_from_json(msg: Any) -> dict[str, Any]:
    """{"t", "from", "to", "reason"} of an older /supervisor/transition message."""
    record = _json_object(msg, TRANSITION_TOPIC)
    try:
        return {"t": float(record["t"]), **{k: str(record[k]) for k in ("from", "to", "reason")}}
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"a /supervisor/transition message lacks t, from, to or reason: {msg.data[:60]!r}") from None


def bundle_from_json(msg: Any) -> tuple[str, str]:
    """(name, path) of an older /policy/bundle announcement."""
    info = _json_object(msg, BUNDLE_TOPIC)
    if "name" not in info or "path" not in info:
        raise ValueError(f"a /policy/bundle message lacks name or path: {msg.data[:60]!r}")
    return str(info["name"]), str(info["path"])


def band_from_json(msg: Any) -> tuple[bool, float]:
    """(released, sim time) of an older /sim/band message."""
    band = _json_object(msg, BAND_TOPIC)
    try:
        return band["state"] == "released", float(band["t"])
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"a /sim/band message lacks state or t: {msg.data[:60]!r}") from None


def string_message(types: Any, text: str) -> Any:
    """A rosbags std_msgs/String (``types``: a typestore's types)."""
    return types[STRING](data=text)


def packed_tick_inputs_message(types: Any, inputs: TickInputs) -> Any:
    """A rosbags std_msgs/Float64MultiArray as an older policy node published a tick's inputs."""
    label, data = encode_tick_inputs(inputs)
    dim = types["std_msgs/msg/MultiArrayDimension"](label=label, size=len(data), stride=len(data))
    layout = types["std_msgs/msg/MultiArrayLayout"](dim=[dim], data_offset=0)
    return types[PACKED](layout=layout, data=np.asarray(data, dtype=np.float64))
