"""The mjlab (MuJoCo-Warp) backend: runs inside .venv-mjlab (setup.sh), never imported by the runtime.

``parkour train run --config <cfg> --backend mjlab --device cpu|cuda`` calls ``smoke.py`` under
.venv-mjlab; ``test_smoke.py`` trains each task for two iterations on warp's CPU device and checks it
against our CPU code with ``checks.py`` and ``step_checks.py``. The tasks on mjlab 1.6.0:

- the PHP teacher: ``task.py``, with ``terrain.py`` and ``motion.py``;
- ``student_walk``: ``walk_task.py``, with ``depth.py``, ``policy_terms.py`` and ``student_bundle.py``;
- ``student_step``: ``step_task.py``, with ``step_terms.py``.

``export_velocity.py``, ``velocity_parity.py``: a real mjlab export and its environment's states for the
import parity test. PHP's student stays on ``mujoco_cpu``; ``h1_walk`` runs its own MDP on MuJoCo-Warp
(``env.backend: mujoco_warp``, :mod:`training.envs.physics`), with no restatement here. The students' depth
image comes from a ray-cast sensor carrying our camera's exact rays rather than mjlab's camera sensor, whose
render crops the D435's field to the image's aspect (``depth.camera_sensor_cfg``; both measured against our CPU depth).
"""
