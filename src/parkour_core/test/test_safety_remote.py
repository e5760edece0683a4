"""The Unitree remote's bytes in LowState_.wireless_remote: keys and sticks, parsed and encoded."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parkour_core.robots import G1
from parkour_core.unitree import (
    REMOTE_BYTES,
    REMOTE_KEYS,
    RemoteState,
    encode_wireless_remote,
    fill_lowstate,
    new_lowstate,
    parse_wireless_remote,
    read_lowstate,
)

N = G1.num_joints


def raw(bits: int, lx=0.0, rx=0.0, ry=0.0, l2=0.0, ly=0.0) -> bytes:
    """Built by hand from the layout (bytes 2-3 keys, float32 sticks at 4, 8, 12, 16, 20), not by the encoder."""
    data = bytearray(REMOTE_BYTES)
    data[2:4] = struct.pack("<H", bits)
    for offset, value in ((4, lx), (8, rx), (12, ry), (16, l2), (20, ly)):
        data[offset : offset + 4] = struct.pack("<f", value)
    return bytes(data)


@pytest.mark.parametrize("bit,key", list(enumerate(REMOTE_KEYS)))
def test_each_key_bit(bit, key):
    assert parse_wireless_remote(raw(1 << bit)).keys == frozenset({key})


def test_the_key_layout_is_unitrees():
    assert REMOTE_KEYS[:6] == ("R1", "L1", "Start", "Select", "R2", "L2")
    assert REMOTE_KEYS[8:12] == ("A", "B", "X", "Y")
    assert REMOTE_KEYS[12:] == ("Up", "Right", "Down", "Left")


def test_combo_and_sticks():
    state = parse_wireless_remote(raw((1 << 5) | (1 << 9), lx=0.5, rx=-0.25, ry=1.0, l2=0.75, ly=-1.0))
    assert state == RemoteState(frozenset({"L2", "B"}), lx=0.5, rx=-0.25, ry=1.0, l2=0.75, ly=-1.0)


@pytest.mark.parametrize("data", [b"", b"\x00\x00", b"\x00", bytes(REMOTE_BYTES)])
def test_missing_or_empty_remote_reads_as_nothing_pressed(data):
    assert parse_wireless_remote(data) == RemoteState(frozenset())


def test_short_data_reads_the_keys_it_holds():
    assert parse_wireless_remote(raw(1 << 8)[:6]).keys == frozenset({"A"})


@settings(max_examples=100, deadline=None, database=None)
@given(
    st.frozensets(st.sampled_from(REMOTE_KEYS)),
    st.floats(-1.0, 1.0, width=32),
    st.floats(-1.0, 1.0, width=32),
)
def test_encode_parse_round_trip(keys, lx, ly):
    data = encode_wireless_remote(keys, lx=lx, ly=ly)
    assert len(data) == REMOTE_BYTES
    assert parse_wireless_remote(data) == RemoteState(keys, lx=lx, ly=ly)


def test_encoder_refuses_unknown_names():
    with pytest.raises(ValueError, match="unknown remote keys"):
        encode_wireless_remote({"Z"})
    with pytest.raises(ValueError, match="unknown stick"):
        encode_wireless_remote(set(), lz=0.1)


@pytest.mark.parametrize("wire", [False, True])
def test_remote_survives_a_real_lowstate_message(wire):
    msg = new_lowstate(G1)
    z = np.zeros(N)
    remote = encode_wireless_remote({"L2", "B"}, ly=0.5)
    fill_lowstate(msg, G1, z, z, z, np.array([1.0, 0, 0, 0]), np.zeros(3), np.zeros(3), 7, wireless_remote=remote)
    if wire:
        msg = type(msg).deserialize(msg.serialize())
    view = read_lowstate(msg, G1)
    assert parse_wireless_remote(view.wireless_remote) == RemoteState(frozenset({"L2", "B"}), ly=0.5)


def test_fill_lowstate_leaves_the_remote_alone_by_default():
    msg = new_lowstate(G1)
    z = np.zeros(N)
    msg.wireless_remote = list(encode_wireless_remote({"A"}))
    fill_lowstate(msg, G1, z, z, z, np.array([1.0, 0, 0, 0]), np.zeros(3), np.zeros(3), 1)
    assert parse_wireless_remote(bytes(msg.wireless_remote)).keys == frozenset({"A"})
