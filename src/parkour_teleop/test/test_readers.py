"""The device and terminal readers, fed from lists (no /dev/input, no terminal here)."""

from __future__ import annotations

import pytest

from parkour_core.teleop import (
    EV_ABS,
    EV_KEY,
    EV_SYN,
    LAYOUTS,
    KeyboardPad,
    TeleopMapper,
    TeleopRequest,
    TeleopSettings,
)
from parkour_teleop import readers
from parkour_teleop.readers import CTRL_C, EvdevReader, GamepadUnavailable, KeyboardReader


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        self.t += 0.01
        return self.t


class InputEvent:  # python-evdev's shape: .type, .code, .value
    def __init__(self, type_: int, code: int, value: int) -> None:
        self.type, self.code, self.value = type_, code, value


def test_evdev_reader_makes_one_snapshot_per_report_and_reports_the_end():
    frames, lost = [], []
    reader = EvdevReader(LAYOUTS["f710"], FakeClock(), frames.append, lost.append)
    events = [
        (EV_KEY, 0x13B, 1), (EV_KEY, 0x130, 1), (EV_SYN, 0, 0),  # Start + A
        InputEvent(EV_ABS, 1, -32768), (EV_SYN, 0, 0),  # left stick full up
        (EV_KEY, 0x13B, 0), (EV_KEY, 0x130, 0), (EV_ABS, 1, 0), (EV_SYN, 0, 0),
    ]  # fmt: skip
    reader.run(events)
    assert [f.buttons for f in frames] == [{"start", "a"}, {"start", "a"}, set()]
    assert frames[1].axis("ly") == pytest.approx(1.0)
    assert lost == ["the gamepad's event stream ended"]
    assert reader.snapshot(1.0) is None  # a dead reader offers no pad

    # Through the mapper: the chord fires once though two reports carry it.
    mapper = TeleopMapper(TeleopSettings())
    assert [r for f in frames for r in mapper.observe(f)] == [TeleopRequest.STAND_UP]


def test_evdev_reader_reports_an_unplugged_device():
    def unplugged():
        yield (EV_KEY, 0x136, 1)
        yield (EV_SYN, 0, 0)
        raise OSError(19, "No such device")

    frames, lost = [], []
    EvdevReader(LAYOUTS["xbox"], FakeClock(), frames.append, lost.append).run(unplugged())
    assert frames[0].buttons == {"lb"}
    assert len(lost) == 1 and "No such device" in lost[0]


def test_keyboard_reader_presses_keys_until_ctrl_c():
    pad = KeyboardPad(TeleopSettings().chords, hold_s=0.5)
    presses = []
    clock = FakeClock()
    KeyboardReader(pad, clock, lambda: presses.append(pad.snapshot(clock.t))).run(["w", "d", CTRL_C, "s"])
    assert len(presses) == 2  # "s" after Ctrl-C never arrives
    assert presses[-1].axis("ly") == 1.0 and presses[-1].axis("lx") == -1.0


def test_gamepad_without_dev_input_fails_with_a_clear_message(monkeypatch):
    monkeypatch.setattr(readers.os.path, "isdir", lambda p: p != "/dev/input")
    with pytest.raises(GamepadUnavailable, match="no /dev/input"):
        readers.open_evdev_device("")


def test_parkour_sim_teleop_gamepad_fails_before_the_graph_starts(monkeypatch):
    from parkour_bringup.commands.sim_cmd import _check_gamepad

    monkeypatch.setattr(readers.os.path, "isdir", lambda p: p != "/dev/input")
    with pytest.raises(SystemExit, match="--teleop gamepad: no /dev/input"):
        _check_gamepad("")


def test_keyboard_from_a_pseudo_terminal_in_raw_mode_and_the_mode_restored():
    import os
    import termios

    master, slave = os.openpty()
    with os.fdopen(slave, "rb", buffering=0) as stream:
        before = termios.tcgetattr(slave)
        pad = KeyboardPad(TeleopSettings().chords, hold_s=100.0)
        clock = FakeClock()
        with readers.raw_terminal(stream):
            assert termios.tcgetattr(slave) != before  # raw: no echo, no line buffering, Ctrl-C is a byte
            os.write(master, b"w" + CTRL_C.encode() + b"s")
            KeyboardReader(pad, clock, lambda: None).run(readers.terminal_chars(stream))
        assert termios.tcgetattr(slave) == before
    os.close(master)
    assert pad.snapshot(clock.t).axis("ly") == 1.0  # w arrived; s came after Ctrl-C and was not read
