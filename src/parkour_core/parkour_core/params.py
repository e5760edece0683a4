"""Each node's ROS parameters, derived from the stack config's declarations (``parkour_core.config``).

A node's parameters are the config keys it reads, named as in the stack YAML (``supervisor.max_tilt_rad``),
with the field's type, default, range, choices and doc. A key is settable while the node runs only if its
field says ``live`` (the node applies it at once); every other key is read-only, safety limits and the DDS
domain among them. Lists and mappings that ROS parameters cannot type (the script's steps, stand gains)
travel as JSON text. Plain data, free of ROS: ``parkour_core.ros_process.declare_from_config`` declares
them on a node, and the reference page lists them.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from dataclasses import dataclass
from typing import Any

from parkour_core.config import _ITEM_TYPES, ConfigError, StackConfig, parse

_CMD_VEL = ("cmd_vel.teleop_topic", "cmd_vel.teleop_timeout_s", "cmd_vel.autonomy_topic")  # the velocity mux
# The config keys each node declares: a section (``teleop``) or one key (``supervisor.max_tilt_rad``).
# policy_node's ``policy.bundle`` is its own live ``bundle`` parameter (setting it swaps the model).
NODE_PARAMS: dict[str, tuple[str, ...]] = {
    "supervisor": ("robot", "mode", "dds", "supervisor", *_CMD_VEL, "depth.stale_after_s", "policy.bundle",
                   "policy.command_timeout_s"),
    "policy": ("robot", "mode", "dds", "policy.intra_op_threads", "policy.cpu_affinity", "policy.realtime_priority",
               "policy.lock_memory", "policy.command_timeout_s", "policy.providers", "policy.emulate_depth_latency",
               "policy.shadow_ticks", "policy.swap_allowed_states", "policy.swap_timeout_s", *_CMD_VEL, "depth",
               "faults.enabled", "faults.policy_offset_rad"),
    "script": ("mode", "script", "faults.enabled"),
    "depth": ("camera", "depth"),
    "bridge": ("robot", "mode", "dds", "bridge", "sim_camera", "depth", "faults", "supervisor.max_tilt_rad",
               "supervisor.rate_hz", "teleop.command_timeout_s", "policy.bundle", "run.duration_s"),
    "teleop": ("mode", "teleop", "cmd_vel.teleop_topic", "supervisor.gamepad_estop_buttons",
               "supervisor.gamepad_stand_up_buttons", "supervisor.gamepad_activate_buttons",
               "supervisor.gamepad_stand_buttons"),
}  # fmt: skip

# ROS parameter types, as rcl_interfaces/msg/ParameterType names them (lower case); "json": a string.
ROS_TYPES = ("bool", "integer", "double", "string", "integer_array", "double_array", "string_array", "json")


@dataclass(frozen=True)
class ParamSpec:
    name: str  # the dotted config key
    ros_type: str  # one of ROS_TYPES
    default: Any  # as the parameter carries it (JSON text for "json")
    lo: float | None
    hi: float | None
    choices: tuple
    live: bool  # settable while the node runs; otherwise read-only
    description: str


def _ros_type(typ: Any, default: Any, items: type | None) -> str:
    if items is not None:
        return "json"  # a list of records (the script's steps)
    if typ is bool:
        return "bool"
    if typ is int:
        return "integer"
    if typ is float:
        return "double"
    if typ is str:
        return "string"
    if typ is list and default and all(isinstance(x, str) for x in default):
        return "string_array"
    if typ is list and all(isinstance(x, int) and not isinstance(x, bool) for x in default):
        return "integer_array"  # an empty default: CPU numbers
    if typ is list and all(isinstance(x, int | float) and not isinstance(x, bool) for x in default):
        return "double_array"
    return "json"


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def _fields(cls: type, prefix: str = "") -> list[tuple[str, Any, dataclasses.Field, type | None]]:
    """(dotted key, type, field, item record type) of every leaf field of ``cls``."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        key = f"{prefix}.{f.name}" if prefix else f.name
        if dataclasses.is_dataclass(hints[f.name]):
            out += _fields(hints[f.name], key)
        else:
            out.append((key, hints[f.name], f, _ITEM_TYPES.get((cls, f.name))))
    return out


def _selected(key: str, selectors: tuple[str, ...]) -> bool:
    return any(key == s or key.startswith(s + ".") for s in selectors)


def specs(node_key: str) -> list[ParamSpec]:
    """The parameters of node ``node_key`` (a key of ``NODE_PARAMS``), in the config's order."""
    selectors = NODE_PARAMS[node_key]
    out = []
    for key, typ, f, items in _fields(StackConfig):
        if not _selected(key, selectors):
            continue
        m, default = f.metadata, _default(f)
        ros_type = _ros_type(typ, default, items)
        out.append(
            ParamSpec(key, ros_type, to_ros(ros_type, default), m.get("lo"), m.get("hi"), tuple(m.get("choices", ())),
                      bool(m.get("live")), m.get("doc", ""))
        )  # fmt: skip
    return out


def to_ros(ros_type: str, value: Any) -> Any:
    """A config value as its parameter carries it."""
    if ros_type == "json":
        return json.dumps(value, sort_keys=True, default=lambda o: dataclasses.asdict(o))
    if ros_type == "double":
        return float(value)
    if ros_type == "double_array":
        return [float(x) for x in value]
    return list(value) if ros_type.endswith("_array") else value


def from_ros(ros_type: str, value: Any) -> Any:
    """A parameter's value as the config reads it."""
    if ros_type == "json":
        try:
            return json.loads(value)
        except json.JSONDecodeError as e:
            raise ConfigError(f"not valid JSON: {e}") from None
    return list(value) if ros_type.endswith("_array") else value


def values(cfg: StackConfig, node_key: str) -> dict[str, Any]:
    """Node ``node_key``'s parameter values in ``cfg`` (what its params file holds)."""
    data = dataclasses.asdict(cfg)
    out = {}
    for spec in specs(node_key):
        node: Any = data
        for part in spec.name.split("."):
            node = node[part]
        out[spec.name] = to_ros(spec.ros_type, node)
    return out


def with_values(cfg: StackConfig, node_key: str, new: dict[str, Any]) -> StackConfig:
    """``cfg`` with the parameters in ``new`` (name -> parameter value), validated as a loaded file is.
    Raises ConfigError naming the key and what is allowed."""
    types_ = {s.name: s.ros_type for s in specs(node_key)}
    data = dataclasses.asdict(cfg)
    for name, value in new.items():
        try:
            converted = from_ros(types_[name], value)
        except ConfigError as e:
            raise ConfigError(f"{name}: {e}") from None
        *parents, leaf = name.split(".")
        node = data
        for p in parents:
            node = node[p]
        node[leaf] = converted
    return parse(StackConfig, data)


def params_file(nodes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A ROS params file's content: ROS node name -> its parameter values."""
    return {name: {"ros__parameters": vals} for name, vals in nodes.items()}
