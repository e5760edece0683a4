"""The mjlab (MuJoCo-Warp) backend: runs inside .venv-mjlab (setup.sh), never imported by the runtime."""
