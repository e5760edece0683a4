"""The teleop mapping core, driven by event sequences (parkour_core/teleop.py)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from parkour_core.config import ConfigError, load_config
from parkour_core.paths import config_dir
from parkour_core.teleop import (
    EV_ABS,
    EV_KEY,
    EV_SYN,
    LAYOUTS,
    PAD_BUTTONS,
    EvdevPadState,
    KeyboardPad,
    PadSnapshot,
    TeleopMapper,
    TeleopRequest,
    TeleopSettings,
    normalised_joy,
    remote_from_snapshot,
    remote_joy,
    shape_axis,
    snapshot_from_joy,
    snapshot_from_normalised_joy,
    snapshot_from_remote,
    snapshot_from_remote_joy,
)
from parkour_core.unitree import encode_wireless_remote, parse_wireless_remote

# No ramp, no curve: the velocity is the stick times the limit, so sequences read plainly.
PLAIN = TeleopSettings(deadzone=0.0, expo=0.0, accel_vx_mps2=1e6, accel_vy_mps2=1e6, accel_yaw_rps2=1e6)


def stick(t: float, buttons: set[str] | frozenset[str] = frozenset(), **axes: float) -> PadSnapshot:
    return PadSnapshot(t, frozenset(buttons), axes)


# ----------------------------------------------------------------------------- shaping
def test_deadzone_reads_centred_and_rescales_without_a_jump():
    assert shape_axis(0.09, 0.1, 0.0) == 0.0
    assert shape_axis(-0.1, 0.1, 0.0) == 0.0
    assert shape_axis(0.1 + 1e-9, 0.1, 0.0) == pytest.approx(0.0, abs=1e-6)
    assert shape_axis(0.55, 0.1, 0.0) == pytest.approx(0.5)
    assert shape_axis(-1.0, 0.1, 0.0) == pytest.approx(-1.0)


def test_expo_softens_the_centre_and_keeps_the_ends():
    # (1 - e) x + e x^3 at x = 0.5, e = 0.5: 0.25 + 0.0625
    assert shape_axis(0.5, 0.0, 0.5) == pytest.approx(0.3125)
    assert shape_axis(-0.5, 0.0, 0.5) == pytest.approx(-0.3125)
    assert shape_axis(1.0, 0.0, 1.0) == pytest.approx(1.0)
    assert shape_axis(1.7, 0.0, 0.3) == pytest.approx(1.0)  # past full travel: clamped
    assert shape_axis(math.nan, 0.0, 0.3) == 0.0


def test_full_sticks_give_the_limits_in_the_robot_frame():
    mapper = TeleopMapper(TeleopSettings(max_vx_mps=0.8, max_vy_mps=0.4, max_yaw_rate_rps=0.9, accel_vx_mps2=1e6,
                                         accel_vy_mps2=1e6, accel_yaw_rps2=1e6))  # fmt: skip
    mapper.observe(stick(0.0, ly=1.0, lx=-1.0, rx=1.0))  # forward, to the right, turning left
    mapper.tick(0.0)
    out = mapper.tick(0.02)
    assert out.velocity == pytest.approx((0.8, -0.4, 0.9))
    mapper.observe(stick(0.03, ly=-5.0))  # a bad driver past full travel: still the limit
    assert mapper.tick(0.04).velocity == pytest.approx((-0.8, 0.0, 0.0))


# ----------------------------------------------------------------------------- ramp and timeout
def test_ramp_limits_the_change_per_tick_both_ways():
    mapper = TeleopMapper(TeleopSettings(deadzone=0.0, expo=0.0, max_vx_mps=1.0, accel_vx_mps2=1.0))
    mapper.observe(stick(0.0, ly=1.0))
    vx = [mapper.tick(0.1 * i).velocity[0] for i in range(6)]  # stamps stay fresh: timeout 0.5 s
    assert vx == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4, 0.5])
    mapper.observe(stick(0.5, ly=0.0))
    assert mapper.tick(0.6).velocity[0] == pytest.approx(0.4)  # slows down at the same rate


def test_timeout_zeroes_at_once_and_reports_loss_until_input_returns():
    mapper = TeleopMapper(PLAIN)
    assert not mapper.tick(0.0).input_lost  # never connected is not lost
    mapper.observe(stick(1.0, ly=0.5))
    assert mapper.tick(1.0).velocity[0] == pytest.approx(0.5)
    assert not mapper.tick(1.5).input_lost  # exactly the timeout: still fresh
    out = mapper.tick(1.51)
    assert out.input_lost and out.velocity == (0.0, 0.0, 0.0)
    mapper.observe(stick(2.0, ly=0.5))
    out = mapper.tick(2.0)
    assert not out.input_lost and out.velocity[0] == pytest.approx(0.5)


def test_ramp_restarts_from_zero_after_a_timeout():
    mapper = TeleopMapper(TeleopSettings(deadzone=0.0, expo=0.0, accel_vx_mps2=1.0))
    mapper.observe(stick(0.0, ly=1.0))
    for i in range(5):
        mapper.tick(0.1 * i)
    assert mapper.tick(2.0).velocity[0] == 0.0  # lost
    mapper.observe(stick(2.1, ly=1.0))
    assert mapper.tick(2.1).velocity[0] == pytest.approx(0.1)  # one 0.1 s ramp step, not 0.4


def test_adapter_loss_zeroes_even_with_a_fresh_stamp_and_drops_held_chords():
    mapper = TeleopMapper(PLAIN)
    assert mapper.observe(stick(0.0, {"start", "a"}, ly=1.0)) == [TeleopRequest.STAND_UP]
    mapper.input_lost()
    out = mapper.tick(0.01)
    assert out.input_lost and out.velocity == (0.0, 0.0, 0.0)
    # Reconnected with the chord still held: that is a new press.
    assert mapper.observe(stick(0.02, {"start", "a"})) == [TeleopRequest.STAND_UP]


# ----------------------------------------------------------------------------- chords
def test_chords_fire_once_on_the_rising_edge_and_held_chords_do_not_repeat():
    mapper = TeleopMapper(PLAIN)
    sequence = [set(), {"start"}, {"start", "a"}, {"start", "a"}, {"start", "a"}, {"start"}, {"start", "a"}, set()]
    fired = [mapper.observe(stick(0.01 * i, b)) for i, b in enumerate(sequence)]
    assert fired == [[], [], [TeleopRequest.STAND_UP], [], [], [], [TeleopRequest.STAND_UP], []]


def test_estop_fires_first_and_a_superset_chord_hides_its_subset():
    settings = TeleopSettings(
        chords={
            TeleopRequest.STAND: frozenset({"start"}),
            TeleopRequest.STAND_UP: frozenset({"start", "a"}),
            TeleopRequest.ESTOP: frozenset({"lb", "rb"}),
        }
    )
    mapper = TeleopMapper(settings)
    assert mapper.observe(stick(0.0, {"start", "a", "lb", "rb"})) == [TeleopRequest.ESTOP, TeleopRequest.STAND_UP]
    mapper = TeleopMapper(settings)
    assert mapper.observe(stick(0.0, {"start"})) == [TeleopRequest.STAND]


def test_every_default_request_has_its_chord():
    mapper = TeleopMapper(PLAIN)
    for request, chord in PLAIN.chords.items():
        assert mapper.observe(stick(0.0, chord)) == [request]
        assert mapper.observe(stick(0.0)) == []


# ----------------------------------------------------------------------------- discrete command
def test_discrete_command_reports_level_and_sector_and_snaps_in_discrete_mode():
    settings = TeleopSettings(deadzone=0.0, expo=0.0, max_vx_mps=2.0, max_vy_mps=2.0, accel_vx_mps2=1e6,
                              accel_vy_mps2=1e6, discrete=True)  # fmt: skip
    mapper = TeleopMapper(settings)
    mapper.observe(stick(0.0, ly=0.45, lx=0.4))  # 1.2 m/s at 41.6 deg: level 1.0 m/s, sector 1 (45 deg)
    mapper.tick(0.0)
    out = mapper.tick(0.02)
    assert out.discrete == (2, 1)
    assert out.velocity[:2] == pytest.approx((math.cos(math.pi / 4), math.sin(math.pi / 4)))
    mapper.observe(stick(0.03, ly=-0.4))  # straight back, 0.8 m/s: level 1.0, sector 4 (180 deg)
    out = mapper.tick(0.04)
    assert out.discrete == (2, 4) and out.velocity[:2] == pytest.approx((-1.0, 0.0))
    mapper.observe(stick(0.05, ly=0.1))  # 0.2 m/s: nearest level is standing
    out = mapper.tick(0.06)
    assert out.discrete == (0, 0) and out.velocity[:2] == (0.0, 0.0)


def test_continuous_mode_keeps_the_velocity_and_still_reports_the_discrete_command():
    mapper = TeleopMapper(PLAIN)
    mapper.observe(stick(0.0, lx=-0.5))  # 0.25 m/s to the right
    mapper.tick(0.0)  # the first tick starts the ramp from standing
    out = mapper.tick(0.01)
    assert out.velocity[1] == pytest.approx(-0.25)
    assert out.discrete == (0, 0)  # 0.25 m/s is equally near 0 and 0.5: ties go to the slower level
    mapper.observe(stick(0.01, lx=-1.0, ly=0.0))
    out = mapper.tick(0.02)
    assert out.velocity[1] == pytest.approx(-0.5) and out.discrete == (1, 6)  # -90 deg: sector 6 of 8


# ----------------------------------------------------------------------------- adapters' pure halves
def test_joy_layouts_map_their_indices_onto_the_normalised_pad():
    # Y and Start on an Xbox pad are buttons 3 and 7; on a PlayStation pad triangle and options are 2 and 9.
    xbox = snapshot_from_joy(0.0, [0.1, 0.2, 1.0, 0.3, 0.4, 1.0, 0.0, 1.0], [0, 0, 0, 1, 0, 0, 0, 1], LAYOUTS["xbox"])
    assert xbox.buttons == {"y", "start"}
    assert (xbox.axis("lx"), xbox.axis("ly"), xbox.axis("rx"), xbox.axis("ry"), xbox.axis("dpad_y")) == (
        0.1, 0.2, 0.3, 0.4, 1.0,
    )  # fmt: skip
    ps = snapshot_from_joy(0.0, [0.0] * 8, [0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0], LAYOUTS["playstation"])
    assert ps.buttons == {"y", "start"}
    short = snapshot_from_joy(0.0, [0.5], [1], LAYOUTS["xbox"])  # a short message: the rest released
    assert short.buttons == {"a"} and short.axis("ly") == 0.0


def test_normalised_joy_round_trips_and_uses_the_supervisor_button_indices():
    snap = stick(3.0, {"lb", "rb"}, lx=0.25, ly=-0.5, rx=1.0)
    axes, buttons = normalised_joy(snap)
    assert [i for i, b in enumerate(buttons) if b] == [4, 5]  # the supervisor's default e-stop chord
    back = snapshot_from_normalised_joy(3.0, axes, buttons)
    assert back.buttons == snap.buttons and back.axis("ly") == -0.5 and back.axis("rx") == 1.0
    assert PAD_BUTTONS.index("start") == 7 and PAD_BUTTONS.index("a") == 0


def test_evdev_events_fold_into_snapshots_with_linux_axes_flipped():
    pad = EvdevPadState(LAYOUTS["xbox"])
    pad.feed([(EV_ABS, 1, -32768), (EV_ABS, 0, 32767), (EV_KEY, 0x136, 1), (EV_KEY, 0x137, 1), (EV_SYN, 0, 0)])
    snap = pad.snapshot(1.0)
    assert snap.axis("ly") == pytest.approx(1.0)  # stick pushed up (raw minimum): forward
    assert snap.axis("lx") == pytest.approx(-1.0)  # pushed right (raw maximum): -y
    assert snap.buttons == {"lb", "rb"}
    pad.feed([(EV_KEY, 0x136, 0), (EV_ABS, 1, 0), (EV_KEY, 0x999, 1)])  # unknown codes are ignored
    snap = pad.snapshot(2.0)
    assert snap.buttons == {"rb"} and snap.axis("ly") == pytest.approx(0.0, abs=1e-4)
    ps = EvdevPadState(LAYOUTS["playstation"])
    ps.feed([(EV_ABS, 1, 0), (EV_KEY, 0x133, 1)])  # triangle (BTN_NORTH) is Y
    assert ps.snapshot(0.0).axis("ly") == pytest.approx(1.0) and ps.snapshot(0.0).buttons == {"y"}


def test_remote_round_trips_through_the_wireless_remote_bytes():
    snap = stick(0.0, {"a", "lb"}, lx=0.5, ly=0.25, rx=-0.75, dpad_y=1.0)
    keys, sticks = remote_from_snapshot(snap)
    assert keys == {"A", "L1", "Up"}
    assert sticks["lx"] == -0.5 and sticks["rx"] == 0.75  # the remote's x axes grow to the right
    remote = parse_wireless_remote(encode_wireless_remote(keys, **sticks))
    back = snapshot_from_remote(1.0, remote.keys, remote.lx, remote.ly, remote.rx, remote.ry)
    assert back.buttons == {"a", "lb"} and back.axis("dpad_y") == 1.0
    assert (back.axis("lx"), back.axis("ly"), back.axis("rx")) == pytest.approx((0.5, 0.25, -0.75))
    # And the robot's convention: the deployers' vx = ly, vy = -lx, yaw = -rx.
    mapper = TeleopMapper(PLAIN)
    mapper.observe(snapshot_from_remote(0.0, [], lx=1.0, ly=0.5, rx=1.0, ry=0.0))
    mapper.tick(0.0)
    assert mapper.tick(0.01).velocity == pytest.approx((0.5, -0.5, -1.0))


def test_remote_joy_carries_the_remote_as_the_supervisor_reads_it():
    remote = parse_wireless_remote(encode_wireless_remote({"R1", "A", "Left"}, lx=0.5, ly=-0.25, rx=0.0, ry=1.0))
    axes, buttons = remote_joy(remote.keys, vars(remote))
    assert axes == [0.5, -0.25, 0.0, 1.0, 0.0] and sum(buttons) == 3
    snap = snapshot_from_remote_joy(0.0, axes, buttons)
    assert snap.buttons == {"rb", "a"} and snap.axis("dpad_x") == 1.0 and snap.axis("lx") == -0.5


def test_keyboard_holds_keys_for_the_hold_time_and_presses_chords():
    keyboard = KeyboardPad(PLAIN.chords, hold_s=0.5)
    keyboard.press("w", 0.0)
    keyboard.press("q", 0.1)
    snap = keyboard.snapshot(0.2)
    assert snap.axis("ly") == 1.0 and snap.axis("rx") == 1.0
    keyboard.press("w", 0.4)  # the terminal's autorepeat keeps w held
    snap = keyboard.snapshot(0.7)
    assert snap.axis("ly") == 1.0 and snap.axis("rx") == 0.0  # q let go 0.5 s after its press
    keyboard.press("S", 0.75)  # the opposite key reverses at once (case ignored)
    assert keyboard.snapshot(0.8).axis("ly") == -1.0
    keyboard.press("x", 0.85)  # stop: everything released
    assert keyboard.snapshot(0.86).axis("ly") == 0.0
    keyboard.press(" ", 1.0)
    assert keyboard.snapshot(1.0).buttons == PLAIN.chords[TeleopRequest.ESTOP]


def test_keyboard_key_sequence_drives_the_mapper():
    mapper = TeleopMapper(PLAIN)
    keyboard = KeyboardPad(PLAIN.chords, hold_s=0.5)
    fired = []
    for t, key in [(0.0, "1"), (0.1, "1"), (1.0, "2"), (1.1, "d")]:
        keyboard.press(key, t)
        fired += mapper.observe(keyboard.snapshot(t))
    # "1" repeated within the hold time is one press; "2" after "1" was released is a new chord.
    assert fired == [TeleopRequest.STAND_UP, TeleopRequest.ACTIVATE]
    mapper.tick(1.1)
    assert mapper.tick(1.12).velocity[1] == pytest.approx(-0.5)


# ----------------------------------------------------------------------------- config
def test_settings_from_the_shipped_configs_use_the_supervisor_chords(tmp_path: Path):
    for name in ("g1_sim.yaml", "g1_robot.yaml"):
        cfg = load_config(config_dir() / name)
        settings = TeleopSettings.from_config(cfg)
        assert settings.chords[TeleopRequest.ESTOP] == {PAD_BUTTONS[i] for i in cfg.supervisor.gamepad_estop_buttons}
        assert settings.chords[TeleopRequest.DAMP] == {PAD_BUTTONS[i] for i in cfg.teleop.damp_buttons}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"teleop.layout": "nintendo"}, "teleop.layout"),
        ({"teleop.deadzone": 0.9}, "teleop.deadzone"),
        ({"teleop.damp_buttons": [7, 0]}, "supervisor.gamepad_stand_up_buttons"),
        ({"teleop.damp_buttons": [30]}, "teleop.damp_buttons"),
        ({"supervisor.gamepad_estop_buttons": [4, 40]}, "supervisor.gamepad_estop_buttons"),
        (
            {"teleop.discrete_speed_levels_mps": [0.5, 1.0]},
            r": teleop\.discrete_speed_levels_mps: must start at 0 and increase, got \[0\.5, 1\.0\]$",
        ),
        ({"teleop.discrete_speed_levels_mps": [0.0, 1.0, 1.0]}, r"teleop\.discrete_speed_levels_mps: must start"),
    ],
)
def test_bad_teleop_config_names_the_key(overrides, message):
    with pytest.raises(ConfigError, match=message):
        load_config(config_dir() / "g1_sim.yaml", overrides)
