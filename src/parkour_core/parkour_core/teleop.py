"""Teleoperation: operator inputs -> velocity command, discrete command and mode requests.

Pure (no ROS, no devices, no clocks): adapters turn each input (a sensor_msgs/Joy, evdev events,
terminal keys, the Unitree remote) into a :class:`PadSnapshot` in one normalised gamepad space,
and :class:`TeleopMapper` maps snapshots to commands. Tested with event sequences in
``test/test_teleop.py``.

The normalised space is the Xbox pad as joy_linux reports it, less the triggers: buttons
``PAD_BUTTONS`` (their index is the button index on ``/teleop/joy``, the space the supervisor's
``gamepad_*_buttons`` chords are written in) and axes ``PAD_AXES`` in ROS's joystick convention
(left and up positive, -1..1). The robot frame has x forward, y left, yaw counter-clockwise, so
vx = ly, vy = lx, yaw rate = rx.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

import numpy as np

from parkour_core.command import DiscreteCommandSpec, discretise_command

if TYPE_CHECKING:
    from parkour_core.config import StackConfig

PAD_BUTTONS: tuple[str, ...] = ("a", "b", "x", "y", "lb", "rb", "back", "start", "guide", "lstick", "rstick")
PAD_AXES: tuple[str, ...] = ("lx", "ly", "rx", "ry", "dpad_x", "dpad_y")


class TeleopRequest(Enum):
    """Mode requests an operator chord fires (the supervisor's service names)."""

    ESTOP = "estop"
    STAND_UP = "stand_up"
    ACTIVATE = "activate"
    STAND = "stand"
    DAMP = "damp"


@dataclass(frozen=True)
class PadSnapshot:
    """The whole pad at one instant: buttons held (names from PAD_BUTTONS) and axes (-1..1)."""

    stamp_s: float
    buttons: frozenset[str] = frozenset()
    axes: Mapping[str, float] = field(default_factory=dict)

    def axis(self, name: str) -> float:
        value = float(self.axes.get(name, 0.0))
        return min(1.0, max(-1.0, value)) if math.isfinite(value) else 0.0


# ----------------------------------------------------------------------------- layouts
# Where each normalised button and axis sits on a pad, per driver. ``joy_*``: indices in a
# sensor_msgs/Joy from joy_linux (axes already left/up positive); ``evdev_*``: Linux input event
# codes, with the raw range of each axis (min, max) and whether the raw axis grows right/down
# (Linux convention), which the reader flips into left/up positive.

EV_SYN, EV_KEY, EV_ABS = 0, 1, 3
_ABS_X, _ABS_Y, _ABS_Z, _ABS_RX, _ABS_RY, _ABS_RZ, _ABS_HAT0X, _ABS_HAT0Y = 0, 1, 2, 3, 4, 5, 16, 17


@dataclass(frozen=True)
class EvdevAxis:
    code: int
    lo: float
    hi: float
    flip: bool = True  # raw grows right/down; normalised is left/up positive


@dataclass(frozen=True)
class PadLayout:
    name: str
    joy_buttons: Mapping[str, int]
    joy_axes: Mapping[str, int]
    evdev_buttons: Mapping[str, int]
    evdev_axes: Mapping[str, EvdevAxis]


_XPAD_STICK = (-32768.0, 32767.0)
_XPAD_EVDEV_AXES = {
    "lx": EvdevAxis(_ABS_X, *_XPAD_STICK),
    "ly": EvdevAxis(_ABS_Y, *_XPAD_STICK),
    "rx": EvdevAxis(_ABS_RX, *_XPAD_STICK),
    "ry": EvdevAxis(_ABS_RY, *_XPAD_STICK),
    "dpad_x": EvdevAxis(_ABS_HAT0X, -1.0, 1.0),
    "dpad_y": EvdevAxis(_ABS_HAT0Y, -1.0, 1.0),
}
# xpad reports the Xbox X and Y buttons as BTN_X (0x133) and BTN_Y (0x134).
_XPAD_EVDEV_BUTTONS = {
    "a": 0x130, "b": 0x131, "x": 0x133, "y": 0x134, "lb": 0x136, "rb": 0x137,
    "back": 0x13A, "start": 0x13B, "guide": 0x13C, "lstick": 0x13D, "rstick": 0x13E,
}  # fmt: skip
_XPAD_JOY_BUTTONS = {name: i for i, name in enumerate(PAD_BUTTONS)}
_XPAD_JOY_AXES = {"lx": 0, "ly": 1, "rx": 3, "ry": 4, "dpad_x": 6, "dpad_y": 7}  # 2, 5: the triggers

_PS_JOY_BUTTONS = {
    "a": 0, "b": 1, "y": 2, "x": 3, "lb": 4, "rb": 5, "back": 8, "start": 9, "guide": 10, "lstick": 11, "rstick": 12,
}  # fmt: skip
# hid-playstation: triangle is BTN_NORTH (0x133), square BTN_WEST (0x134).
_PS_EVDEV_BUTTONS = {
    "a": 0x130, "b": 0x131, "y": 0x133, "x": 0x134, "lb": 0x136, "rb": 0x137,
    "back": 0x13A, "start": 0x13B, "guide": 0x13C, "lstick": 0x13D, "rstick": 0x13E,
}  # fmt: skip

LAYOUTS: dict[str, PadLayout] = {
    # Xbox 360/One through xpad / joy_linux.
    "xbox": PadLayout("xbox", _XPAD_JOY_BUTTONS, _XPAD_JOY_AXES, _XPAD_EVDEV_BUTTONS, _XPAD_EVDEV_AXES),
    # Logitech F710 with its switch on X (XInput): the kernel drives it with xpad, as an Xbox pad.
    "f710": PadLayout("f710", _XPAD_JOY_BUTTONS, _XPAD_JOY_AXES, _XPAD_EVDEV_BUTTONS, _XPAD_EVDEV_AXES),
    # DualShock 4 / DualSense through hid-playstation: cross, circle, triangle, square stand for
    # A, B, Y, X by position; sticks 0..255; L2/R2 are also buttons 6, 7 on joy_linux.
    "playstation": PadLayout(
        "playstation",
        _PS_JOY_BUTTONS,
        {"lx": 0, "ly": 1, "rx": 3, "ry": 4, "dpad_x": 6, "dpad_y": 7},
        _PS_EVDEV_BUTTONS,
        {
            "lx": EvdevAxis(_ABS_X, 0.0, 255.0),
            "ly": EvdevAxis(_ABS_Y, 0.0, 255.0),
            "rx": EvdevAxis(_ABS_RX, 0.0, 255.0),
            "ry": EvdevAxis(_ABS_RY, 0.0, 255.0),
            "dpad_x": EvdevAxis(_ABS_HAT0X, -1.0, 1.0),
            "dpad_y": EvdevAxis(_ABS_HAT0Y, -1.0, 1.0),
        },
    ),
}


def snapshot_from_joy(stamp_s: float, axes: Iterable[float], buttons: Iterable[int], layout: PadLayout) -> PadSnapshot:
    """A raw sensor_msgs/Joy (joy_linux, ``layout``'s indices) as a normalised snapshot; indices the
    message is too short for read as released / centred."""
    ax, bt = list(axes), list(buttons)
    held = frozenset(n for n, i in layout.joy_buttons.items() if i < len(bt) and bt[i])
    values = {n: float(ax[i]) for n, i in layout.joy_axes.items() if i < len(ax)}
    return PadSnapshot(stamp_s, held, values)


def normalised_joy(snapshot: PadSnapshot) -> tuple[list[float], list[int]]:
    """(axes, buttons) of the normalised ``/teleop/joy``: PAD_AXES and PAD_BUTTONS order."""
    return [snapshot.axis(n) for n in PAD_AXES], [int(n in snapshot.buttons) for n in PAD_BUTTONS]


def snapshot_from_normalised_joy(stamp_s: float, axes: Iterable[float], buttons: Iterable[int]) -> PadSnapshot:
    """The inverse of :func:`normalised_joy`."""
    ax, bt = list(axes), list(buttons)
    held = frozenset(n for i, n in enumerate(PAD_BUTTONS) if i < len(bt) and bt[i])
    return PadSnapshot(stamp_s, held, {n: float(ax[i]) for i, n in enumerate(PAD_AXES) if i < len(ax)})


class EvdevPadState:
    """Folds Linux input events ((type, code, value) tuples) into the pad's state.

    Pure: the events may come from a real device (``python-evdev``'s ``read_loop``) or a list. A
    gamepad sends events only on change, so the state is the pad until the next event.
    """

    def __init__(self, layout: PadLayout) -> None:
        self.layout = layout
        self._buttons_by_code = {code: name for name, code in layout.evdev_buttons.items()}
        self._axes_by_code = {a.code: (name, a) for name, a in layout.evdev_axes.items()}
        self._held: set[str] = set()
        self._axes: dict[str, float] = {}
        self.events = 0

    def feed(self, events: Iterable[tuple[int, int, int]]) -> None:
        for ev_type, code, value in events:
            self.events += 1
            if ev_type == EV_KEY and code in self._buttons_by_code:
                name = self._buttons_by_code[code]
                if value:  # 1 pressed, 2 autorepeat
                    self._held.add(name)
                else:
                    self._held.discard(name)
            elif ev_type == EV_ABS and code in self._axes_by_code:
                name, axis = self._axes_by_code[code]
                unit = 2.0 * (value - axis.lo) / (axis.hi - axis.lo) - 1.0  # -1..1, raw direction
                self._axes[name] = -unit if axis.flip else unit

    def snapshot(self, stamp_s: float) -> PadSnapshot:
        return PadSnapshot(stamp_s, frozenset(self._held), dict(self._axes))


# ----------------------------------------------------------------------------- the Unitree remote
# The remote's keys in the normalised space (A, B, X, Y sit as on an Xbox pad; L1/R1 are the
# bumpers); L2/R2/F1/F2 have no normalised button. The remote's lx and rx grow to the right
# (Unitree's deployers command vy = -lx, yaw = -rx): flipped into left positive.
REMOTE_TO_PAD: dict[str, str] = {
    "A": "a", "B": "b", "X": "x", "Y": "y", "L1": "lb", "R1": "rb", "Select": "back", "Start": "start",
}  # fmt: skip
_REMOTE_DPAD = {"Up": ("dpad_y", 1.0), "Down": ("dpad_y", -1.0), "Left": ("dpad_x", 1.0), "Right": ("dpad_x", -1.0)}


def snapshot_from_remote(
    stamp_s: float, keys: Iterable[str], lx: float, ly: float, rx: float, ry: float
) -> PadSnapshot:
    """The Unitree remote (keys held, sticks as it reports them) as a normalised snapshot."""
    keys = set(keys)
    axes = {"lx": -lx, "ly": ly, "rx": -rx, "ry": ry, "dpad_x": 0.0, "dpad_y": 0.0}
    for key, (axis, sign) in _REMOTE_DPAD.items():
        if key in keys:
            axes[axis] += sign
    return PadSnapshot(stamp_s, frozenset(REMOTE_TO_PAD[k] for k in keys if k in REMOTE_TO_PAD), axes)


def remote_from_snapshot(snapshot: PadSnapshot) -> tuple[frozenset[str], dict[str, float]]:
    """(remote keys, sticks) a Unitree remote would report for this pad: what the simulator puts
    in ``wireless_remote`` (encode with ``unitree.encode_wireless_remote``)."""
    pad_to_remote = {v: k for k, v in REMOTE_TO_PAD.items()}
    keys = {pad_to_remote[b] for b in snapshot.buttons if b in pad_to_remote}
    for key, (axis, sign) in _REMOTE_DPAD.items():
        if snapshot.axis(axis) * sign > 0.5:
            keys.add(key)
    sticks = {
        "lx": -snapshot.axis("lx"),
        "ly": snapshot.axis("ly"),
        "rx": -snapshot.axis("rx"),
        "ry": snapshot.axis("ry"),
    }
    return frozenset(keys), sticks


# The supervisor republishes the remote it reads from rt/lowstate as a sensor_msgs/Joy on
# /teleop/remote: axes REMOTE_JOY_AXES as the remote reports them, buttons in REMOTE_KEYS order.
REMOTE_JOY_AXES: tuple[str, ...] = ("lx", "ly", "rx", "ry", "l2")


def remote_joy(keys: Iterable[str], sticks: Mapping[str, float]) -> tuple[list[float], list[int]]:
    """(axes, buttons) of /teleop/remote for a remote with ``keys`` held and ``sticks``."""
    from parkour_core.unitree import REMOTE_KEYS

    held = set(keys)
    return [float(sticks.get(n, 0.0)) for n in REMOTE_JOY_AXES], [int(k in held) for k in REMOTE_KEYS]


def snapshot_from_remote_joy(stamp_s: float, axes: Iterable[float], buttons: Iterable[int]) -> PadSnapshot:
    """A /teleop/remote message as a normalised snapshot."""
    from parkour_core.unitree import REMOTE_KEYS

    ax, bt = list(axes), list(buttons)
    sticks = {n: float(ax[i]) if i < len(ax) else 0.0 for i, n in enumerate(REMOTE_JOY_AXES)}
    keys = [k for i, k in enumerate(REMOTE_KEYS) if i < len(bt) and bt[i]]
    return snapshot_from_remote(stamp_s, keys, sticks["lx"], sticks["ly"], sticks["rx"], sticks["ry"])


# ----------------------------------------------------------------------------- keyboard
# Simulation only. A terminal reports key presses (and the OS's autorepeat while a key is held),
# never releases: a key counts as held for ``hold_s`` after its last press or repeat.
KEY_AXES: dict[str, tuple[str, float]] = {
    "w": ("ly", 1.0), "s": ("ly", -1.0), "a": ("lx", 1.0), "d": ("lx", -1.0), "q": ("rx", 1.0), "e": ("rx", -1.0),
}  # fmt: skip
KEY_CHORDS: dict[str, TeleopRequest] = {
    " ": TeleopRequest.ESTOP,
    "1": TeleopRequest.STAND_UP,
    "2": TeleopRequest.ACTIVATE,
    "3": TeleopRequest.STAND,
    "0": TeleopRequest.DAMP,
}
KEYBOARD_HELP = (
    "w/s forward/back, a/d left/right, q/e turn; x stop; 1 stand up, 2 activate, 3 stand, 0 damp, "
    "space e-stop; Ctrl-C quits"
)


class KeyboardPad:
    """Terminal keys -> snapshots. Chord keys press the buttons of that request's chord."""

    def __init__(self, chords: Mapping[TeleopRequest, frozenset[str]], hold_s: float = 0.6) -> None:
        self.chords = chords
        self.hold_s = hold_s
        self._last_press: dict[str, float] = {}

    def press(self, key: str, now_s: float) -> None:
        key = key.lower()
        if key == "x":
            self._last_press.clear()
            return
        if key in KEY_AXES:
            # The opposite direction lets go at once: w then s reverses without waiting for w's hold.
            axis, sign = KEY_AXES[key]
            for other, (other_axis, other_sign) in KEY_AXES.items():
                if other_axis == axis and other_sign != sign:
                    self._last_press.pop(other, None)
        if key in KEY_AXES or key in KEY_CHORDS:
            self._last_press[key] = now_s

    def snapshot(self, now_s: float) -> PadSnapshot:
        held = [k for k, t in self._last_press.items() if now_s - t < self.hold_s]
        axes = dict.fromkeys(PAD_AXES, 0.0)
        buttons: set[str] = set()
        for key in held:
            if key in KEY_AXES:
                axis, sign = KEY_AXES[key]
                axes[axis] = sign
            elif KEY_CHORDS[key] in self.chords:
                buttons |= self.chords[KEY_CHORDS[key]]
        return PadSnapshot(now_s, frozenset(buttons), axes)


# ----------------------------------------------------------------------------- the mapping
@dataclass(frozen=True)
class TeleopSettings:
    deadzone: float = 0.1
    expo: float = 0.3
    max_vx_mps: float = 1.0
    max_vy_mps: float = 0.5
    max_yaw_rate_rps: float = 1.0
    accel_vx_mps2: float = 1.0
    accel_vy_mps2: float = 1.0
    accel_yaw_rps2: float = 2.0
    command_timeout_s: float = 0.5
    discrete: bool = False  # publish the discrete command's velocity (speed level along the sector)
    discrete_spec: DiscreteCommandSpec = field(default_factory=DiscreteCommandSpec)
    # Buttons (PAD_BUTTONS names) held together per request; the e-stop is checked first.
    chords: Mapping[TeleopRequest, frozenset[str]] = field(
        default_factory=lambda: {
            TeleopRequest.ESTOP: frozenset({"lb", "rb"}),
            TeleopRequest.STAND_UP: frozenset({"start", "a"}),
            TeleopRequest.ACTIVATE: frozenset({"start", "y"}),
            TeleopRequest.STAND: frozenset({"start", "x"}),
            TeleopRequest.DAMP: frozenset({"back", "b"}),
        }
    )

    @staticmethod
    def from_config(cfg: StackConfig) -> TeleopSettings:
        t, s = cfg.teleop, cfg.supervisor

        def chord(indices: list[int]) -> frozenset[str]:
            return frozenset(PAD_BUTTONS[i] for i in indices)

        # One source of truth: the supervisor's gamepad chords (it reads them from /teleop/joy too);
        # damp is the teleop's own (the supervisor has no gamepad damp chord).
        chords = {
            TeleopRequest.ESTOP: chord(s.gamepad_estop_buttons),
            TeleopRequest.STAND_UP: chord(s.gamepad_stand_up_buttons),
            TeleopRequest.ACTIVATE: chord(s.gamepad_activate_buttons),
            TeleopRequest.STAND: chord(s.gamepad_stand_buttons),
            TeleopRequest.DAMP: chord(t.damp_buttons),
        }
        return TeleopSettings(
            deadzone=t.deadzone,
            expo=t.expo,
            max_vx_mps=t.max_vx_mps,
            max_vy_mps=t.max_vy_mps,
            max_yaw_rate_rps=t.max_yaw_rate_rps,
            accel_vx_mps2=t.accel_vx_mps2,
            accel_vy_mps2=t.accel_vy_mps2,
            accel_yaw_rps2=t.accel_yaw_rps2,
            command_timeout_s=t.command_timeout_s,
            discrete=t.command_mode == "discrete",
            discrete_spec=DiscreteCommandSpec(
                tuple(float(x) for x in t.discrete_speed_levels_mps), int(t.discrete_heading_sectors)
            ),
            chords={r: c for r, c in chords.items() if c},
        )


def shape_axis(value: float, deadzone: float, expo: float) -> float:
    """Deadzone, then expo: |x| inside the deadzone is 0; outside it is rescaled to 0..1 (no jump
    at the edge) and curved as (1 - expo) x + expo x^3 (fine control near centre, full at the end)."""
    if not math.isfinite(value):
        return 0.0
    magnitude = min(1.0, abs(value))
    if magnitude <= deadzone:
        return 0.0
    x = (magnitude - deadzone) / (1.0 - deadzone)
    return math.copysign((1.0 - expo) * x + expo * x**3, value)


@dataclass(frozen=True)
class TeleopOutput:
    velocity: tuple[float, float, float]  # vx m/s, vy m/s, yaw rate rad/s (after limits and ramp)
    discrete: tuple[int, int]  # (speed level index, heading sector index) of ``velocity``
    input_lost: bool  # snapshots arrived, then none for command_timeout_s (or the adapter lost it)


class TeleopMapper:
    """Snapshots in, commands out. ``observe`` each snapshot as it arrives (mode requests fire on
    the rising edge of a chord, at once: an e-stop must not wait for the next tick); ``tick`` at
    the command rate for the velocity."""

    def __init__(self, settings: TeleopSettings) -> None:
        self.settings = settings
        self.latest: PadSnapshot | None = None
        self._held: set[TeleopRequest] = set()
        self._velocity = np.zeros(3)
        self._last_tick_s: float | None = None
        self._lost_by_adapter = False

    def observe(self, snapshot: PadSnapshot) -> list[TeleopRequest]:
        """Requests whose chord became held with this snapshot (the e-stop first). A chord held on
        does not repeat; a chord that is a superset of another's suppresses the smaller one."""
        self.latest = snapshot
        self._lost_by_adapter = False
        held_now = {r for r, chord in self.settings.chords.items() if chord and chord <= snapshot.buttons}
        # Start+A must not also fire a chord of Start alone; only maximal chords count.
        held_now = {r for r in held_now if not any(self.settings.chords[r] < self.settings.chords[o] for o in held_now)}
        fired = [r for r in TeleopRequest if r in held_now and r not in self._held]
        self._held = held_now
        return fired

    def input_lost(self) -> None:
        """The adapter lost its input (device unplugged, publisher gone): stop now."""
        self._lost_by_adapter = True
        self._held = set()

    def is_lost(self, now_s: float) -> bool:
        if self.latest is None:
            return False  # never connected is not lost; the velocity is zero anyway
        return self._lost_by_adapter or not (now_s - self.latest.stamp_s <= self.settings.command_timeout_s)

    def target(self, now_s: float) -> np.ndarray:
        """The velocity the sticks ask for now, within limits (before the ramp)."""
        s, snap = self.settings, self.latest
        if snap is None or self.is_lost(now_s):
            return np.zeros(3)
        return np.array(
            [
                shape_axis(snap.axis("ly"), s.deadzone, s.expo) * s.max_vx_mps,
                shape_axis(snap.axis("lx"), s.deadzone, s.expo) * s.max_vy_mps,
                shape_axis(snap.axis("rx"), s.deadzone, s.expo) * s.max_yaw_rate_rps,
            ]
        )

    def tick(self, now_s: float) -> TeleopOutput:
        s = self.settings
        lost = self.is_lost(now_s)
        target = self.target(now_s)
        dt = 0.0 if self._last_tick_s is None else max(0.0, now_s - self._last_tick_s)
        self._last_tick_s = now_s
        if lost:
            # Nobody is commanding: zero at once, not along the ramp.
            self._velocity = np.zeros(3)
        else:
            step = np.array([s.accel_vx_mps2, s.accel_vy_mps2, s.accel_yaw_rps2]) * dt
            self._velocity = self._velocity + np.clip(target - self._velocity, -step, step)
        velocity = self._velocity.copy()
        level, sector = (int(x) for x in discretise_command(velocity, s.discrete_spec))
        if s.discrete:
            speed = s.discrete_spec.speed_levels_mps[level]
            heading = sector * 2.0 * math.pi / s.discrete_spec.heading_sectors
            velocity[0] = min(s.max_vx_mps, max(-s.max_vx_mps, speed * math.cos(heading)))
            velocity[1] = min(s.max_vy_mps, max(-s.max_vy_mps, speed * math.sin(heading)))
        return TeleopOutput((float(velocity[0]), float(velocity[1]), float(velocity[2])), (level, sector), lost)
