"""Fixed-size DDS structs as byte layouts: encode and decode whole fields with numpy.

cyclonedds' Python serializer walks a message field by field in Python, so a 500 Hz stream of a 2 KB
Unitree LowState_ costs a large share of a core per process (bench/dds/lowstate.py). A struct whose
size never changes (every Unitree low-level message: primitives, fixed arrays, nested structs) has
one layout, computed here once from its IDL class: the byte offset of every primitive in the
serialized sample (XCDR, little endian, after the 4-byte encapsulation header) and in the packed C
struct the robot's CRC is computed over. A :class:`Layout` then reads or writes all 35 motors' ``q``
with one fancy index. ``tests`` check it byte for byte against cyclonedds' own serializer.

Alignment rules: in XCDR a primitive is aligned to its size (at most ``max_align``: 8 in XCDR1, 4 in
XCDR2) counted from the start of the payload, with no padding at the end of a struct; in C a
struct is aligned to, and its size padded to, its widest member.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

HEADER_XCDR1_LE = b"\x00\x01\x00\x00"
PRIMITIVES = {
    "uint8": "<u1", "int8": "<i1", "uint16": "<u2", "int16": "<i2", "uint32": "<u4", "int32": "<i4",
    "uint64": "<u8", "int64": "<i8", "float32": "<f4", "float64": "<f8",
}  # fmt: skip


@dataclass(frozen=True)
class Field:
    """One primitive field, every occurrence: ``path`` like ``motor_state.q``, ``shape`` of the repeats."""

    path: str
    dtype: np.dtype
    shape: tuple[int, ...]
    cdr_offsets: np.ndarray  # byte offset of each occurrence in the serialized sample (header included)
    c_offsets: np.ndarray  # ... in the packed C struct

    def byte_index(self, offsets: np.ndarray) -> np.ndarray:
        return offsets.reshape(-1, 1) + np.arange(self.dtype.itemsize)


def _align(offset: int, alignment: int) -> int:
    return (offset + alignment - 1) // alignment * alignment


def _kind(annotation: Any) -> tuple[str, Any]:
    """("prim", name) | ("array", (element, length)) | ("struct", class)."""
    from cyclonedds.idl import types

    if isinstance(annotation, types.array):
        return "array", (annotation.subtype, annotation.length)
    metadata = getattr(annotation, "__metadata__", ())
    if metadata and metadata[0] in PRIMITIVES:
        return "prim", metadata[0]
    if hasattr(annotation, "__idl__"):
        return "struct", annotation
    raise TypeError(f"{annotation!r} is not a fixed-size primitive, array or struct")


def _c_alignment(annotation: Any) -> int:
    kind, what = _kind(annotation)
    if kind == "prim":
        return np.dtype(PRIMITIVES[what]).itemsize
    if kind == "array":
        return _c_alignment(what[0])
    from cyclonedds.idl._type_normalize import get_extended_type_hints

    return max(_c_alignment(a) for a in get_extended_type_hints(what).values())


class _Walker:
    """Lays out one struct in both encodings at once, collecting every primitive's offsets."""

    def __init__(self, max_align: int) -> None:
        self.max_align = max_align
        self.cdr = 0  # payload offset (the header is added at the end)
        self.c = 0
        self.found: dict[str, tuple[str, list[int], list[int]]] = {}

    def prim(self, path: str, name: str) -> None:
        size = np.dtype(PRIMITIVES[name]).itemsize
        self.cdr = _align(self.cdr, min(size, self.max_align))
        self.c = _align(self.c, size)
        entry = self.found.setdefault(path, (name, [], []))
        entry[1].append(self.cdr)
        entry[2].append(self.c)
        self.cdr += size
        self.c += size

    def walk(self, path: str, annotation: Any) -> None:
        kind, what = _kind(annotation)
        if kind == "prim":
            self.prim(path, what)
        elif kind == "array":
            element, length = what
            for _ in range(length):
                self.walk(path, element)
        else:
            self.struct(path, what)

    def struct(self, prefix: str, cls: type) -> None:
        from cyclonedds.idl._type_normalize import get_extended_type_hints

        hints = get_extended_type_hints(cls)
        alignment = max(_c_alignment(a) for a in hints.values())
        self.c = _align(self.c, alignment)
        for name, annotation in hints.items():
            self.walk(f"{prefix}.{name}" if prefix else name, annotation)
        self.c = _align(self.c, alignment)


class Layout:
    """Where every field of a fixed-size IDL struct ``cls`` lies, serialized and as a C struct."""

    def __init__(self, cls: type, max_align: int = 8, shapes: dict[str, tuple[int, ...]] | None = None) -> None:
        walker = _Walker(max_align)
        walker.struct("", cls)
        self.typename: str = getattr(cls, "__idl_typename__", cls.__name__)
        self.size = len(HEADER_XCDR1_LE) + walker.cdr
        self.c_size = walker.c
        self.fields: dict[str, Field] = {}
        for path, (name, cdr, c) in walker.found.items():
            n = len(cdr)
            shape = (shapes or {}).get(path, () if n == 1 else (n,))
            self.fields[path] = Field(
                path, np.dtype(PRIMITIVES[name]), shape,
                np.array(cdr, dtype=np.intp) + len(HEADER_XCDR1_LE), np.array(c, dtype=np.intp),
            )  # fmt: skip
        # serialized bytes -> packed C struct bytes: one gather (C padding reads a zero appended at the end)
        gather = np.full(self.c_size, self.size, dtype=np.intp)
        for f in self.fields.values():
            gather[f.byte_index(f.c_offsets).ravel()] = f.byte_index(f.cdr_offsets).ravel()
        self._to_c = gather
        self._index = {p: f.byte_index(f.cdr_offsets) for p, f in self.fields.items()}

    def new(self) -> bytearray:
        """A zeroed sample with its encapsulation header."""
        buf = bytearray(self.size)
        buf[: len(HEADER_XCDR1_LE)] = HEADER_XCDR1_LE
        return buf

    def write(self, buf: bytearray | np.ndarray, path: str, values: Any, where: np.ndarray | None = None) -> None:
        """Set the occurrences ``where`` (all by default) of ``path`` in the serialized ``buf``."""
        f = self.fields[path]
        raw = np.frombuffer(buf, dtype=np.uint8) if not isinstance(buf, np.ndarray) else buf
        index = self._index[path] if where is None else self._index[path][where]
        data = np.ascontiguousarray(np.broadcast_to(np.asarray(values, dtype=f.dtype), (len(index),)))
        raw[index] = data.view(np.uint8).reshape(-1, f.dtype.itemsize)

    def read(self, data: bytes | bytearray | np.ndarray, path: str, where: np.ndarray | None = None) -> Any:
        """The occurrences ``where`` (all by default) of ``path`` from serialized ``data``; a single
        field reads as a numpy scalar."""
        f = self.fields[path]
        raw = data if isinstance(data, np.ndarray) else np.frombuffer(data, dtype=np.uint8)
        index = self._index[path] if where is None else self._index[path][where]
        values = np.ascontiguousarray(raw[index]).view(f.dtype).reshape(-1)
        return values[0] if (not f.shape and where is None) else values

    def to_c_struct(self, data: bytes | bytearray | np.ndarray) -> np.ndarray:
        """The packed C struct (padding zero) of serialized ``data``: what the robot's CRC covers."""
        raw = data if isinstance(data, np.ndarray) else np.frombuffer(data, dtype=np.uint8)
        return np.append(raw[: self.size], np.uint8(0))[self._to_c]


_BIT_REVERSED = bytes(int(f"{i:08b}"[::-1], 2) for i in range(256))


def crc32_words(c_struct: np.ndarray) -> int:
    """Unitree's CRC-32 of a packed C struct: poly 0x04C11DB7, init 0xFFFFFFFF, no final xor, over every
    little-endian 32-bit word but the last (the crc field), each word's bits most significant first.

    That is CRC-32/MPEG-2 of the words' big-endian bytes, computed here with zlib's (bit-reflected)
    CRC-32 on bit-reversed bytes: zlib runs in C, the SDK's loop in Python.
    """
    words = len(c_struct) // 4 - 1
    big_endian = np.ascontiguousarray(c_struct[: 4 * words]).view("<u4").byteswap().tobytes()
    reflected = zlib.crc32(big_endian.translate(_BIT_REVERSED)) ^ 0xFFFFFFFF
    return int(f"{reflected:032b}"[::-1], 2)
