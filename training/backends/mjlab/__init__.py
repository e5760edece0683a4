"""The mjlab (MuJoCo-Warp) backend of the two depth students: runs inside .venv-mjlab (setup.sh), never
imported by the runtime.

``parkour train run --config <cfg> --backend mjlab --device cpu|cuda`` calls ``smoke.py`` under
.venv-mjlab; ``test_smoke.py`` trains each student for two iterations on warp's CPU device and checks it
against our CPU code with ``checks.py`` and ``step_checks.py``. The students on mjlab 1.6.0:

- ``student_walk``: ``walk_task.py``, with ``depth.py``, ``policy_terms.py`` and ``student_bundle.py``;
- ``student_step``: ``step_task.py``, with ``step_terms.py`` and ``terrain.py`` (the critic's height scan).

``export_velocity.py``, ``velocity_parity.py``: a real mjlab export and its environment's states for the
import parity test. ``php_teacher`` and ``h1_walk`` run their own MDP on MuJoCo-Warp (``env.backend:
mujoco_warp``, :mod:`training.envs.physics`), with no restatement here; PHP's student stays on ``mujoco_cpu``.
The students' depth image comes from a ray-cast sensor carrying our camera's exact rays rather than mjlab's
camera sensor, whose render crops the D435's field to the image's aspect (``depth.camera_sensor_cfg``).
"""
