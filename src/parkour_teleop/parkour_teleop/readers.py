"""Input readers that need a device or a terminal: thin shells around parkour_core.teleop.

The evdev gamepad reader consumes (type, code, value) tuples, so tests feed it a list; only
:func:`open_evdev_device` imports python-evdev. The keyboard reader consumes characters from any
file-like stream; only :func:`raw_terminal` touches termios.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from parkour_core.teleop import EV_SYN, EvdevPadState, KeyboardPad, PadLayout, PadSnapshot

CTRL_C, CTRL_D = "\x03", "\x04"


class GamepadUnavailable(RuntimeError):
    pass


class EvdevReader:
    """Feeds events into the pad state; calls ``on_frame`` with a snapshot at every EV_SYN (the
    end of one report from the pad) and ``on_lost`` when the event source ends or fails."""

    def __init__(
        self,
        layout: PadLayout,
        clock: Callable[[], float],
        on_frame: Callable[[PadSnapshot], None],
        on_lost: Callable[[str], None],
    ) -> None:
        self.state = EvdevPadState(layout)
        self.clock = clock
        self.on_frame = on_frame
        self.on_lost = on_lost
        self.alive = False

    def run(self, events: Iterable[Any]) -> None:
        """``events``: (type, code, value) tuples or python-evdev InputEvents (anything with
        .type, .code, .value)."""
        self.alive = True
        try:
            for event in events:
                ev = event if isinstance(event, tuple) else (event.type, event.code, event.value)
                self.state.feed([ev])
                if ev[0] == EV_SYN:
                    self.on_frame(self.state.snapshot(self.clock()))
            reason = "the gamepad's event stream ended"
        except OSError as e:  # unplugged: ENODEV
            reason = f"the gamepad failed: {e}"
        self.alive = False
        self.on_lost(reason)

    def snapshot(self, stamp_s: float) -> PadSnapshot | None:
        """The pad now: a pad sends events only on change, so its state holds until the next."""
        return self.state.snapshot(stamp_s) if self.alive else None


def open_evdev_device(path: str) -> Any:
    """The evdev device at ``path``, or the first one with gamepad buttons; a clear error otherwise."""
    if not path and not os.path.isdir("/dev/input"):
        raise GamepadUnavailable(
            "no /dev/input on this machine: no gamepad can be opened here. Use --teleop keyboard, or run a "
            "joy node and --teleop joy."
        )
    try:
        import evdev  # type: ignore[import-not-found]
    except ImportError:
        raise GamepadUnavailable("python-evdev is not installed (pip install evdev); or use --teleop joy") from None
    if path:
        try:
            return evdev.InputDevice(path)
        except OSError as e:
            raise GamepadUnavailable(f"cannot open gamepad {path}: {e} (permissions: the 'input' group)") from None
    btn_south = 0x130
    for candidate in evdev.list_devices():
        device = evdev.InputDevice(candidate)
        if btn_south in device.capabilities().get(evdev.ecodes.EV_KEY, []):
            return device
        device.close()
    raise GamepadUnavailable("no gamepad found under /dev/input (none with BTN_SOUTH); plugged in? permissions?")


class KeyboardReader:
    """Characters -> key presses on a :class:`KeyboardPad`. Stops at Ctrl-C / Ctrl-D or the end."""

    def __init__(self, pad: KeyboardPad, clock: Callable[[], float], on_press: Callable[[], None]) -> None:
        self.pad = pad
        self.clock = clock
        self.on_press = on_press

    def run(self, chars: Iterable[str]) -> None:
        for ch in chars:
            if ch in (CTRL_C, CTRL_D):
                return
            self.pad.press(ch, self.clock())
            self.on_press()


def terminal_chars(stream: Any = None, should_stop: Callable[[], bool] = lambda: False) -> Iterator[str]:
    """Characters from a terminal in raw mode, one at a time, until the stream ends or
    ``should_stop``; polls so a stop request is seen within 0.1 s."""
    stream = stream or sys.stdin
    fd = stream.fileno()
    while not should_stop():
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            data = os.read(fd, 1)
            if not data:
                return
            yield data.decode(errors="replace")


@contextlib.contextmanager
def raw_terminal(stream: Any = None) -> Iterator[None]:
    """Raw mode (keys arrive at once, unechoed; Ctrl-C arrives as a character), restored on exit."""
    import termios
    import tty

    stream = stream or sys.stdin
    fd = stream.fileno()
    if not os.isatty(fd):
        raise RuntimeError("the keyboard source needs a terminal on stdin")
    saved = termios.tcgetattr(fd)
    try:
        tty.setraw(fd)
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
