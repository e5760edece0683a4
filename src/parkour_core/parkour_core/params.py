"""Each node's ROS parameters, derived from the stack config's declarations (``parkour_core.config``).

A node's parameters are the config keys it reads, named as in the stack YAML (``supervisor.max_tilt_rad``),
with the field's type, default, range, choices and doc. A key is settable while the node runs only if its
field says ``live`` and the node applies a change at once (``LIVE_NODES``); every other key is read-only,
safety limits and the DDS domain among them. Lists and mappings that ROS parameters cannot type (the
script's steps, stand gains) travel as JSON text. The bringup validates the user's stack YAML once and
writes one ROS params file for the graph (:func:`params_file_for`); a node runs on the config its own
parameters make (:func:`node_config`), never on the stack YAML. Plain data, free of ROS:
``parkour_core.ros_process.declare_from_config`` declares them on a node, and the reference page lists them.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from parkour_core import interfaces
from parkour_core.config import _ITEM_TYPES, ConfigError, StackConfig, parse, yaml_error_line

_CMD_VEL = ("cmd_vel.teleop_topic", "cmd_vel.teleop_timeout_s", "cmd_vel.autonomy_topic")  # the velocity mux
# The config keys each node declares: a section (``teleop``) or one key (``supervisor.max_tilt_rad``): every
# key it reads, and every key a config rule over those ties to them (the supervisor's gamepad chords must
# differ from ``teleop.damp_buttons``), so that its parameters alone make a valid config.
# policy_node's ``policy.bundle`` is its own live ``bundle`` parameter (OWN_PARAMS: setting it swaps the model).
NODE_PARAMS: dict[str, tuple[str, ...]] = {
    "supervisor": ("robot", "mode", "dds", "supervisor", *_CMD_VEL, "depth.stale_after_s", "policy.bundle",
                   "policy.command_timeout_s", "teleop.damp_buttons"),
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
    "recorder": ("robot", "mode", "policy.bundle"),
}  # fmt: skip

# Parameters a node declares under a name of its own, with its own set callback: node key -> {ROS name: config
# key}. The params file carries them; ``policy_node``'s ``bundle`` swaps the model when set (parkour model swap).
OWN_PARAMS: dict[str, dict[str, str]] = {"policy": {"bundle": "policy.bundle"}}

# The nodes that apply a changed config at once (declare_from_config's ``on_change``): a ``live`` field is
# settable on these only; on any other node that declares it, it stays read-only.
LIVE_NODES = frozenset({"teleop"})

# Parameters of ROS itself a params file may set beside a node's own.
ROS_OWN = frozenset({"use_sim_time"})

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
                      bool(m.get("live")) and node_key in LIVE_NODES, m.get("doc", ""))
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
    if value is None and ros_type.endswith("_array"):
        return []  # an empty list in a params file: rcl cannot type it and leaves the parameter unset
    if ros_type == "json":
        try:
            return json.loads(value)
        except json.JSONDecodeError as e:
            raise ConfigError(f"not valid JSON: {e}") from None
    return list(value) if ros_type.endswith("_array") else value


def values(cfg: StackConfig, node_key: str) -> dict[str, Any]:
    """Node ``node_key``'s parameter values in ``cfg``, as its declarations type them."""
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
    types_ |= {key: "string" for key in OWN_PARAMS.get(node_key, {}).values()}
    data = dataclasses.asdict(cfg)
    for name, value in new.items():
        if name not in types_:
            raise ConfigError(f"{name}: not a parameter of {ros_node_name(node_key)}")
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


def ros_node_name(node_key: str) -> str:
    """The ROS node that declares node ``node_key``'s parameters (``supervisor`` -> ``supervisor_node``)."""
    return interfaces.node(node_key).executable


def _get(cfg: StackConfig, key: str) -> Any:
    node: Any = cfg
    for part in key.split("."):
        node = getattr(node, part)
    return node


def file_values(cfg: StackConfig, node_key: str) -> dict[str, Any]:
    """Node ``node_key``'s section of a params file: its parameters and its own (``OWN_PARAMS``)."""
    own = {name: _get(cfg, key) for name, key in OWN_PARAMS.get(node_key, {}).items()}
    return values(cfg, node_key) | own


def node_config(node_key: str, vals: dict[str, Any], base: StackConfig | None = None) -> StackConfig:
    """The config node ``node_key`` runs on: ``vals`` (parameter name -> value, a params file's section) over
    ``base`` (default: the declarations' defaults), checked as a loaded file is. Raises ConfigError naming the
    key; a name the node does not declare is refused (a typo must not pass as a default)."""
    own = OWN_PARAMS.get(node_key, {})
    renamed = {own.get(name, name): value for name, value in vals.items() if name not in ROS_OWN}
    return with_values(base if base is not None else StackConfig(), node_key, renamed)


def restrict(cfg: StackConfig, node_key: str) -> StackConfig:
    """``cfg`` as node ``node_key`` sees it: its own keys, every other at its default (what a params file gives)."""
    return node_config(node_key, file_values(cfg, node_key))


def params_file_for(cfg: StackConfig, node_keys: typing.Iterable[str]) -> dict[str, Any]:
    """A ROS params file's content for the nodes ``node_keys`` of a graph, from a validated config. Each
    section names its node in any namespace (``/**/supervisor_node``), so a namespaced graph reads it too."""
    return params_file({f"/**/{ros_node_name(k)}": file_values(cfg, k) for k in node_keys if k in NODE_PARAMS})


def write_params_file(cfg: StackConfig, path: Path, node_keys: typing.Iterable[str] = ()) -> Path:
    """:func:`params_file_for` written to ``path`` (default nodes: every one that declares parameters)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(params_file_for(cfg, tuple(node_keys) or tuple(NODE_PARAMS)), sort_keys=False))
    return path


def _names_node(section: str, name: str) -> bool:
    """Whether a params file's section applies to the node ``name`` (in any namespace, as rcl matches it)."""
    return section in ("/**", "**") or section.lstrip("/").rsplit("/", 1)[-1] == name


def read_params_file(path: Path, node_key: str) -> StackConfig:
    """Node ``node_key``'s config from a params file, as rcl will give it the same parameters: before the node
    exists (what a process sets up first: realtime priority, CPU affinity, locked memory). Raises ConfigError
    in one line naming the file."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except OSError as e:
        raise ConfigError(f"params file {path}: {e.strerror or e}") from None
    except yaml.YAMLError as e:
        raise ConfigError(yaml_error_line(path, e)) from None
    name = ros_node_name(node_key)
    vals: dict[str, Any] = {}
    for section, content in data.items() if isinstance(data, dict) else ():
        if _names_node(str(section), name):
            given = content.get("ros__parameters") if isinstance(content, dict) else None
            if not isinstance(given, dict):
                raise ConfigError(f"params file {path}: {section}: expected a mapping under ros__parameters")
            vals |= given
    try:
        return node_config(node_key, vals)
    except ConfigError as e:
        raise ConfigError(f"{path}: {name}: {e}") from None
