"""The ``student_step`` task's config: the shared sections and its own, ``course``."""

from __future__ import annotations

from dataclasses import dataclass, field

from training.configs.fields import param
from training.configs.schema import ConfigError, TrainConfig, check_depth_student, check_range_pair


@dataclass(frozen=True)
class CourseSection:
    """student_step: the platform course and its curriculum (training.tasks.student_step.env)."""

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
        "policy moves at about half its command (results/training/tasks/student_step/teacher_speed.json)",
    )
    supervisor_limits: bool = param(
        False,
        doc="as under the supervisor: targets (and the teacher's labels) clamped inside the joint limits, and "
        "targets it would refuse end the episode as a fall",
    )


@dataclass(frozen=True)
class StepTrainConfig(TrainConfig):
    course: CourseSection = field(default_factory=CourseSection)

    def validate(self) -> None:
        super().validate()
        check_depth_student(self)
        check_range_pair("course.speed_mps", self.course.speed_mps, 0.0, 5.0)
        if self.course.min_height_m > self.course.max_height_m:
            raise ConfigError(
                f"course.min_height_m: {self.course.min_height_m} is above course.max_height_m "
                f"{self.course.max_height_m}"
            )
