"""How every node process starts, spins and stops rclpy.

SIGINT and SIGTERM are Python's KeyboardInterrupt here, not rclpy's signal handler, and the main
thread spins in short waits, so a node's ``finally`` writes its metrics within a tenth of a second of
the signal and before anything in rclpy or DDS shuts down. Under rclpy's own handler, nodes on a
loaded machine can hang on the way out without writing their metrics.

Nodes spin on rclpy's EventsExecutor (its dispatch is C++) unless they need callbacks side by side:
at 200 /clock messages a second every node runs a callback per message, and rclpy's Python
executors spend several times the CPU of the events executor on that alone.
``PARKOUR_EXECUTOR=single`` falls back to the single-threaded one.

rclpy is imported inside the functions: the rest of ``parkour_core`` stays free of ROS.
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading
from collections.abc import Callable
from typing import Any, Protocol

from parkour_core.interfaces import Qos, Topic
from parkour_core.tick_grid import TickGrid

SPIN_WAIT_S = 0.1


class _Executor(Protocol):
    def spin_once(self, timeout_sec: float | None = None) -> None: ...


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

# start_node puts the bringup's pid here; the node takes it out of its environment (its own children
# are not the bringup's).
BRINGUP_PID_ENV = "PARKOUR_BRINGUP_PID"
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def take_signals() -> None:
    """SIGINT, SIGTERM and SIGHUP (the terminal closed) raise KeyboardInterrupt in the main thread.

    Installed explicitly: a process started in the background by a non-interactive shell inherits
    SIGINT ignored, and Python then leaves it so (the node would never see the bringup's SIGINT, and
    the bringup would never see the user's, leaving its nodes running when it was killed).
    A no-op off the main thread, where Python cannot install handlers (a node built inside a test).
    """
    if threading.current_thread() is threading.main_thread():
        for signum in STOP_SIGNALS:
            signal.signal(signum, _interrupt)


def stop_with_bringup() -> None:
    """A node the bringup started gets SIGTERM when the bringup dies, however it dies (SIGKILL, a
    crash): it then writes its metrics and leaves, instead of running on unwatched beside the next
    bringup's nodes (two supervisors writing rt/lowcmd).

    The nodes run in sessions of their own (the terminal's Ctrl-C reaches the bringup only), so
    nothing else would tell them. Linux's parent-death signal; elsewhere a no-op.
    """
    bringup_pid = os.environ.pop(BRINGUP_PID_ENV, "")
    if not bringup_pid:
        return
    try:
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != int(bringup_pid):  # it died before the signal was set up
        raise SystemExit(f"the bringup that started this node (pid {bringup_pid}) is gone; not starting")


def init_rclpy(ros_args: list[str]) -> None:
    """``rclpy.init`` with the node's ``--ros-args`` and without rclpy's signal handlers."""
    import rclpy
    from rclpy.signals import SignalHandlerOptions

    take_signals()
    stop_with_bringup()
    rclpy.init(args=["--ros-args", *ros_args] if ros_args else None, signal_handler_options=SignalHandlerOptions.NO)


def spin_until_interrupted(executor: _Executor) -> None:
    """Run the executor's callbacks until SIGINT/SIGTERM or an rclpy shutdown."""
    import rclpy
    from rclpy.executors import ExternalShutdownException

    try:
        while rclpy.ok():
            executor.spin_once(timeout_sec=SPIN_WAIT_S)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass


def default_executor() -> Any:
    """rclpy's EventsExecutor, or the single-threaded one with ``PARKOUR_EXECUTOR=single``."""
    import os

    if os.environ.get("PARKOUR_EXECUTOR", "events") == "single":
        from rclpy.executors import SingleThreadedExecutor

        return SingleThreadedExecutor()
    from rclpy.experimental import EventsExecutor

    return EventsExecutor()


def spin_node(node: Any, on_exit: Callable[[], None], executor: Any = None) -> None:
    """A node process's main loop: spin ``node`` (on ``executor``, default :func:`default_executor`)
    until SIGINT/SIGTERM, then ``on_exit`` (write the metrics) before the executor, node and rclpy go down."""
    executor = executor if executor is not None else default_executor()
    executor.add_node(node)
    try:
        spin_until_interrupted(executor)
    finally:
        on_exit()
        executor.shutdown()
        node.destroy_node()
        shutdown_rclpy()


def qos_profile(qos: Qos) -> Any:
    """rclpy's QoSProfile for a profile of :mod:`parkour_core.interfaces`."""
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=qos.depth,
        reliability=ReliabilityPolicy.RELIABLE if qos.reliable else ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if qos.latched else DurabilityPolicy.VOLATILE,
    )


def message_class(msgtype: str) -> Any:
    """``sensor_msgs/msg/JointState`` -> the rclpy message class."""
    import importlib

    package, kind, name = msgtype.split("/")
    return getattr(importlib.import_module(f"{package}.{kind}"), name)


def create_publisher(node: Any, topic: Topic, qos: Qos | None = None, name: str | None = None) -> Any:
    """A publisher on ``topic``: its relative name (or ``name``, one the config chose), type and QoS (or ``qos``)."""
    return node.create_publisher(message_class(topic.msgtype), name or topic.name, qos_profile(qos or topic.qos))


def create_subscription(
    node: Any,
    topic: Topic,
    callback: Callable[[Any], None],
    qos: Qos | None = None,
    raw: bool = False,
    name: str | None = None,
) -> Any:
    """A subscription to ``topic``, as :func:`create_publisher`; ``raw``: the callback gets the serialized bytes."""
    msg_type = message_class(topic.msgtype)
    return node.create_subscription(msg_type, name or topic.name, callback, qos_profile(qos or topic.qos), raw=raw)


class ConfigParameters:
    """A node's config keys as ROS parameters (:mod:`parkour_core.params`), declared by :func:`declare_from_config`.

    ``cfg`` is the stack config with the parameters' values (a params file or ``-p`` overrides them at
    declaration). A set request passes rclpy's own checks (type, range, read-only) and then the config's
    (choices, cross-key rules) before it is accepted; accepted, ``cfg`` follows it and ``on_change(cfg)`` runs.
    """

    def __init__(self, node: Any, cfg: Any, node_key: str, on_change: Callable[[Any], None] | None = None) -> None:
        from rcl_interfaces.msg import SetParametersResult
        from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException

        from parkour_core import params
        from parkour_core.config import ConfigError

        self.node, self.node_key, self.on_change = node, node_key, on_change
        self._result = SetParametersResult
        self.specs = {s.name: s for s in params.specs(node_key)}
        if on_change is None and any(s.live for s in self.specs.values()):
            raise ValueError(f"{node_key}: live parameters need an on_change that applies them")
        initial = params.values(cfg, node_key)
        for name, spec in self.specs.items():
            try:
                node.declare_parameter(name, initial[name], _descriptor(spec))
            except (InvalidParameterTypeException, InvalidParameterValueException) as e:
                raise ConfigError(f"parameter {name}: {' '.join(str(e).split())}") from None
        declared = {name: node.get_parameter(name).value for name in self.specs}
        self.cfg = params.with_values(cfg, node_key, declared)  # raises ConfigError on a bad override
        node.add_on_set_parameters_callback(self._check)
        node.add_post_set_parameters_callback(self._apply)

    def _check(self, parameters: list[Any]) -> Any:
        from parkour_core import params
        from parkour_core.config import ConfigError

        ours = {p.name: p.value for p in parameters if p.name in self.specs}
        if ours:
            try:
                params.with_values(self.cfg, self.node_key, ours)
            except ConfigError as e:
                return self._result(successful=False, reason=str(e))
        return self._result(successful=True)

    def _apply(self, parameters: list[Any]) -> None:
        from parkour_core import params

        ours = {p.name: p.value for p in parameters if p.name in self.specs}
        if ours:
            self.cfg = params.with_values(self.cfg, self.node_key, ours)
            if self.on_change is not None:
                self.on_change(self.cfg)


def declare_from_config(
    node: Any, cfg: Any, node_key: str, on_change: Callable[[Any], None] | None = None
) -> ConfigParameters:
    """Declare node ``node_key``'s config keys as parameters on ``node``; its ``cfg`` is the config to run."""
    return ConfigParameters(node, cfg, node_key, on_change)


def _descriptor(spec: Any) -> Any:
    from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, ParameterType

    kind = "string" if spec.ros_type == "json" else spec.ros_type
    description = spec.description or spec.name
    if spec.choices:
        description += f" (one of {list(spec.choices)})"
    if spec.ros_type == "json":
        description += " (JSON)"
    d = ParameterDescriptor(
        name=spec.name,
        type=getattr(ParameterType, f"PARAMETER_{kind.upper()}"),
        description=description,
        read_only=not spec.live,
        # An empty list carries no element type: arrays are typed by the config's check instead of rclpy's.
        dynamic_typing=spec.ros_type.endswith("_array"),
    )
    if spec.lo is not None and spec.hi is not None and spec.ros_type == "integer":
        d.integer_range = [IntegerRange(from_value=int(spec.lo), to_value=int(spec.hi), step=0)]
    elif spec.lo is not None and spec.hi is not None and spec.ros_type == "double":
        d.floating_point_range = [FloatingPointRange(from_value=float(spec.lo), to_value=float(spec.hi), step=0.0)]
    if spec.choices:
        d.additional_constraints = f"one of {list(spec.choices)}"
    return d


def take_now(subscription: Any) -> Any | None:
    """The next message waiting on ``subscription``, taken here instead of by the executor (None: none
    waits). For a callback that must wait for a message its own executor would deliver only after the
    callback returns; the executor then finds nothing to take."""
    with subscription.handle:
        taken = subscription.handle.take_message(subscription.msg_type, subscription.raw)
    return None if taken is None else taken[0]


def shutdown_rclpy() -> None:
    import rclpy

    if rclpy.ok():
        rclpy.shutdown()


class PeriodicTick:
    """Calls ``callback()`` once per ``period_s`` of ``node``'s clock, on the grid of its multiples.

    On sim time a node's rclpy timer is not reliable: the events executor can fire it twice at one sim
    time and then skip a period (next due two periods on), and with the bridge holding sim time at each
    tick until the node answers, that deadlocks the graph until the bridge gives up on it.
    Here, on sim time the tick runs from the clock's own update (a jump callback, in the /clock
    subscription's callback): on the first /clock at or after each due time, once. On wall time a
    steady timer drives it, its grid the timer's own due times read on the same steady clock (the
    node's ROS clock follows the system time, which NTP may step back), and a second fire for one due
    time is dropped.

    Keep the object for as long as the node ticks: rcl calls the jump callback through it (a dropped
    PeriodicTick crashes the process at the next /clock).
    """

    def __init__(self, node: Any, period_s: float, callback: Callable[[], None], sim_time: bool) -> None:
        from rclpy.clock import Clock, ClockType, JumpThreshold
        from rclpy.duration import Duration

        self.callback = callback
        self._jump: Any = None
        self._timer: Any = None
        if sim_time:
            # the grid the simulator holds sim time at
            self.grid = TickGrid.on_sim_time(period_s)
            self.clock = node.get_clock()
            threshold = JumpThreshold(min_forward=Duration(nanoseconds=1), min_backward=None, on_clock_change=True)
            self._jump = self.clock.create_jump_callback(threshold, post_callback=lambda _jump: self._due())
        else:
            self.clock = Clock(clock_type=ClockType.STEADY_TIME)
            self.grid = TickGrid.on_steady_clock(period_s, self.clock.now().nanoseconds * 1e-9)
            self._timer = node.create_timer(period_s, self._due, clock=self.clock)
        self.dropped = 0  # timer fires for a due time that already ticked

    def _due(self) -> None:
        if self.grid.reached(self.clock.now().nanoseconds * 1e-9) is None:
            if self._timer is not None:
                self.dropped += 1
            return
        self.callback()
