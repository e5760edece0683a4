"""The training configuration: declared once with types and bounds, validated at load.

Every YAML under ``training/configs/`` is read through :func:`load_train_config`; trainers, the
mjlab adapter and the throughput bench get a typed :class:`TrainConfig`, never raw dicts. A bad
file fails with a message naming the key, the value and what is allowed (the same parser as the
stack's ``parkour_core.config``). Where the defaults come from: :class:`TrainConfig`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from parkour_core.config import ConfigError, describe, parse, yaml_error_line
from training.algorithms.hybrid import DAGGER_COEF, HybridConfig
from training.algorithms.schedules import DAGGER_FLOOR, ORIGINAL_TERMINATION_M, RELAXED_TERMINATION_M

CONFIG_DIR = Path(__file__).resolve().parent

__all__ = [
    "CONFIG_DIR", "ConfigError", "SmokeConfig", "TrainConfig", "describe_train_config", "load_smoke_size",
    "load_train_config", "shipped", "smoke_sizes",
]  # fmt: skip


def param(default: Any, lo: float | None = None, hi: float | None = None, choices: tuple = (), doc: str = "") -> Any:
    """A field with the metadata ``parkour_core.config.parse`` checks (range, choices) and a doc line."""
    meta = {"lo": lo, "hi": hi, "choices": choices, "doc": doc}
    if isinstance(default, list | dict):
        return field(default_factory=lambda: default.copy(), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class EnvConfig:
    backend: str = param(
        "mujoco_cpu", choices=("mujoco_cpu", "mjlab", "isaac"), doc="simulator: plain MuJoCo (CPU), mjlab, Isaac Lab"
    )
    robot: str = param("g1", choices=("g1", "h1"), doc="g1 (every task with references), h1 (h1_walk)")
    robot_model: str = param(
        "", doc="h1_walk: the robot's MuJoCo model (parkour_sim.models: '' the robot's default, or a name it lists)"
    )
    num_envs: int = param(4096, 1, 262144, doc="parallel environments over ALL ranks (each GPU runs num_envs/world)")
    episode_length_s: float = param(10.0, 0.1, 120.0, doc="time-out (PHP released code: 10 s)")
    control_hz: float = param(50.0, 10.0, 500.0, doc="policy rate (the robot runs the student at 50 Hz)")
    physics_dt_s: float = param(0.005, 0.0005, 0.02, doc="simulation step; decimation = 1 / (control_hz * dt)")
    motions: str = param("", doc="folder of `parkour mm synth` motion_*.npz; '' = the synthetic squat reference")
    skills: list = param(  # noqa: RUF009 - returns a field(default_factory=...)
        [], doc="skill names to train on ([] = every skill in the motions folder); one teacher per skill"
    )
    height_scan: bool = param(True, doc="teacher's privileged 0.7 m x 0.7 m height scan")
    reference_s: float = param(
        0.0,
        0.0,
        600.0,
        doc="php_teacher: each reference cut to its first seconds (0: whole), a task a CPU can learn",
    )
    camera_width: int = param(87, 10, 848, doc="student tasks: ray-cast depth columns (the bundle's 87, or fewer)")
    camera_height: int = param(58, 10, 480, doc="student tasks: ray-cast depth rows")

    @property
    def decimation(self) -> int:
        return round(1.0 / (self.control_hz * self.physics_dt_s))


@dataclass(frozen=True)
class RewardConfig:
    """PHP's DeepMimic terms ``exp(-err / sigma^2)`` and regularizers (field names as training.envs.rewards)."""

    sigma_body_pos: float = param(0.3, 1e-3, 10.0, doc="m")
    sigma_body_ori: float = param(0.4, 1e-3, 10.0, doc="rad")
    sigma_body_lin_vel: float = param(1.0, 1e-3, 100.0, doc="m/s")
    sigma_body_ang_vel: float = param(3.14, 1e-3, 100.0, doc="rad/s")
    sigma_anchor_pos: float = param(0.3, 1e-3, 10.0, doc="m")
    sigma_anchor_ori: float = param(0.4, 1e-3, 10.0, doc="rad")
    weight_body_pos: float = param(1.0, 0.0, 100.0)
    weight_body_ori: float = param(1.0, 0.0, 100.0)
    weight_body_lin_vel: float = param(1.0, 0.0, 100.0)
    weight_body_ang_vel: float = param(1.0, 0.0, 100.0)
    weight_anchor_pos: float = param(1.0, 0.0, 100.0)
    weight_anchor_ori: float = param(1.0, 0.0, 100.0)
    weight_action_rate: float = param(-0.1, -100.0, 0.0, doc="penalty: <= 0")
    weight_joint_limit: float = param(-10.0, -1000.0, 0.0, doc="penalty: <= 0")
    weight_self_contact: float = param(-0.5, -100.0, 0.0, doc="penalty: <= 0 (undesired contacts)")
    soft_limit_factor: float = param(0.9, 0.1, 1.0, doc="joint-limit penalty starts at this fraction of the range")


@dataclass(frozen=True)
class TerminationConfig:
    tracking_error_m: float = param(
        ORIGINAL_TERMINATION_M, 0.05, 5.0, doc="teacher: tracked-body / anchor position error that ends an episode"
    )
    relaxed_tracking_error_m: float = param(
        RELAXED_TERMINATION_M, 0.05, 5.0, doc="student: the threshold relaxed to by K/2 (schedules.py)"
    )
    anchor_ori: float = param(0.8, 0.01, 2.0, doc="projected-gravity z difference of the anchor (PHP code: 0.8)")


@dataclass(frozen=True)
class RandomizationConfig:
    """Domain randomization (PHP released code's ranges); ranges are [lo, hi]."""

    enabled: bool = param(True)
    static_friction: list = param([0.4, 1.3], doc="[lo, hi]")  # noqa: RUF009
    dynamic_friction: list = param([0.4, 1.1], doc="[lo, hi]")  # noqa: RUF009
    restitution: list = param([0.0, 0.5], doc="[lo, hi]")  # noqa: RUF009
    base_com_offset_m: list = param([0.025, 0.05, 0.05], doc="+- x, y, z offset of the torso CoM")  # noqa: RUF009
    joint_pos_bias_rad: float = param(0.01, 0.0, 0.2, doc="+- encoder bias, every joint")
    ankle_joint_pos_bias_rad: float = param(0.05, 0.0, 0.2, doc="+- encoder bias, ankles")
    push_interval_s: list = param([0.5, 1.0], doc="[lo, hi] time between pushes")  # noqa: RUF009
    push_max_vel: list = param(  # noqa: RUF009
        [0.1, 0.1, 0.05, 0.1, 0.1, 0.1], doc="+- base velocity kick x, y, z (m/s), roll, pitch, yaw (rad/s)"
    )
    action_delay_steps: list = param([0, 0], doc="[lo, hi] control steps (PHP code: delay off)")  # noqa: RUF009


@dataclass(frozen=True)
class PolicyConfig:
    actor_hidden: list = param([512, 256, 128], doc="MLP widths")  # noqa: RUF009
    critic_hidden: list = param([512, 256, 128], doc="MLP widths")  # noqa: RUF009
    activation: str = param("elu", choices=("elu", "relu", "tanh", "silu"))
    init_noise_std: float = param(1.0, 1e-4, 10.0, doc="initial action std (rsl-rl default 1.0)")
    recurrent: str = param("none", choices=("none", "gru", "lstm"), doc="student memory")
    rnn_hidden: int = param(256, 1, 4096)
    depth: bool = param(False, doc="student: 58x87 depth through the CNN backbone")
    depth_latent: int = param(32, 1, 1024)
    conv_channels: list = param([32, 64], doc="depth backbone: channels of its two convolutions")  # noqa: RUF009
    backbone_hidden: int = param(128, 1, 4096, doc="depth backbone: width of its hidden linear layer")
    obs_normalization: bool = param(False, doc="PHP code: empirical_normalization False")


@dataclass(frozen=True)
class PPOConfig:
    """rsl-rl's PPO settings; the defaults are rsl-rl's own."""

    num_steps_per_env: int = param(24, 1, 4096)
    num_epochs: int = param(5, 1, 100)
    num_mini_batches: int = param(4, 1, 65536)
    clip_param: float = param(0.2, 1e-3, 1.0)
    gamma: float = param(0.99, 0.0, 1.0)
    lam: float = param(0.95, 0.0, 1.0)
    value_loss_coef: float = param(1.0, 0.0, 100.0)
    use_clipped_value_loss: bool = param(True)
    entropy_coef: float = param(0.01, 0.0, 1.0)
    learning_rate: float = param(1e-3, 1e-7, 1.0)
    schedule: str = param("adaptive", choices=("adaptive", "fixed"), doc="rsl-rl's KL-adaptive learning rate or none")
    desired_kl: float = param(0.01, 1e-5, 1.0)
    min_lr: float = param(1e-5, 1e-9, 1.0)
    max_lr: float = param(1e-2, 1e-9, 1.0)
    max_grad_norm: float = param(1.0, 1e-3, 1000.0)


@dataclass(frozen=True)
class DistillConfig:
    """PHP's hybrid DAgger + PPO (training/algorithms); the schedule constants live in schedules.py."""

    enabled: bool = param(False, doc="student runs: True; teacher runs: False")
    dagger_coef: float = param(DAGGER_COEF, 0.0, 1000.0, doc="PHP: 10")
    schedule: str = param(
        "php",
        choices=("php",),
        doc=f"lambda_D = max({DAGGER_FLOOR}, 1 - k / (K/2)), lambda_PPO = 1 - lambda_D, termination relaxed on the "
        "same ramp (training.algorithms.schedules)",
    )
    critic_always_trained: bool = param(True, doc="value loss not scaled by lambda_PPO (our choice)")
    latch_mask: bool = param(True, doc="DAgger mask stays off until reset once an env breaks 0.5 m")
    teacher_checkpoints: list = param(  # noqa: RUF009
        [], doc="one per skill, in env.skills order; student_step: a climb_teacher's teacher.pt (else the reflex)"
    )
    num_epochs: int = param(2, 1, 100, doc="DAgger-only tasks (rsl_rl Distillation): passes over each rollout")
    num_mini_batches: int = param(4, 1, 65536, doc="DAgger-only tasks: groups of environments per pass")
    learning_rate: float = param(3e-4, 1e-7, 1.0, doc="DAgger-only tasks")
    beta_end_fraction: float = param(
        0.5, 1e-3, 1.0, doc="student_walk: the teacher's share of the blended action falls 1 -> 0 by this fraction"
    )
    teacher_env_fraction: float = param(
        0.125, 0.0, 1.0, doc="student_walk: environments that always run the teacher (the speed reference)"
    )
    gate_rate: float = param(
        0.0, 0.0, 1.01, doc="student_step: trailing step-up rate at which the hybrid schedule advances (0: always)"
    )


@dataclass(frozen=True)
class SamplingConfig:
    adaptive: bool = param(True, doc="teachers: adaptive start sampling; the student: off (PHP)")
    bins: int = param(10, 1, 10000)
    decay: float = param(0.9, 0.0, 1.0, doc="old failure counts decay by this per record")
    uniform_fraction: float = param(0.2, 0.0, 1.0)


@dataclass(frozen=True)
class CourseConfig:
    """student_step: the platform course and its curriculum (training.student_step.env)."""

    start_cap_m: float = param(0.10, 0.0, 1.0, doc="platforms' upper height at the start of the curriculum")
    curriculum_fraction: float = param(0.3, 1e-3, 1.0, doc="the cap reaches max_height_m by this fraction")
    min_height_m: float = param(0.04, 0.0, 1.0)
    max_height_m: float = param(0.22, 0.0, 1.0)
    walk_fraction: float = param(0.2, 0.0, 1.0, doc="episodes of stage 1's walking (no course)")
    platforms: int = param(3, 1, 8, doc="platforms per course")
    speed_mps: list = param(  # noqa: RUF009
        [0.5, 1.0], doc="[lo, hi] commanded speed along a course, drawn per episode and held"
    )
    progress_reward: bool = param(
        True,
        doc="track the command along the course (+x) and end episodes that leave its lane; "
        "false: track it in the robot's own heading (the first stage-2 run)",
    )
    lane_half_width_m: float = param(1.5, 0.1, 10.0, doc="a course episode ends when |y| exceeds this")
    teacher_command_gain: float = param(
        1.0,
        0.5,
        3.0,
        doc="the teacher is commanded this times the forward speed the student is: on the course the walking "
        "policy moves at about half its command (results/training/student_step/teacher_speed.json)",
    )
    supervisor_limits: bool = param(
        False,
        doc="as under the supervisor: targets (and the teacher's labels) clamped inside the joint limits, and "
        "targets it would refuse end the episode as a fall",
    )


@dataclass(frozen=True)
class HILConfig:
    """hil_teacher: HIL's hybrid env (tracking and adversarial envs) and its AMP discriminator
    (training.methods.hil: hybrid_env.HybridEnvConfig, discriminator.DiscriminatorConfig)."""

    tracking_fraction: float = param(0.5, 0.0, 1.0, doc="envs that track the reference; the rest are adversarial")
    task_weight: float = param(0.5, 0.0, 10.0, doc="AMP's w_G: the adversarial envs' target-location reward")
    style_weight: float = param(0.5, 0.0, 10.0, doc="AMP's w_S: the discriminator's style reward")
    arrive_m: float = param(0.3, 0.0, 10.0, doc="within this of the target the task reward is full")
    min_speed_mps: float = param(0.0, 0.0, 5.0, doc="floor of the commanded speed v*")
    fall_height_m: float = param(0.35, 0.0, 2.0, doc="an adversarial episode ends with the pelvis below this")
    max_tilt_rad: float = param(1.0, 0.1, 3.14, doc="or tilted past this")
    disc_hidden: list = param([256, 128], doc="discriminator MLP widths (ReLU)")  # noqa: RUF009
    disc_loss: str = param("lsgan", choices=("lsgan", "bce"), doc="AMP's least-squares loss or the GAN's")
    disc_gp_weight: float = param(5.0, 0.0, 1000.0, doc="AMP's w_gp")
    disc_learning_rate: float = param(1e-4, 1e-7, 1.0)
    disc_weight_decay: float = param(1e-4, 0.0, 1.0, doc="on the output layer's logit weights")
    disc_batch_size: int = param(256, 1, 1_000_000)
    disc_steps_per_iteration: int = param(4, 0, 10_000, doc="discriminator steps after each PPO update")
    disc_normalize: bool = param(True, doc="running normalization of the transition features")


@dataclass(frozen=True)
class HPLConfig:
    """hpl_oracle: the terrain curriculum and the scandot encoder; hpl_student: the shares of its
    environments and its loss (training.methods.hpl)."""

    levels: int = param(5, 1, 100, doc="curriculum levels: one hurdle height each, 0 to the highest")
    encoder_hidden: list = param([64], doc="scandot encoder MLP widths (ELU)")  # noqa: RUF009
    latent_dim: int = param(16, 1, 1024, doc="scandot latent (HPL: 32)")
    workers: int = param(2, 1, 256, doc="hpl_student: shares of env.num_envs, each labelled by its own oracle")
    processes: bool = param(
        True, doc="hpl_student: each share in its own process; false: all in the trainer, stepped in turn"
    )
    pure_dagger: bool = param(
        True, doc="hpl_student: HPL's DAgger (lambda_D held at 1, lambda_PPO at 0); false: PHP's hybrid schedule"
    )


@dataclass(frozen=True)
class LLPConfig:
    """llp_student: LLP's student around PHP's (training.methods.llp): the encoder before the GRU, the
    height-scan decoder, the camera timing and the references' cut around each skill."""

    encoder_hidden: list = param([256], doc="the MLP before the GRU (ELU)")  # noqa: RUF009
    encoder_out: int = param(128, 1, 4096, doc="its output, the GRU's input")
    decoder_hidden: list = param([128], doc="GRU state -> height scan decoder widths (training only)")  # noqa: RUF009
    reconstruction_weight: float = param(1.0, 0.0, 1000.0, doc="weight of the height-scan MSE in the loss")
    style_weight: float = param(0.5, 0.0, 100.0, doc="the transition prior's style reward, added per step")
    prior_hidden: list = param([64, 64], doc="the transition discriminator's widths")  # noqa: RUF009
    prior_learning_rate: float = param(1e-3, 1e-7, 1.0)
    prior_gradient_penalty: float = param(5.0, 0.0, 1000.0, doc="AMP's w_gp on the real transitions")
    prior_epochs: int = param(2, 0, 1000, doc="full-batch discriminator steps per iteration")
    camera_hz: list = param([27.0, 33.0], doc="[lo, hi] camera rate, drawn per episode")  # noqa: RUF009
    latency_s: list = param([0.030, 0.060], doc="[lo, hi] frame latency, drawn per frame")  # noqa: RUF009
    around_skill_s: list = param([0.8, 0.8], doc="each reference cut this long before and after its skill")  # noqa: RUF009


@dataclass(frozen=True)
class VelocityConfig:
    """h1_walk: velocity commands, gait clock, pushes and falls (training.h1_walk.env; rewards in its rewards.py)."""

    vx: list = param([-0.5, 1.0], doc="[lo, hi] m/s, forward in the base frame")  # noqa: RUF009
    vy: list = param([-0.3, 0.3], doc="[lo, hi] m/s, left")  # noqa: RUF009
    yaw_rate: list = param([-0.5, 0.5], doc="[lo, hi] rad/s")  # noqa: RUF009
    zero_fraction: float = param(0.1, 0.0, 1.0, doc="commands that are zero (the gait clock parks: stand still)")
    resample_s: float = param(5.0, 0.1, 1000.0, doc="a new command this often")
    gait_period_s: float = param(0.8, 0.2, 3.0, doc="the bundle's gait clock (unitree_rl_gym's H1: 0.8 s)")
    fall_height_m: float = param(0.6, 0.0, 2.0, doc="an episode ends with the base below this")
    fall_tilt_rad: float = param(0.8, 0.1, 3.14, doc="or tilted past this")
    joint_noise_rad: float = param(0.05, 0.0, 1.0, doc="+- on the default pose at reset")
    push_interval_s: float = param(5.0, 0.1, 1e9, doc="a base velocity kick this often")
    push_vel_mps: float = param(0.5, 0.0, 5.0, doc="+- planar kick")
    curriculum_start: float = param(0.5, 0.05, 1.0, doc="the command ranges times this at first (1: no curriculum)")
    curriculum_step: float = param(0.1, 0.0, 1.0, doc="added to that factor after an iteration that tracks well")
    curriculum_threshold: float = param(0.8, 0.0, 1.0, doc="mean planar tracking term (0..1) that widens the ranges")
    friction: list = param([0.5, 1.25], doc="[lo, hi] friction of floor and robot, per episode")  # noqa: RUF009
    added_mass_kg: list = param([-1.0, 3.0], doc="[lo, hi] mass added to the pelvis, per episode")  # noqa: RUF009
    com_offset_m: float = param(0.02, 0.0, 0.2, doc="+- the torso's centre of mass, each axis, per episode")
    motor_strength: list = param([0.9, 1.1], doc="[lo, hi] kp and kd times this, per episode")  # noqa: RUF009
    obs_noise: float = param(1.0, 0.0, 5.0, doc="policy observation noise, times unitree_rl_gym's H1 scales")
    only_positive_rewards: bool = param(True, doc="a step's reward is clipped at 0 (legged_gym)")
    reward_weights: dict = param(  # noqa: RUF009 - returns a field(default_factory=...)
        {}, doc="term -> weight over training.h1_walk.rewards.Weights (a name it lacks is refused)"
    )


@dataclass(frozen=True)
class ClimbSection:
    """climb_teacher: the box courses, their curriculum and the residual on the walking policy
    (training.climb_teacher.env.ClimbConfig; rewards in its rewards.py)."""

    boxes: int = param(2, 1, 8, doc="boxes per course")
    flat_fraction: float = param(0.1, 0.0, 1.0, doc="episodes on flat ground (the pace without boxes)")
    levels: list = param(  # noqa: RUF009
        [0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40], doc="box height (m) of each curriculum level"
    )
    height_jitter_m: float = param(0.025, 0.0, 0.2, doc="+- around the level's height, per box")
    start_level: int = param(0, 0, 100, doc="every environment's first level")
    speed_mps: list = param([0.3, 1.5], doc="[lo, hi] commanded speed along the course")  # noqa: RUF009
    first_m: list = param([1.0, 3.0], doc="[lo, hi] start to the first box's near face")  # noqa: RUF009
    spacing_m: list = param([2.5, 3.5], doc="[lo, hi] near face to near face")  # noqa: RUF009
    residual_scale: float = param(1.0, 0.0, 10.0, doc="action = walking policy's + this x the learner's")
    residual_on: str = param(
        "lower_body", choices=("legs", "lower_body", "all"), doc="the joints the learner's residual moves (+ waist)"
    )
    refusal_ends_episode: bool = param(
        True, doc="targets the supervisor would refuse end the episode as a failure (false: only penalised)"
    )
    residual_init_gain: float = param(
        0.01, 0.0, 1.0, doc="the actor's output layer scaled by this at the start: it begins as the walking policy"
    )
    reward_weights: dict = param(  # noqa: RUF009 - returns a field(default_factory=...)
        {}, doc="term -> weight over training.climb_teacher.rewards.Weights (a name it lacks is refused)"
    )


@dataclass(frozen=True)
class SmokeConfig:
    """task smoke: one size of ``parkour train smoke --size NAME`` (training.pipeline.smoke and the
    methods' smoke chains): the references it synthesizes and the configs each method's stages train."""

    size: str = param("", doc="the name --size takes ('': not a smoke size)")
    motions: int = param(2, 1, 1000, doc="references `parkour mm synth --count` writes")
    reference_s: float = param(1.0, 0.1, 600.0, doc="each reference cut to its first seconds: the toy task")
    sim_active_s: float = param(1.0, 0.1, 3600.0, doc="seconds the trained policy drives the simulated robot")
    php_teacher: str = param("php_teacher_tiny", doc="php, llp: the tracking teacher's config")
    php_student: str = param("php_student_tiny", doc="php, hil: the student's config (php --config replaces it)")
    hil_teacher: str = param("hil_teacher_tiny", doc="hil: the teacher's config")
    llp_student: str = param("llp_student_tiny", doc="llp: the student's config")
    hpl_oracle: str = param("hpl_oracle_tiny", doc="hpl: the oracle's config (its hpl.levels set the curriculum)")
    hpl_student: str = param("hpl_student_tiny", doc="hpl: the student's config")


@dataclass(frozen=True)
class RunConfig:
    max_iterations: int = param(20000, 1, 10_000_000, doc="K: the schedules run on k / K")
    minutes: float = param(0.0, 0.0, 100_000.0, doc="time box (0: run max_iterations); K is set from the pace")
    init: str = param(
        "", doc="student_step: a student-walk bundle (or its checkpoint.pt); h1_walk: a run's model_latest.pt"
    )
    save_interval: int = param(500, 1, 10_000_000)
    seed: int = param(0, 0, 2**31 - 1, doc="rank r uses seed + r")
    device: str = param("cuda", choices=("cpu", "cuda"))
    experiment_name: str = param("php")
    out: str = param("runs/train", doc="checkpoints and logs go to <out>/<experiment_name>")


TASKS = (
    "php", "php_teacher", "php_student", "student_walk", "student_step", "h1_walk", "climb_teacher", "hil_teacher",
    "hpl_oracle", "hpl_student", "llp_student", "smoke",
)  # fmt: skip


@dataclass(frozen=True)
class TrainConfig:
    """One training run's config. Provenance of the defaults (each YAML repeats the values it relies on,
    with the same notes):

    - PHP (paper): 16384 envs, 20K iterations, MLP [2048, 1024, 512, 256, 128] ELU, student learning rate
      3e-4, DAgger coefficient 10, lambda_D = max(0.1, 1 - k / (K / 2)), termination 0.5 m relaxed to
      1.0 m, DeepMimic sigmas (see ``RewardConfig``).
    - PHP (released code, amazon-far/php_parkour ``wbt_training/config_values``): student PPO 2 epochs x
      96 mini-batches, entropy 0.001, initial action std 0.01; teacher 5 epochs, entropy 0.005, initial
      std 1.0, learning rate 1e-3; domain randomization ranges and 0.5 m body/anchor termination with 0.8
      orientation threshold.
    - rsl-rl defaults everywhere PHP states nothing: 24 steps per env, clip 0.2, gamma 0.99, lambda 0.95,
      value coefficient 1.0, clipped value loss, adaptive schedule with desired KL 0.01, gradient-norm
      clip 1.0, 4 mini-batches.
    """

    task: str = param("php", choices=TASKS, doc="what the config trains (training.tasks)")
    kind: str = param("teacher", choices=("teacher", "student"))
    env: EnvConfig = field(default_factory=EnvConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    termination: TerminationConfig = field(default_factory=TerminationConfig)
    randomization: RandomizationConfig = field(default_factory=RandomizationConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    distill: DistillConfig = field(default_factory=DistillConfig)
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    course: CourseConfig = field(default_factory=CourseConfig)
    velocity: VelocityConfig = field(default_factory=VelocityConfig)
    climb: ClimbSection = field(default_factory=ClimbSection)
    hil: HILConfig = field(default_factory=HILConfig)
    hpl: HPLConfig = field(default_factory=HPLConfig)
    llp: LLPConfig = field(default_factory=LLPConfig)
    smoke: SmokeConfig = field(default_factory=SmokeConfig)
    run: RunConfig = field(default_factory=RunConfig)

    @property
    def batch_size(self) -> int:
        """Samples per iteration over all ranks: num_envs x num_steps_per_env."""
        return self.env.num_envs * self.ppo.num_steps_per_env

    def hybrid_config(self) -> HybridConfig:
        """The update's coefficients (training.algorithms.hybrid) from this config."""
        p = self.ppo
        return HybridConfig(
            clip_param=p.clip_param,
            value_loss_coef=p.value_loss_coef,
            entropy_coef=p.entropy_coef,
            dagger_coef=self.distill.dagger_coef,
            use_clipped_value_loss=p.use_clipped_value_loss,
            critic_always_trained=self.distill.critic_always_trained,
            num_epochs=p.num_epochs,
            num_mini_batches=p.num_mini_batches,
            learning_rate=p.learning_rate,
            desired_kl=p.desired_kl if p.schedule == "adaptive" else None,
            min_lr=p.min_lr,
            max_lr=p.max_lr,
            max_grad_norm=p.max_grad_norm,
        )

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# ----------------------------------------------------------------------------- checks across keys


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _check_range_pair(key: str, value: list, lo: float, hi: float, integer: bool = False) -> None:
    ok = len(value) == 2 and all(_is_number(x) for x in value)
    ok = ok and (not integer or all(float(x).is_integer() for x in value))
    if not ok or not lo <= value[0] <= value[1] <= hi:
        kind = "integers" if integer else "numbers"
        raise ConfigError(f"{key}: expected [lo, hi] {kind} with {lo} <= lo <= hi <= {hi}, got {value!r}")


def _check_widths(key: str, value: list) -> None:
    if not value or not all(isinstance(x, int) and not isinstance(x, bool) and 1 <= x <= 65536 for x in value):
        raise ConfigError(f"{key}: expected a non-empty list of layer widths 1..65536, got {value!r}")


def _check_weights(key: str, weights: dict, terms: type) -> None:
    known = {f.name for f in dataclasses.fields(terms)}
    bad = sorted(k for k, w in weights.items() if k not in known or not _is_number(w))
    if bad:
        raise ConfigError(f"{key}: {bad}: each key must be a term of {sorted(known)} and its weight a number")


def _validate(cfg: TrainConfig) -> None:
    v = cfg.velocity
    for key, pair in (("velocity.vx", v.vx), ("velocity.vy", v.vy), ("velocity.yaw_rate", v.yaw_rate)):
        _check_range_pair(key, pair, -5.0, 5.0)
    _check_range_pair("velocity.friction", v.friction, 0.05, 5.0)
    _check_range_pair("velocity.added_mass_kg", v.added_mass_kg, -20.0, 20.0)
    _check_range_pair("velocity.motor_strength", v.motor_strength, 0.1, 3.0)
    if v.reward_weights:
        from training.h1_walk.rewards import Weights

        _check_weights("velocity.reward_weights", v.reward_weights, Weights)
    if cfg.climb.reward_weights:
        from training.climb_teacher.rewards import Weights as ClimbWeights

        _check_weights("climb.reward_weights", cfg.climb.reward_weights, ClimbWeights)
    if (cfg.task == "h1_walk") != (cfg.env.robot == "h1"):
        raise ConfigError(
            f"env.robot: {cfg.env.robot!r} with task {cfg.task}: the H1 trains h1_walk, and h1_walk the H1"
        )
    if cfg.env.robot_model:
        from parkour_core.robots import get_robot
        from parkour_sim.models import robot_model

        try:
            robot_model(get_robot(cfg.env.robot), cfg.env.robot_model)
        except ValueError as e:
            raise ConfigError(f"env.robot_model: {e}") from None
    _check_range_pair("course.speed_mps", cfg.course.speed_mps, 0.0, 5.0)
    cl = cfg.climb
    _check_range_pair("climb.speed_mps", cl.speed_mps, 0.0, 5.0)
    _check_range_pair("climb.first_m", cl.first_m, 0.0, 20.0)
    _check_range_pair("climb.spacing_m", cl.spacing_m, 0.8, 20.0)
    if not cl.levels or not all(_is_number(h) and 0.0 <= h <= 1.0 for h in cl.levels) or cl.levels != sorted(cl.levels):
        raise ConfigError(f"climb.levels: expected rising box heights in [0, 1] m, got {cl.levels!r}")
    if cl.start_level >= len(cl.levels):
        raise ConfigError(f"climb.start_level: {cl.start_level}, but climb.levels has {len(cl.levels)} levels")
    if cfg.task == "climb_teacher" and (cfg.env.physics_dt_s != 0.002 or cfg.env.control_hz != 50.0):
        raise ConfigError(
            f"env.physics_dt_s: {cfg.env.physics_dt_s} at {cfg.env.control_hz} Hz: climb_teacher runs the bridge's "
            "2 ms step at the walking policy's 50 Hz (set env.physics_dt_s: 0.002, env.control_hz: 50)"
        )
    r = cfg.randomization
    _check_range_pair("randomization.static_friction", r.static_friction, 0.0, 5.0)
    _check_range_pair("randomization.dynamic_friction", r.dynamic_friction, 0.0, 5.0)
    _check_range_pair("randomization.restitution", r.restitution, 0.0, 1.0)
    _check_range_pair("randomization.push_interval_s", r.push_interval_s, 0.01, 100.0)
    _check_range_pair("randomization.action_delay_steps", r.action_delay_steps, 0, 10, integer=True)
    for key, value, n, hi in (
        ("randomization.base_com_offset_m", r.base_com_offset_m, 3, 0.5),
        ("randomization.push_max_vel", r.push_max_vel, 6, 5.0),
    ):
        if len(value) != n or not all(_is_number(x) and 0.0 <= x <= hi for x in value):
            raise ConfigError(f"{key}: expected {n} numbers in [0, {hi}], got {value!r}")
    _check_widths("policy.actor_hidden", cfg.policy.actor_hidden)
    _check_widths("policy.critic_hidden", cfg.policy.critic_hidden)
    _check_widths("hil.disc_hidden", cfg.hil.disc_hidden)
    _check_widths("hpl.encoder_hidden", cfg.hpl.encoder_hidden)
    _check_widths("llp.encoder_hidden", cfg.llp.encoder_hidden)
    _check_widths("llp.decoder_hidden", cfg.llp.decoder_hidden)
    _check_widths("llp.prior_hidden", cfg.llp.prior_hidden)
    _check_range_pair("llp.camera_hz", cfg.llp.camera_hz, 1.0, 1000.0)
    _check_range_pair("llp.latency_s", cfg.llp.latency_s, 0.0, 1.0)
    if len(cfg.llp.around_skill_s) != 2 or not all(_is_number(x) and 0.0 <= x <= 100.0 for x in cfg.llp.around_skill_s):
        raise ConfigError(f"llp.around_skill_s: expected [before, after] seconds in [0, 100], "
                          f"got {cfg.llp.around_skill_s!r}")  # fmt: skip
    if len(cfg.policy.conv_channels) != 2:
        raise ConfigError(f"policy.conv_channels: expected two channel counts, got {cfg.policy.conv_channels!r}")
    _check_widths("policy.conv_channels", cfg.policy.conv_channels)
    if cfg.course.min_height_m > cfg.course.max_height_m:
        raise ConfigError(f"course.min_height_m: {cfg.course.min_height_m} is above course.max_height_m "
                          f"{cfg.course.max_height_m}")  # fmt: skip
    if cfg.task == "student_walk" and cfg.distill.num_mini_batches > cfg.env.num_envs:
        raise ConfigError(f"distill.num_mini_batches: {cfg.distill.num_mini_batches} exceeds env.num_envs "
                          f"{cfg.env.num_envs} (each mini-batch is a group of environments)")  # fmt: skip
    if cfg.task in ("student_walk", "student_step") and not (cfg.policy.depth and cfg.policy.recurrent == "gru"):
        raise ConfigError(
            f"task {cfg.task}: the depth student is recurrent (policy.recurrent: gru, policy.depth: true)"
        )
    lists = (("env.skills", cfg.env.skills), ("distill.teacher_checkpoints", cfg.distill.teacher_checkpoints))
    for key, value in lists:
        if not all(isinstance(x, str) and x for x in value):
            raise ConfigError(f"{key}: expected a list of non-empty strings, got {value!r}")
    decimation = 1.0 / (cfg.env.control_hz * cfg.env.physics_dt_s)
    if abs(decimation - round(decimation)) > 1e-6:
        raise ConfigError(
            f"env.physics_dt_s: {cfg.env.physics_dt_s} does not divide the control period 1/{cfg.env.control_hz} s"
        )
    if cfg.termination.relaxed_tracking_error_m < cfg.termination.tracking_error_m:
        raise ConfigError(
            f"termination.relaxed_tracking_error_m: {cfg.termination.relaxed_tracking_error_m} is below "
            f"termination.tracking_error_m {cfg.termination.tracking_error_m}"
        )
    p = cfg.ppo
    if not p.min_lr <= p.learning_rate <= p.max_lr:
        raise ConfigError(
            f"ppo.learning_rate: {p.learning_rate} is outside [ppo.min_lr, ppo.max_lr] = [{p.min_lr}, {p.max_lr}]"
        )
    if p.num_mini_batches > cfg.batch_size:
        raise ConfigError(
            f"ppo.num_mini_batches: {p.num_mini_batches} exceeds the batch of {cfg.batch_size} samples "
            "(env.num_envs x ppo.num_steps_per_env)"
        )
    if cfg.task == "hpl_student" and cfg.env.num_envs % cfg.hpl.workers:
        raise ConfigError(f"hpl.workers: {cfg.hpl.workers} shares do not split env.num_envs {cfg.env.num_envs}")
    if (cfg.task == "smoke") != bool(cfg.smoke.size):
        raise ConfigError(f"smoke.size: {cfg.smoke.size!r} with task {cfg.task}: a smoke size names itself, "
                          "and only a smoke size does (task: smoke)")  # fmt: skip
    if cfg.kind == "student" and not cfg.distill.enabled:
        raise ConfigError("distill.enabled: a student run distils its teachers; set it true (or kind: teacher)")
    if cfg.kind == "teacher" and cfg.distill.enabled:
        raise ConfigError("distill.enabled: a teacher run has no teacher to distil; set it false (or kind: student)")
    if cfg.kind == "student" and cfg.sampling.adaptive:
        raise ConfigError("sampling.adaptive: PHP samples the student's skills uniformly, adaptive sampling is off")
    if cfg.run.minutes == 0 and cfg.run.save_interval > cfg.run.max_iterations:
        raise ConfigError(
            f"run.save_interval: {cfg.run.save_interval} exceeds run.max_iterations {cfg.run.max_iterations}"
        )


# ----------------------------------------------------------------------------- loading


def parse_train_config(data: dict[str, Any] | None) -> TrainConfig:
    """Build and check a TrainConfig from a mapping (a loaded YAML)."""
    cfg = parse(TrainConfig, data or {})
    _validate(cfg)
    return cfg


def load_train_config(path: Path | str, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """Read ``path`` (a YAML file, or a name under training/configs/ such as ``smoke_cpu``).

    ``overrides`` maps dotted keys to values (``{"env.num_envs": 64}``) and is checked like the file.
    """
    path = Path(path)
    if not path.suffix and not path.exists():
        path = CONFIG_DIR / f"{path}.yaml"
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"training config {path} does not exist; shipped: {[p.stem for p in shipped()]}") from None
    except yaml.YAMLError as e:
        raise ConfigError(yaml_error_line(path, e)) from None
    data = data or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top, got {type(data).__name__}")
    for dotted, value in (overrides or {}).items():
        node = data
        *parents, leaf = dotted.split(".")
        for p in parents:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                raise ConfigError(f"{path}: override {dotted}: {p} is not a section")
        node[leaf] = value
    try:
        return parse_train_config(data)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None


def shipped() -> list[Path]:
    """The YAML configs shipped in training/configs/."""
    return sorted(CONFIG_DIR.glob("*.yaml"))


def smoke_sizes() -> dict[str, Path]:
    """The smoke sizes shipped (configs with ``task: smoke``), by the name ``--size`` takes."""
    sizes: dict[str, Path] = {}
    for path in shipped():
        cfg = load_train_config(path)
        if cfg.task == "smoke":
            if cfg.smoke.size in sizes:
                raise ConfigError(f"{path}: smoke.size {cfg.smoke.size!r} is also {sizes[cfg.smoke.size]}'s")
            sizes[cfg.smoke.size] = path
    return sizes


def load_smoke_size(size: str) -> SmokeConfig:
    """``parkour train smoke --size NAME``'s section; an unknown name says which sizes exist."""
    sizes = smoke_sizes()
    if size not in sizes:
        raise ConfigError(f"smoke size {size!r} is not one of {', '.join(sorted(sizes))} "
                          f"(training/configs/*.yaml with task: smoke, by smoke.size)")  # fmt: skip
    return load_train_config(sizes[size]).smoke


def describe_train_config() -> list[str]:
    """One line per key: type, default, range, doc."""
    return describe(TrainConfig)
