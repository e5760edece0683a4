"""Training backends beyond plain MuJoCo: mjlab (MuJoCo-Warp, GPU) and the documented Isaac Lab path."""
