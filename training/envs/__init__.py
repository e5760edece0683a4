"""Training environments on plain MuJoCo (CPU): the motion-tracking teacher and the depth student.

- :mod:`training.envs.reference` - synthesized references with their forward kinematics;
- :mod:`training.envs.rewards` - PHP's DeepMimic rewards, regularizers and termination (pure numpy);
- :mod:`training.envs.privileged` - the teacher's privileged observation, height scan included;
- :mod:`training.envs.randomization` - PHP's domain randomization and pushes;
- :mod:`training.envs.mujoco_cpu` - the batched MuJoCo backend (``mujoco.rollout`` threads);
- :mod:`training.envs.tracking` - the batched teacher environment;
- :mod:`training.envs.student` - the student's observation (parkour_core terms, simulated D435i).
"""
