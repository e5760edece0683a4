"""The smoke chain's sizes: presets with ``task: smoke`` and their ``smoke`` section."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from training import registry
from training.configs.fields import param
from training.configs.schema import ConfigError, TrainConfig, load_train_config


@dataclass(frozen=True)
class SmokeSection:
    """task smoke: one size of ``parkour train smoke --size NAME`` (training.tasks.smoke.smoke and the
    chain): the references it synthesizes and the configs its stages train."""

    size: str = param("", doc="the name --size takes ('': not a smoke size)")
    motions: int = param(2, 1, 1000, doc="references `parkour mm synth --count` writes")
    reference_s: float = param(1.0, 0.1, 600.0, doc="each reference cut to its first seconds: the toy task")
    sim_active_s: float = param(1.0, 0.1, 3600.0, doc="seconds the trained policy drives the simulated robot")
    php_teacher: str = param("php_teacher_tiny", doc="the tracking teacher's config")
    php_student: str = param("php_student_tiny", doc="the student's config (--config replaces it)")


@dataclass(frozen=True)
class SmokeTrainConfig(TrainConfig):
    smoke: SmokeSection = field(default_factory=SmokeSection)

    def validate(self) -> None:
        super().validate()
        if not self.smoke.size:
            raise ConfigError("smoke.size: a smoke size names itself (the name --size takes)")


def smoke_sizes() -> dict[str, Path]:
    """The smoke sizes shipped (the smoke chain's presets), by the name ``--size`` takes."""
    sizes: dict[str, Path] = {}
    for path in registry.get_task("smoke").preset_files():
        cfg = load_train_config(path)
        assert isinstance(cfg, SmokeTrainConfig)
        if cfg.smoke.size in sizes:
            raise ConfigError(f"{path}: smoke.size {cfg.smoke.size!r} is also {sizes[cfg.smoke.size]}'s")
        sizes[cfg.smoke.size] = path
    return sizes


def load_smoke_size(size: str) -> SmokeSection:
    """``parkour train smoke --size NAME``'s section; an unknown name says which sizes exist."""
    sizes = smoke_sizes()
    if size not in sizes:
        raise ConfigError(f"smoke size {size!r} is not one of {', '.join(sorted(sizes))} "
                          f"(presets with task: smoke, by smoke.size)")  # fmt: skip
    cfg = load_train_config(sizes[size])
    assert isinstance(cfg, SmokeTrainConfig)
    return cfg.smoke
