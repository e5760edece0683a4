"""The mjlab (MuJoCo-Warp) backend: runs inside .venv-mjlab (setup.sh), never imported by the runtime.

What runs on mjlab 1.6.0 (``parkour train run --config <cfg> --backend mjlab --device cpu|cuda``, which
calls ``smoke.py`` under .venv-mjlab; ``test_smoke.py`` trains each for two iterations on warp's CPU
device and checks them against our CPU code with ``checks.py``):

- the PHP teacher (``task.py``, ``Parkour-PHP-Teacher-G1``): motion tracking on mjlab's G1, each
  reference's boxes on its own tile of mjlab's terrain generator (``terrain.py``), the privileged
  0.7 m x 0.7 m height scan as a yaw-aligned ray-cast sensor on the CPU env's grid, several
  references in one run with adaptive start sampling per reference (``motion.py``);
- ``h1_walk`` (``h1_velocity.py``, ``Parkour-H1-Velocity``): our own H1 MJCF on mjlab's velocity-task
  managers, h1_walk's observation terms, gait clock and unitree_rl_gym reward terms;
- ``student_walk`` (``walk_task.py``): the walking depth student, DAgger from the walking policy, on an
  mjlab env through OUR runner (``training/rl``: ``BlendedDistillation``, ``DepthRecurrentModel``; mjlab's
  runner has no such distillation), its depth from the camera's rays (``depth.py``), its observation
  and the teacher's labels from parkour_core's terms restated in torch (``policy_terms.py``), its
  bundle written by the CPU task's exporter in the runtime venv (``student_bundle.py``);
- ``student_step`` (``step_task.py``): the step-up student, HybridPPO (DAgger + PPO) through OUR runner
  with StepTask's gate, curriculum and weight choice, on walk_task's env made StepEnv: a pool of course
  tiles ordered by platform height (the curriculum's cap picks among them at each reset), the course's
  reward, lane exits and platform passes (``step_terms.py``, equal to ``StepEnv.step_course`` from the
  same state), the privileged step-up reflex over each tile's boxes, and the asymmetric critic's
  privileged group with the ray-cast height scan (``step_checks.py`` checks the reflex, the labels and
  that group against the CPU code).

Not on mjlab yet: PHP's student; it stays on ``mujoco_cpu``.

**Can mjlab give each environment the students' 58 x 87 depth image? Yes**, two ways, both measured
by ``checks.py depth`` (G1 torso D435 mount of the robot spec, 4 environments, warp's CPU device):

1. ``mjlab.sensor.CameraSensorCfg(data_types=("depth",))`` (``mjlab/sensor/camera_sensor.py``) wraps a
   MuJoCo camera and renders through mujoco_warp's ray-traced renderer
   (``mujoco_warp.create_render_context`` / ``mujoco_warp.render``, ``_src/render.py``: one BVH over the
   worlds, refit at every ``Simulation.sense()``); ``sensor.data.depth`` is ``[num_envs, 58, 87, 1]``
   float32 planar z-depth (0 where a ray misses), the convention of our simulated D435. It equals our
   CPU ray-cast depth (``parkour_sim.depth_camera.SimDepthCamera``, ``mj_multiRay``) to 1e-6 m, but only
   at square pixels: ``render_util.compute_ray`` crops the camera's sensor to the image's aspect, so an
   87 x 58 pixel image spans 79.5 x 58 deg, not the D435's 87 x 58 deg (up to 0.11 m apart at the box
   edges). The D435's field needs a 99 x 58 render (86.8 x 58 deg) resized to 87 columns.
2. ``mjlab.sensor.RayCastSensorCfg`` with a pattern carrying our camera's 5,046 pixel rays (on
   ``torso_link``, ``ray_alignment="base"``; ``checks.camera_ray_pattern_cfg``): z-depth = distance /
   |(x, y, -1)|, equal to our CPU depth image at 87 x 58 deg to 3.4e-7 m.

Cost on warp's CPU device here (2 shared cores, 4 environments): a 58 x 87 render 24-41 ms for all four,
against 220-300 ms for an env step (smoke_cpu: 10 physics steps of 2 ms); the ray sensor 76-83 ms. Its cost on a
GPU is not measured; mujoco_warp's renderer is built for batched rendering on GPUs, so usable cost there
is likely but unproven. ``walk_task.py`` takes way 2 (our exact rays, turned per
environment by the camera's mount jitter) with the CPU env's noise, latency and preprocessing in torch
(``depth.py``).
"""
