"""The training configuration: declared once with types and bounds, validated at load.

Every preset (``training/tasks/<task>/presets/*.yaml``) is read through :func:`load_train_config`; trainers, the
mjlab adapter and the throughput bench get a typed :class:`TrainConfig`, never raw dicts. A bad
file fails with a message naming the key, the value and what is allowed (the same parser as the
stack's ``parkour_core.config``). Where the defaults come from: :class:`TrainConfig`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import yaml

from parkour_core.config import ConfigError, describe, parse, yaml_error_line
from training import registry
from training.algorithms.hybrid import DAGGER_COEF, HybridConfig
from training.algorithms.schedules import DAGGER_FLOOR, ORIGINAL_TERMINATION_M, RELAXED_TERMINATION_M
from training.configs.fields import param
from training.envs.rewards import RewardConfig

__all__ = [
    "ConfigError", "TrainConfig", "check_depth_student", "check_range_pair", "check_weights", "check_widths",
    "describe_train_config", "is_number", "load_train_config", "param", "shipped",
]  # fmt: skip


@dataclass(frozen=True)
class EnvConfig:
    backend: str = param(
        "mujoco_cpu",
        choices=("mujoco_cpu", "mujoco_warp"),
        doc="physics under the task's MDP: plain MuJoCo (CPU) or MuJoCo-Warp (a GPU), as its Task.backends allow",
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
class TerminationConfig:
    tracking_error_m: float = param(
        ORIGINAL_TERMINATION_M, 0.05, 5.0, doc="teacher: tracked-body / anchor position error that ends an episode"
    )
    relaxed_tracking_error_m: float = param(
        RELAXED_TERMINATION_M, 0.05, 5.0, doc="student: the threshold relaxed to by K/2 (schedules.py)"
    )
    anchor_ori: float = param(0.8, 0.01, 2.0, doc="projected-gravity z difference of the anchor (PHP code: 0.8)")


@dataclass(frozen=True)
class RandomizationSection:
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
class RunConfig:
    max_iterations: int = param(20000, 1, 10_000_000, doc="K: the schedules run on k / K")
    minutes: float = param(0.0, 0.0, 100_000.0, doc="time box (0: run max_iterations); K is set from the pace")
    init: str = param(
        "",
        doc="student_step: a student-walk bundle (or its checkpoint.pt); h1_walk: a run's model_latest.pt, or an "
        "h1 bundle (its actor; a fresh critic)",
    )
    save_interval: int = param(500, 1, 10_000_000)
    seed: int = param(0, 0, 2**31 - 1, doc="rank r uses seed + r")
    device: str = param("cuda", choices=("cpu", "cuda"))
    experiment_name: str = param("php")
    out: str = param("runs/train", doc="checkpoints and logs go to <out>/<experiment_name>")


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

    task: str = param("", doc="what the config trains: a task registered by its folder under training/tasks/")
    kind: str = param("teacher", choices=("teacher", "student"))
    env: EnvConfig = field(default_factory=EnvConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    termination: TerminationConfig = field(default_factory=TerminationConfig)
    randomization: RandomizationSection = field(default_factory=RandomizationSection)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    distill: DistillConfig = field(default_factory=DistillConfig)
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    run: RunConfig = field(default_factory=RunConfig)

    # The robots the task trains (env.robot).
    ROBOTS: ClassVar[tuple[str, ...]] = ("g1",)

    def validate(self) -> None:
        """The checks across keys; a task's config adds its own after these (``super().validate()``)."""
        _validate(self)

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


def is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def check_range_pair(key: str, value: list, lo: float, hi: float, integer: bool = False) -> None:
    ok = len(value) == 2 and all(is_number(x) for x in value)
    ok = ok and (not integer or all(float(x).is_integer() for x in value))
    if not ok or not lo <= value[0] <= value[1] <= hi:
        kind = "integers" if integer else "numbers"
        raise ConfigError(f"{key}: expected [lo, hi] {kind} with {lo} <= lo <= hi <= {hi}, got {value!r}")


def check_widths(key: str, value: list) -> None:
    if not value or not all(isinstance(x, int) and not isinstance(x, bool) and 1 <= x <= 65536 for x in value):
        raise ConfigError(f"{key}: expected a non-empty list of layer widths 1..65536, got {value!r}")


def check_weights(key: str, weights: dict, terms: type) -> None:
    known = {f.name for f in dataclasses.fields(terms)}
    bad = sorted(k for k, w in weights.items() if k not in known or not is_number(w))
    if bad:
        raise ConfigError(f"{key}: {bad}: each key must be a term of {sorted(known)} and its weight a number")


def check_depth_student(cfg: TrainConfig) -> None:
    """The depth student's tasks: a recurrent policy that reads depth."""
    if not (cfg.policy.depth and cfg.policy.recurrent == "gru"):
        raise ConfigError(
            f"task {cfg.task}: the depth student is recurrent (policy.recurrent: gru, policy.depth: true)"
        )


def _validate(cfg: TrainConfig) -> None:
    """The checks across keys every task's config shares (a task adds its own in ``validate``)."""
    if cfg.env.robot not in cfg.ROBOTS:
        raise ConfigError(f"env.robot: {cfg.env.robot!r} with task {cfg.task}: it trains the {' or '.join(cfg.ROBOTS)}")
    if cfg.env.robot_model:
        from parkour_core.robots import get_robot
        from parkour_sim.models import robot_model

        try:
            robot_model(get_robot(cfg.env.robot), cfg.env.robot_model)
        except ValueError as e:
            raise ConfigError(f"env.robot_model: {e}") from None
    r = cfg.randomization
    check_range_pair("randomization.static_friction", r.static_friction, 0.0, 5.0)
    check_range_pair("randomization.dynamic_friction", r.dynamic_friction, 0.0, 5.0)
    check_range_pair("randomization.restitution", r.restitution, 0.0, 1.0)
    check_range_pair("randomization.push_interval_s", r.push_interval_s, 0.01, 100.0)
    check_range_pair("randomization.action_delay_steps", r.action_delay_steps, 0, 10, integer=True)
    for key, value, n, hi in (
        ("randomization.base_com_offset_m", r.base_com_offset_m, 3, 0.5),
        ("randomization.push_max_vel", r.push_max_vel, 6, 5.0),
    ):
        if len(value) != n or not all(is_number(x) and 0.0 <= x <= hi for x in value):
            raise ConfigError(f"{key}: expected {n} numbers in [0, {hi}], got {value!r}")
    check_widths("policy.actor_hidden", cfg.policy.actor_hidden)
    check_widths("policy.critic_hidden", cfg.policy.critic_hidden)
    if len(cfg.policy.conv_channels) != 2:
        raise ConfigError(f"policy.conv_channels: expected two channel counts, got {cfg.policy.conv_channels!r}")
    check_widths("policy.conv_channels", cfg.policy.conv_channels)
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
    """Build and check the config of the task ``data`` names (its ``task:``) from a mapping (a loaded YAML):
    the task's own config class, registered by its folder."""
    data = data or {}
    name = data.get("task", "")
    known = registry.tasks()
    if name not in known:
        raise ConfigError(f"task: {name!r} is not a registered task; known: {', '.join(known)}")
    cfg = parse(known[name].config_class() or TrainConfig, data)
    cfg.validate()
    return cfg


def load_train_config(path: Path | str, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """Read ``path`` (a YAML file, or the name of a preset a task ships, such as ``h1_walk_tiny``).

    ``overrides`` maps dotted keys to values (``{"env.num_envs": 64}``) and is checked like the file.
    A preset must name the task whose folder ships it.
    """
    path = Path(path)
    shipped_by = None
    if not path.suffix and not path.exists():
        known = registry.presets()
        if str(path) not in known:
            raise ConfigError(f"training config {path} does not exist; shipped: {sorted(known)}")
        shipped_by, path = known[str(path)]
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"training config {path} does not exist; shipped: {sorted(registry.presets())}") from None
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
        cfg = parse_train_config(data)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None
    if shipped_by is not None and cfg.task != shipped_by.name:
        raise ConfigError(f"{path}: task {cfg.task!r}, but the preset is shipped by task {shipped_by.name!r}")
    return cfg


def shipped() -> list[Path]:
    """Every preset the registered tasks ship."""
    return sorted(path for _, path in registry.presets().values())


def describe_train_config() -> list[str]:
    """One line per key: type, default, range, doc."""
    return describe(TrainConfig)
