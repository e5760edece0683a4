"""teleop_node: an operator's input -> /cmd_vel, /teleop/joy and the supervisor's mode services.

Sources (``teleop.source``, or ``--source``):
  joy       sensor_msgs/Joy on ``teleop.joy_topic`` from any joy node, indices per ``teleop.layout``
  gamepad   an evdev device (``teleop.device``; '' = the first gamepad), codes per ``teleop.layout``
  keyboard  the terminal on stdin (simulation); keys in parkour_core.teleop.KEYBOARD_HELP
  remote    the Unitree remote, as the supervisor republishes it from rt/lowstate on /teleop/remote

The mapping is parkour_core.teleop.TeleopMapper. Outputs, at ``teleop.rate_hz``: the velocity on
``cmd_vel.teleop_topic`` while the operator commands one, then silence, so the autonomy topic drives
again (parkour_core.command_mux); the normalised ``/teleop/joy`` (not for the remote); chords as
``/supervisor/<request>`` calls on their rising edge. In simulation it releases the elastic band once
the supervisor first reaches STAND. Why each output is as it is: :class:`TeleopNode`.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
from pathlib import Path
from typing import Any

from parkour_core import interfaces as topics
from parkour_core.config import ConfigError, StackConfig
from parkour_core.nodeargs import mark_ready, parse_node_args
from parkour_core.ros_process import (
    create_publisher,
    create_subscription,
    declare_from_config,
    init_rclpy,
    shutdown_rclpy,
    spin_until_interrupted,
)
from parkour_core.stats import write_json
from parkour_core.teleop import (
    KEYBOARD_HELP,
    LAYOUTS,
    KeyboardPad,
    PadSnapshot,
    TeleopMapper,
    TeleopOutput,
    TeleopRequest,
    TeleopSettings,
    normalised_joy,
    snapshot_from_joy,
    snapshot_from_remote_joy,
)

SOURCES = ("joy", "gamepad", "keyboard", "remote")


class TeleopNode:
    """The node. The velocity goes out while the stick is out of its deadzone, during the ramp down after
    it, and for ``teleop.release_hold_s`` of zeros. ``/teleop/joy`` goes out while the input is present, so
    the supervisor sees the gamepad chords and notices a lost gamepad when it stops. Chords call
    ``/supervisor/<request>`` in the callback that saw them (the e-stop does not wait for a tick); the
    supervisor reads the same chords from /teleop/joy as well, so a request reaches it on two paths (the
    service also answers with what it did, which is logged). The remote's chords are the supervisor's own
    (``remote_*_keys``, read from rt/lowstate): from the remote this node maps only the sticks.
    """

    def __init__(self, cfg: StackConfig, run_dir: Path | None, ros_args: list[str], source: str) -> None:
        import rclpy

        if source not in SOURCES:
            raise ValueError(f"teleop source {source!r} is not one of {list(SOURCES)}")
        init_rclpy(ros_args)
        self.node = rclpy.create_node("teleop_node")
        self.log = self.node.get_logger()
        self.lock = threading.Lock()  # readers run in their own threads
        # The config it runs on is its parameters'; the speed limits may be set while it runs.
        self.params = declare_from_config(self.node, cfg, "teleop", self._on_params)
        cfg = self.params.cfg
        self.cfg, self.run_dir, self.source = cfg, run_dir, source
        self.layout = LAYOUTS[cfg.teleop.layout]
        self.settings = TeleopSettings.from_config(cfg)
        self.mapper = TeleopMapper(self.settings)
        self.keyboard = KeyboardPad(self.settings.chords, cfg.teleop.keyboard_hold_s) if source == "keyboard" else None
        self.gamepad: Any = None  # readers.EvdevReader, set by main for the gamepad source
        self._create_outputs()
        self._subscribe_inputs()
        self.band_released = False
        self.was_lost = False
        self.requests: list[dict] = []
        self.losses: list[dict] = []
        self.ticks = 0
        self.log_rows: list[dict] = []  # the commanded velocity per tick, as script.json's "log"
        self.last_output: TeleopOutput | None = None
        self.timer = self.node.create_timer(1.0 / cfg.teleop.rate_hz, self.tick)

    def _create_outputs(self) -> None:
        """The operator's velocity, the normalised pad (not for the remote) and the supervisor's request services."""
        from geometry_msgs.msg import Twist
        from sensor_msgs.msg import Joy
        from std_srvs.srv import Trigger

        self._Twist, self._Joy, self._Trigger = Twist, Joy, Trigger
        self.cmd_pub = create_publisher(self.node, topics.TELEOP_CMD_VEL, name=self.cfg.cmd_vel.teleop_topic)
        self.release_hold_s = self.cfg.teleop.release_hold_s
        self.commanded_at: float | None = None  # the last tick the operator's velocity was not zero
        self.joy_pub = create_publisher(self.node, topics.TELEOP_JOY) if self.source != "remote" else None
        self.clients = {r: self.node.create_client(Trigger, topics.supervisor_service(r.value)) for r in TeleopRequest}

    def _subscribe_inputs(self) -> None:
        """The joy or remote source's topic; in simulation, the supervisor's mode (to release the band)."""
        from std_srvs.srv import Trigger

        if self.source == "joy":
            create_subscription(self.node, topics.JOY, self._on_joy, name=self.cfg.teleop.joy_topic)
        elif self.source == "remote":
            create_subscription(self.node, topics.REMOTE, self._on_remote)
        self.band_client = None
        if self.cfg.mode == "sim":
            self.band_client = self.node.create_client(Trigger, topics.RELEASE_BAND)
            create_subscription(self.node, topics.SUPERVISOR_STATE, self._on_mode)

    def _on_params(self, cfg: StackConfig) -> None:
        """A live parameter changed (the speed limits): the mapper uses the new settings from its next tick."""
        with self.lock:
            self.cfg = cfg
            self.settings = TeleopSettings.from_config(cfg)
            self.mapper.settings = self.settings

    def now(self) -> float:
        return self.node.get_clock().now().nanoseconds * 1e-9

    # ------------------------------------------------------------------ inputs
    def observe(self, snapshot: PadSnapshot) -> None:
        with self.lock:
            fired = self.mapper.observe(snapshot)
        if self.source == "remote":
            return  # the supervisor reads the remote's chords from rt/lowstate itself
        for request in fired:
            self._request(request)

    def _on_joy(self, msg) -> None:
        self.observe(snapshot_from_joy(self.now(), msg.axes, msg.buttons, self.layout))

    def _on_remote(self, msg) -> None:
        self.observe(snapshot_from_remote_joy(self.now(), msg.axes, msg.buttons))

    def on_key(self) -> None:
        assert self.keyboard is not None
        self.observe(self.keyboard.snapshot(self.now()))

    def on_gamepad_frame(self, snapshot: PadSnapshot) -> None:
        self.observe(snapshot)

    def on_input_lost(self, reason: str) -> None:
        self.log.error(f"input lost: {reason}")
        with self.lock:
            self.mapper.input_lost()

    def _on_mode(self, msg) -> None:
        band = self.band_client
        if msg.mode == msg.STAND and not self.band_released and band is not None and band.service_is_ready():
            band.call_async(self._Trigger.Request())
            self.band_released = True
            self.log.info("STAND reached: elastic band released")

    def _request(self, request: TeleopRequest) -> None:
        client = self.clients[request]
        row = {"t": round(self.now(), 4), "request": request.value, "sent": client.service_is_ready()}
        self.requests.append(row)
        if not row["sent"]:
            self.log.warning(f"{client.service_name} is not available; request dropped")
            return
        self.log.info(f"operator: {request.value}")

        def answered(future) -> None:
            response = future.result()
            if response is not None:
                self.log.info(f"{client.service_name}: {response.message}")

        client.call_async(self._Trigger.Request()).add_done_callback(answered)

    # ------------------------------------------------------------------ the tick
    def tick(self) -> None:
        now = self.now()
        if self.keyboard is not None:
            self.observe(self.keyboard.snapshot(now))
        elif self.gamepad is not None:
            snapshot = self.gamepad.snapshot(now)
            if snapshot is not None:
                self.observe(snapshot)
        with self.lock:
            out = self.mapper.tick(now)
            latest = self.mapper.latest
        self.last_output = out
        self.ticks += 1
        if out.input_lost != self.was_lost:
            self.was_lost = out.input_lost
            self.losses.append({"t": round(now, 4), "lost": out.input_lost})
            if out.input_lost:
                self.log.warning(
                    "operator input lost: zero velocity; /teleop/joy stops (the supervisor stops the walk)"
                )
            else:
                self.log.info("operator input is back")
        if any(abs(v) > 1e-9 for v in out.velocity):
            self.commanded_at = now
        if self.commanded_at is not None and now - self.commanded_at <= self.release_hold_s:
            cmd = self._Twist()
            cmd.linear.x, cmd.linear.y, cmd.angular.z = out.velocity
            self.cmd_pub.publish(cmd)
            self.log_rows.append({"t": round(now, 4), "cmd": [round(v, 4) for v in out.velocity]})
        if self.joy_pub is not None and latest is not None and not out.input_lost:
            joy = self._Joy()
            joy.header.stamp = self.node.get_clock().now().to_msg()
            joy.axes, joy.buttons = normalised_joy(latest)
            self.joy_pub.publish(joy)

    def write_metrics(self) -> None:
        if self.run_dir is None:
            return
        write_json(
            self.run_dir / "teleop.json",
            {
                "source": self.source,
                "ticks": self.ticks,
                "requests": self.requests,
                "losses": self.losses,
                "log": self.log_rows,
            },
        )


def _spin_in_background(node) -> threading.Thread:
    import rclpy
    from rclpy.executors import ExternalShutdownException

    def spin() -> None:
        with contextlib.suppress(KeyboardInterrupt, ExternalShutdownException):
            rclpy.spin(node)

    thread = threading.Thread(target=spin, name="teleop-spin", daemon=True)
    thread.start()
    return thread


def main(argv: list[str] | None = None) -> int:
    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

    from parkour_teleop.readers import (
        EvdevReader,
        GamepadUnavailable,
        KeyboardReader,
        open_evdev_device,
        raw_terminal,
        terminal_chars,
    )

    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--source", choices=SOURCES, default=None)
    known, rest = pre.parse_known_args(argv if argv is not None else sys.argv[1:])
    args = parse_node_args(__doc__ or "", rest, "teleop")
    source = known.source or args.config.teleop.source
    device = None
    if source == "gamepad":
        try:
            device = open_evdev_device(args.config.teleop.device)
        except GamepadUnavailable as e:
            print(f"teleop_node: {e}", file=sys.stderr)
            return 2
    try:
        node = TeleopNode(args.config, args.run_dir, args.ros_args, source)
    except ConfigError as e:
        print(f"teleop_node: bad parameter: {e}", file=sys.stderr)
        shutdown_rclpy()
        return 2
    if device is not None:
        reader = EvdevReader(node.layout, node.now, node.on_gamepad_frame, node.on_input_lost)
        node.gamepad = reader
        threading.Thread(target=reader.run, args=(device.read_loop(),), name="evdev", daemon=True).start()
    mark_ready(args.run_dir, "teleop")
    try:
        if source == "keyboard":
            assert node.keyboard is not None
            print(f"teleop (keyboard): {KEYBOARD_HELP}", flush=True)
            _spin_in_background(node.node)
            with raw_terminal():
                KeyboardReader(node.keyboard, node.now, node.on_key).run(
                    terminal_chars(should_stop=lambda: not rclpy.ok())
                )
        else:
            executor = SingleThreadedExecutor()
            executor.add_node(node.node)
            spin_until_interrupted(executor)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.write_metrics()
        shutdown_rclpy()
        node.node.destroy_node()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
