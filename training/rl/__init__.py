"""The training library's core on rsl-rl-lib: one env contract (rsl_rl's VecEnv; ``env``), the depth
student as an rsl_rl model (``models``), our algorithms as subclasses of rsl_rl's (``algorithms``), one
runner (``runner``) and ``train`` (any task from its typed config)."""
