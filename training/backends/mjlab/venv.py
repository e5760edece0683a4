"""Running a script under ``.venv-mjlab`` (mjlab 1.6.0 pins mujoco 3.11, so it lives apart from the runtime).

The bring-your-own-policy parity scripts (``export_velocity.py``, ``velocity_parity.py``) call
:func:`reexec_in_venv`: without mjlab here they re-run themselves under ``.venv-mjlab``, and without
``.venv-mjlab`` they say how to create it and exit 0 (the environment is optional; CI does not create it).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
VENV_PY = ROOT / ".venv-mjlab" / "bin" / "python"


SETUP = "bash training/backends/mjlab/setup.sh"  # creates .venv-mjlab


def mjlab_reachable() -> bool:
    """Whether mjlab can run from here: it imports in this interpreter, or .venv-mjlab is there to re-run in."""
    return importlib.util.find_spec("mjlab") is not None or VENV_PY.exists()


def reexec_in_venv(script: str | Path, what: str) -> None:
    """Re-run ``script`` under .venv-mjlab unless mjlab imports here; without .venv-mjlab say so and exit 0."""
    if importlib.util.find_spec("mjlab") is not None:
        return
    if not mjlab_reachable():
        print(f"{what}: skipped, no .venv-mjlab (create it with: {SETUP})")
        sys.exit(0)
    os.execv(str(VENV_PY), [str(VENV_PY), str(Path(script).resolve()), *sys.argv[1:]])
