"""The byte-level Unitree codecs against the SDK's IDL objects, its serializer and its CRC."""

from __future__ import annotations

import numpy as np
import pytest

from parkour_core.cdr import Layout, crc32_words
from parkour_core.robots import G1, H1
from parkour_core.safety import JointCommand
from parkour_core.unitree import (
    Crc,
    encode_wireless_remote,
    fill_lowcmd,
    fill_lowstate,
    message_types,
    new_lowcmd,
    new_lowstate,
    read_lowcmd,
    read_lowstate,
)
from parkour_core.unitree_wire import LowCmdWire, LowStateWire

ROBOTS = pytest.mark.parametrize("spec", [G1, H1], ids=lambda s: s.name)


def _command(spec, rng) -> JointCommand:
    n = spec.num_joints
    return JointCommand(q=rng.uniform(spec.q_min, spec.q_max), dq=rng.normal(0, 2, n), kp=rng.uniform(0, 200, n),
                        kd=rng.uniform(0, 10, n), tau=rng.uniform(-spec.tau_max, spec.tau_max))  # fmt: skip


def _state(spec, rng):
    n = spec.num_joints
    quat = rng.normal(size=4)
    return dict(q=rng.normal(size=n), dq=rng.normal(size=n), tau=rng.normal(size=n),
                quat_wxyz=quat / np.linalg.norm(quat), gyro=rng.normal(size=3), accel=rng.normal(size=3),
                tick=int(rng.integers(0, 2**32)))  # fmt: skip


def _fill_every_field(msg, rng) -> None:
    """Random values in every primitive of an IDL message, nested structs and arrays included."""
    from cyclonedds.idl._type_normalize import get_extended_type_hints

    for name, annotation in get_extended_type_hints(type(msg)).items():
        value = getattr(msg, name)
        if hasattr(value, "__idl__"):
            _fill_every_field(value, rng)
        elif isinstance(value, list) and value and hasattr(value[0], "__idl__"):
            for v in value:
                _fill_every_field(v, rng)
        else:
            kind = str(getattr(annotation, "subtype", annotation))
            count = len(value) if isinstance(value, list) else 1
            if "float" in kind:
                values = [float(np.float32(x)) for x in rng.normal(size=count)]
            else:  # 0..99 fits every integer type (the SDK's CRC packs some uint8 fields as signed bytes)
                values = [int(x) for x in rng.integers(0, 100, size=count)]
            setattr(msg, name, values if isinstance(value, list) else values[0])


@ROBOTS
@pytest.mark.parametrize("which", [0, 1])
def test_the_layout_reads_and_writes_every_field_as_the_serializer_does(spec, which):
    rng = np.random.default_rng(3)
    msg = (new_lowstate(spec), new_lowcmd(spec))[which]
    _fill_every_field(msg, rng)
    reference = msg.serialize()
    layout = Layout(type(msg))
    assert layout.size == len(reference)
    rebuilt = layout.new()
    for path in layout.fields:
        layout.write(rebuilt, path, layout.read(reference, path))
    assert bytes(rebuilt) == reference
    assert crc32_words(layout.to_c_struct(reference)) == Crc()(msg)


@ROBOTS
def test_lowcmd_bytes_are_the_sdk_s_with_its_crc(spec):
    rng = np.random.default_rng(1)
    wire = LowCmdWire(spec)
    msg = new_lowcmd(spec)
    for _ in range(5):  # one persistent message and one encoder, as in the supervisor
        cmd = _command(spec, rng)
        fill_lowcmd(msg, spec, cmd, mode_machine=6)
        msg.crc = Crc()(msg)
        assert wire.encode(cmd, mode_machine=6) == msg.serialize()
    data = wire.encode(cmd, mode_machine=6)
    assert wire.crc_ok(data)
    back, enabled = wire.decode(data)
    reference, reference_enabled = read_lowcmd(type(msg).deserialize(data), spec)
    for name in ("q", "dq", "kp", "kd", "tau"):
        np.testing.assert_array_equal(getattr(back, name), getattr(reference, name))
    np.testing.assert_array_equal(enabled, reference_enabled)
    assert enabled.all()


@ROBOTS
def test_lowstate_bytes_are_the_sdk_s_and_decode_as_read_lowstate(spec):
    rng = np.random.default_rng(2)
    wire = LowStateWire(spec)
    msg = new_lowstate(spec)
    remote = encode_wireless_remote({"L2", "B"}, lx=0.5)
    for k in range(4):
        state = _state(spec, rng)
        fill_lowstate(msg, spec, **state, wireless_remote=remote if k == 1 else None)
        msg.crc = Crc()(msg)
        assert wire.encode(**state, wireless_remote=remote if k == 1 else None) == msg.serialize()
    view = wire.decode(msg.serialize())
    # read_lowstate of the sample as a DDS reader gets it (float32 fields): the H1's IMU is turned into the
    # pelvis's from those values by both decoders alike, bit for bit.
    reference = read_lowstate(type(msg).deserialize(msg.serialize()), spec)
    for name in ("q", "dq", "tau", "quat_wxyz", "gyro", "accel"):
        np.testing.assert_array_equal(getattr(view, name), getattr(reference, name), err_msg=name)
    assert (view.tick, view.mode_machine, view.wireless_remote) == (
        reference.tick, reference.mode_machine, reference.wireless_remote,
    )  # fmt: skip
    assert view.wireless_remote == remote


def test_a_changed_byte_fails_the_crc_and_a_short_sample_is_refused():
    wire = LowCmdWire(G1)
    cmd = _command(G1, np.random.default_rng(4))
    data = bytearray(wire.encode(cmd, mode_machine=5))
    assert wire.crc_ok(bytes(data))
    data[100] ^= 0x01
    assert not wire.crc_ok(bytes(data))
    with pytest.raises(ValueError, match="bytes"):
        wire.decode(bytes(data[:500]))
    with pytest.raises(ValueError, match="bytes"):
        LowStateWire(G1).decode(b"\x00\x01\x00\x00")


def test_unitree_s_simulators_send_no_crc():
    wire = LowStateWire(G1)
    state = _state(G1, np.random.default_rng(5))
    data = wire.encode(**state, with_crc=False)
    assert int(wire.layout.read(data, "crc")) == 0 and not wire.crc_ok(data)
    np.testing.assert_array_equal(wire.decode(data).q, np.float32(state["q"]))


def test_message_types_match_the_layouts():
    for spec in (G1, H1):
        state_type, cmd_type = message_types(spec)
        assert LowStateWire(spec).layout.typename == getattr(state_type, "__idl_typename__", None)
        assert LowCmdWire(spec).layout.typename == getattr(cmd_type, "__idl_typename__", None)
