"""How every node process starts, spins and stops rclpy.

SIGINT and SIGTERM are Python's KeyboardInterrupt here, not rclpy's signal handler, and the main
thread spins in short waits, so a node's ``finally`` writes its metrics within a tenth of a second of
the signal and before anything in rclpy or DDS shuts down. Under rclpy's own handler, nodes on a
loaded 2-core CI machine sometimes hung on the way out without writing their metrics (the
supervisor, the policy node and the script node, one in each of three runs).

rclpy is imported inside the functions: the rest of ``parkour_core`` stays free of ROS.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Any, Protocol

SPIN_WAIT_S = 0.1


class _Executor(Protocol):
    def spin_once(self, timeout_sec: float | None = None) -> None: ...


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def take_signals() -> None:
    """SIGINT and SIGTERM raise KeyboardInterrupt in the main thread.

    Installed explicitly: a process started in the background by a non-interactive shell inherits
    SIGINT ignored, and Python then leaves it so (the node would never see the bringup's SIGINT).
    A no-op off the main thread, where Python cannot install handlers (a node built inside a test).
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _interrupt)
        signal.signal(signal.SIGTERM, _interrupt)


def init_rclpy(ros_args: list[str]) -> None:
    """``rclpy.init`` with the node's ``--ros-args`` and without rclpy's signal handlers."""
    import rclpy
    from rclpy.signals import SignalHandlerOptions

    take_signals()
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


def spin_node(node: Any, on_exit: Callable[[], None], executor: Any = None) -> None:
    """A node process's main loop: spin ``node`` (on ``executor``, default single-threaded) until
    SIGINT/SIGTERM, then ``on_exit`` (write the metrics) before the executor, node and rclpy go down."""
    from rclpy.executors import SingleThreadedExecutor

    executor = executor if executor is not None else SingleThreadedExecutor()
    executor.add_node(node)
    try:
        spin_until_interrupted(executor)
    finally:
        on_exit()
        executor.shutdown()
        node.destroy_node()
        shutdown_rclpy()


def shutdown_rclpy() -> None:
    import rclpy

    if rclpy.ok():
        rclpy.shutdown()
