"""Byte-reproducible npz files: ``np.savez`` stamps zip entries with the current time, so we write
the zip ourselves with a fixed timestamp, sorted keys and no compression (zlib versions differ)."""

from __future__ import annotations

import hashlib
import io
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

_EPOCH = (1980, 1, 1, 0, 0, 0)


def npz_bytes(arrays: Mapping[str, Any]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as z:
        for key in sorted(arrays):
            arr = np.asarray(arrays[key])  # not ascontiguousarray: it turns 0-d scalars into shape (1,)
            if not arr.flags.c_contiguous:
                arr = arr.copy(order="C")
            if arr.dtype == object:
                raise TypeError(f"{key}: object arrays are not reproducible (and need pickle to load)")
            body = io.BytesIO()
            np.lib.format.write_array(body, arr, allow_pickle=False)
            info = zipfile.ZipInfo(f"{key}.npy", date_time=_EPOCH)
            info.external_attr = 0o644 << 16
            z.writestr(info, body.getvalue())
    return buf.getvalue()


def write_npz(path: Path, arrays: Mapping[str, Any]) -> str:
    """Write the archive and return its SHA-256."""
    blob = npz_bytes(arrays)
    path.write_bytes(blob)
    return hashlib.sha256(blob).hexdigest()
