"""Launching training runs: multi-GPU through torchrun (multi_gpu.py, torchrun.md)."""
