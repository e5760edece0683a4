#!/usr/bin/env bash
# The mjlab environment for GPU training on MuJoCo-Warp: .venv-mjlab (gitignored, optional).
#
# mjlab 1.6.0 pins mujoco~=3.11.0, mujoco-warp~=3.11.0 and rsl-rl-lib==5.4.2, and wants torch>=2.7.
# The runtime .venv holds mujoco 4 and no rsl-rl, so mjlab lives here, never in .venv. torch is held
# at 2.13.0 (the CPU wheel on our dev machines; on a CUDA machine set MJLAB_TORCH_INDEX to a CUDA
# index such as https://download.pytorch.org/whl/cu128 to get the CUDA build of the same version).
# Before installing, the plan is resolved with `pip install --dry-run --report` and refused if it
# would change torch or pull nvidia-* wheels without MJLAB_TORCH_INDEX set. Idempotent: a no-op once
# `import mjlab` works at the pinned version. Run from anywhere; `make mjlab-smoke` calls it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."

VENV=.venv-mjlab
PY=$VENV/bin/python
MJLAB=mjlab==1.6.0
CHECK='import mjlab, mujoco, mujoco_warp, rsl_rl, torch; from importlib.metadata import version as v
assert v("mjlab") == "1.6.0" and mujoco.__version__.startswith("3.11.") and v("rsl-rl-lib") == "5.4.2", "pins"
assert torch.__version__.split("+")[0] == "2.13.0", torch.__version__'

if [[ -x $PY ]] && "$PY" -c "$CHECK" 2>/dev/null; then
    echo "training/backends/mjlab/setup.sh: $VENV is ready"
    exit 0
fi
base=$(command -v python3.11 || command -v python3.12 || command -v python3)
[[ -x $PY ]] || "$base" -m venv "$VENV"

constraints=$(mktemp)
report=$(mktemp)
trap 'rm -f "$constraints" "$report"' EXIT
cat >"$constraints" <<PINS
torch==2.13.0
mujoco==3.11.0
mujoco-warp==3.11.0
rsl-rl-lib==5.4.2
PINS
PIP=("$PY" -m pip --disable-pip-version-check -q)
extra=()
[[ -n ${MJLAB_TORCH_INDEX:-} ]] && extra=(--extra-index-url "$MJLAB_TORCH_INDEX")

"${PIP[@]}" install --dry-run --ignore-installed --report "$report" -c "$constraints" "${extra[@]}" "$MJLAB" torch==2.13.0
"$PY" - "$report" "${MJLAB_TORCH_INDEX:-}" <<'PYCHECK'
import json, sys
plan = {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in json.load(open(sys.argv[1]))["install"]}
cuda_ok = bool(sys.argv[2])
torch = plan.get("torch", "")
if torch.split("+")[0] != "2.13.0":
    sys.exit(f"refusing: the plan installs torch {torch!r}, not 2.13.0")
nvidia = sorted(n for n in plan if n.startswith("nvidia-"))
if nvidia and not cuda_ok:
    sys.exit(f"refusing: the plan pulls CUDA wheels {nvidia[:4]}...; set MJLAB_TORCH_INDEX on a GPU machine")
print(f"plan: {len(plan)} packages, torch {torch}, mujoco {plan.get('mujoco')}, mujoco-warp "
      f"{plan.get('mujoco-warp')}, rsl-rl-lib {plan.get('rsl-rl-lib')}, warp-lang {plan.get('warp-lang')}")
PYCHECK
"${PIP[@]}" install -c "$constraints" "${extra[@]}" "$MJLAB" torch==2.13.0 PyYAML
"$PY" -c "$CHECK"
echo "training/backends/mjlab/setup.sh: $VENV ready ($(du -sh "$VENV" | cut -f1))"
