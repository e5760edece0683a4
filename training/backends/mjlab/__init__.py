"""mjlab's own G1 velocity task, exported and imported: the bring-your-own-policy parity with mjlab.

No task of ours is restated here: every task's MDP runs on MuJoCo-Warp through
:mod:`training.envs.physics`. What stays is the check that a policy trained by mjlab runs under our
runtime as mjlab runs it: ``export_velocity.py`` trains mjlab's G1 flat velocity task for a few iterations
and exports it with mjlab's exporter, ``velocity_parity.py`` records mjlab's environment under that
policy, and ``test_velocity_parity.py`` (runtime ``.venv``) feeds those states to the imported bundle.
They run inside ``.venv-mjlab`` (``setup.sh``; ``venv.py`` re-runs a script there), which mjlab 1.6.0's
pin of mujoco 3.11 keeps apart from the runtime; ``make mjlab-parity`` creates it and runs the test.
"""
