#!/usr/bin/env bash
# The bench environment for the holosoma-inference peer (bench/holosoma/run.py): .venv-bench.
#
# The runtime .venv holds holosoma-inference as files only (--no-deps, for its ONNX). Running its policy
# loop needs its dependency tree (importing its policies package pulls in pinocchio, wandb, pydantic,
# tyro, the keyboard listener...: about 700 MB), none of which the stack needs, so it lives here, never
# in .venv. Idempotent: a no-op once its loop imports. Run from anywhere; `make bench` calls it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

VENV=.venv-bench
PY=$VENV/bin/python
PIP=("$PY" -m pip --disable-pip-version-check -q)
CHECK='import holosoma_inference.policies.locomotion, holosoma_inference.config.config_values.inference'

if [[ -x $PY ]] && "$PY" -c "$CHECK" 2>/dev/null; then
    echo "bench/holosoma/setup.sh: $VENV is ready"
    exit 0
fi
base=$(command -v python3.11 || command -v python3)
[[ -x $PY ]] || "$base" -m venv "$VENV"
# The same wheel, pinned by hash, as requirements/assets.txt installs into .venv.
req=$(mktemp)
trap 'rm -f "$req"' EXIT
grep '^holosoma-inference==' requirements/assets.txt >"$req"
"${PIP[@]}" install --no-deps --require-hashes -r "$req"
# Its declared dependencies (the wheel's Requires-Dist, no extras), with numpy/onnx/onnxruntime at the
# runtime's versions (requirements/constraints.txt): both sides run the same inference library.
pin() { grep -i "^$1==" requirements/constraints.txt; }
"${PIP[@]}" install "$(pin numpy)" "$(pin onnx)" "$(pin onnxruntime)" "$(pin PyYAML)" "$(pin typing_extensions)" \
    defusedxml evdev importlib-metadata loguru netifaces pin pydantic scipy sshkeyboard termcolor "tyro>=0.10.0a4" \
    wandb zmq
"$PY" -c "$CHECK"
echo "bench/holosoma/setup.sh: $VENV ready ($(du -sh "$VENV" | cut -f1))"
