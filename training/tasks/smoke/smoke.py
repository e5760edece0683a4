"""`parkour train smoke --out DIR`: PHP's whole chain at toy size on the CPU, end to end.

1. Motion matching: ``parkour mm synth`` writes a few references into ``DIR/mm`` (:func:`stage_mm`).
2. Teacher: the ``php_teacher`` task through the runner (:func:`train_teacher_stage`).
3. Student: the ``php_student`` task through the runner (:func:`train_student_stage`).
4. Export: the task's end writes ``DIR/student/bundle`` (ONNX vs torch parity must pass, int8
   where its check passes, or the stage fails and no manifest is written).
5. Simulation: ``parkour sim`` runs the bundle through the real graph (:func:`stage_sim`).

Sizes are configs: ``--size NAME`` reads the ``smoke`` section of the shipped config with
``task: smoke`` and ``smoke.size: NAME`` (``training/tasks/smoke/presets/smoke_tiny.yaml`` for the tests,
``smoke.yaml`` for the CPU smoke run): how many references, cut how long, the configs each method's
stages train (``--config`` replaces PHP's student's), and the sim stage's time. The outputs:
:func:`run_smoke`.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from parkour_core.provenance import provenance
from training.tasks.php_teacher.tracking import Log, SkillReference
from training.tasks.smoke.config import SmokeSection, load_smoke_size

# The sim stage's operator script (script clock): stand up, drop the band, activate, walk slowly.
SIM_STARTUP_S = 3.0  # sim time before the script's clock starts (graph start-up), as training.eval.graph_check
SIM_ACTIVATE_AT_S = 3.0
SIM_COMMAND = [0.5, 0.0, 0.0]


def train_teacher_stage(
    out: Path, size: SmokeSection, seed: int, references: list[SkillReference] | None = None, config: str | None = None
) -> tuple[dict[str, Any], Any]:
    """A tracking teacher's task through the runner into DIR/teacher: (its <task>.json, the teacher).

    ``config``: the size's php_teacher config. On DIR/mm's
    references cut to the size's seconds, or on ``references`` (a method's own cut). For PHP: rsl_rl's PPO
    on the CPU tracking env, privileged observation, adaptive start sampling, a few envs and a small MLP
    (``training/configs/php_teacher[_tiny].yaml``)."""
    from training.rl.train import train
    from training.tasks.php_teacher.task import load_teacher

    overrides = {"env.motions": str(out / "mm"), "env.reference_s": size.reference_s, "run.seed": seed}
    inputs = {"references": references} if references is not None else None
    result = train(config or size.php_teacher, out / "teacher", overrides, task_inputs=inputs)
    return result, load_teacher(Path(result["teacher"]))


def train_student_stage(
    out: Path,
    config: Path | str,
    seed: int,
    references: list[SkillReference],
    teacher: Any,
    provenance: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The php_student task through the runner into DIR/student (its bundle: DIR/student/bundle),
    distilling ``teacher`` on ``references``; returns php_student.json's content.

    The recurrent depth student (depth backbone + GRU + MLP, small) distilled with PHP's hybrid DAgger +
    PPO loss on the student env (proprioception through the bundle's terms, simulated depth, the 2D
    command), labels from the teacher on its privileged observation of the same state
    (``configs/php_student[_tiny].yaml``)."""
    from training.rl.train import train

    inputs = {"references": references, "teacher": teacher, "provenance": provenance}
    return train(config, out / "student", {"run.seed": seed}, task_inputs=inputs)


def stage_mm(out: Path, count: int, seed: int, log: Log) -> dict[str, Any]:
    """`parkour mm synth --count N --seed S --out DIR/mm` (the same function the CLI runs)."""
    from training.motion_matching.synth import synthesize

    result = synthesize(count, seed, out, None)
    log(f"mm: wrote {count} references to {out}")
    return {"dir": str(out), "count": count, "quality": result.get("quality")}


def stage_sim(bundle: Path, out: Path, active_s: float, log: Log, config: Path | None = None) -> dict[str, Any]:
    """Run the bundle through the real graph (`parkour sim`) with the policy active for ``active_s``.

    ``parkour sim --bundle DIR/student/bundle --no-bag --out DIR/sim``: bridge, supervisor, policy node;
    whether it ran and whether the robot fell go into ``DIR/smoke.json``.
    `parkour sim --duration 5` alone would end before the supervisor activates the policy (graph
    start-up, stand-up and band release take about 6 s of sim time), so the run's duration is
    start-up + activation + ``active_s``, with a script that activates as soon as the robot stands.
    """
    from parkour_core.paths import config_dir

    base = yaml.safe_load((config or config_dir() / "g1_sim.yaml").read_text()) or {}
    base["script"] = {
        "steps": [
            {"at_s": 0.2, "request": "stand_up"},
            {"at_s": SIM_ACTIVATE_AT_S - 0.5, "request": "release_band", "in_mode": "STAND"},
            {"at_s": SIM_ACTIVATE_AT_S, "request": "activate", "in_mode": "STAND"},
            {"at_s": SIM_ACTIVATE_AT_S, "cmd": SIM_COMMAND},
        ]
    }
    out.mkdir(parents=True, exist_ok=True)
    sim_config = out.parent / "sim_config.yaml"
    sim_config.write_text(yaml.safe_dump(base, sort_keys=False))
    duration = SIM_STARTUP_S + SIM_ACTIVATE_AT_S + active_s
    # A random Unitree DDS domain: the supervisor refuses to start beside another run's lowcmd writer.
    domain = random.SystemRandom().randint(20, 99)
    cmd = [
        sys.executable, "-m", "parkour_bringup.cli", "sim", "--config", str(sim_config), "--bundle", str(bundle),
        "--duration", f"{duration:g}", "--no-bag", "--out", str(out), "--domain", str(domain),
    ]  # fmt: skip
    log(f"sim: parkour sim --bundle {bundle} --duration {duration:g} --no-bag --out {out}")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    (out / "parkour_sim.log").write_text(proc.stdout + proc.stderr)
    summary: dict[str, Any] = {"ran": False, "returncode": proc.returncode, "command": " ".join(cmd)}
    report_path = out / "report.json"
    if proc.returncode != 0 or not report_path.exists():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
        summary["error"] = tail[0]
        return summary
    report = json.loads(report_path.read_text())
    transitions = json.loads((out / "supervisor.json").read_text())["supervisor_transitions"]
    active_from = report.get("active_from_s")
    sim_time = float(report.get("sim_time_s", duration))
    # How long the trained policy drove: from ACTIVE to the supervisor's next transition (a fall: DAMP).
    left = [t["t"] for t in transitions if t["from"] == "ACTIVE"]
    active_until = left[0] if left else sim_time
    summary.update(
        ran=True,
        fell=bool(report["fell"]),
        fell_at_s=report.get("fell_at_s"),
        active_from_s=active_from,
        policy_active_s=round(active_until - active_from, 3) if active_from is not None else 0.0,
        modes=[transitions[0]["from"], *(t["to"] for t in transitions)] if transitions else [report["final_mode"]],
        final_mode=report.get("final_mode"),
        distance_m=report.get("distance_m"),
        sim_time_s=sim_time,
        sim_real_time_factor=report.get("sim_real_time_factor"),
        report=str(report_path),
    )
    return summary


def columns(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Per-iteration rows as one list per key (the first row's keys; a later row without one gives None)."""
    return {key: [row.get(key) for row in rows] for key in rows[0]} if rows else {}


class StageClock:
    """The wall seconds of a chain's stages, each timed as it runs: ``with clock("mm"): ...``."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.wall_s: dict[str, float] = {}

    @contextmanager
    def __call__(self, stage: str) -> Iterator[None]:
        t = time.perf_counter()
        yield
        self.wall_s[stage] = time.perf_counter() - t

    def rounded(self) -> dict[str, float]:
        """Each stage's seconds and the total so far, to 0.1 s (smoke.json's ``stage_wall_s``)."""
        return {k: round(v, 1) for k, v in {**self.wall_s, "total": time.perf_counter() - self.started}.items()}


def finish_chain(
    student: dict[str, Any], out: Path, active_s: float, sim: bool, clock: StageClock, log: Log
) -> dict[str, Any]:
    """The end every chain shares: the student's bundle and its export checks, the bundle through
    `parkour sim` (:func:`stage_sim`, unless ``sim`` is off) and the stages' wall times; smoke.json's
    last keys."""
    bundle = Path(student["bundle"])
    manifest = json.loads((bundle / "manifest.json").read_text())
    log(f"student: wrote {bundle}")
    sim_summary: dict[str, Any] = {"ran": False, "skipped": True}
    if sim:
        with clock("sim"):
            sim_summary = stage_sim(bundle, out / "sim", active_s, log)
    return {
        "bundle": str(bundle),
        "export_checks": manifest["provenance"]["checks"],
        "sim": sim_summary,
        "stage_wall_s": clock.rounded(),
        "curves": str(out / "curves.png"),
    }


def run_smoke(
    out: Path,
    config: Path | str | None = None,
    seed: int = 0,
    size: str = "smoke",
    sim: bool = True,
    log: Log = print,
) -> dict[str, Any]:
    """Every stage in order; writes DIR/smoke.json and DIR/curves.png and returns smoke.json's content.

    ``DIR/smoke.json``: ``teacher_return`` and ``student_loss`` (one value per iteration), the other
    per-iteration terms, stage wall times, the sim run's summary and the bundle path.
    ``config``: the student's (default the size's ``php_student`` config)."""
    from parkour_core.stats import write_json
    from training.tasks.php_teacher.tracking import toy_references
    from training.tasks.smoke.curves import plot_curves

    preset = load_smoke_size(size)
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    clock = StageClock()
    with clock("mm"):
        mm = stage_mm(out / "mm", preset.motions, seed, log)
        references = toy_references(out / "mm", preset.reference_s)
    with clock("teacher"):
        teacher, teacher_model = train_teacher_stage(out, preset, seed)
    with clock("student"):
        student = train_student_stage(out, config or preset.php_student, seed, references, teacher_model)
    outputs = finish_chain(student, out, preset.sim_active_s, sim, clock, log)

    student_rows = student["iterations"]
    result: dict[str, Any] = {
        **provenance(),
        "size": size,
        "seed": seed,
        "configs": {"teacher": preset.php_teacher, "student": str(config or preset.php_student)},
        "references": [
            {"name": r.reference.name, "skill": r.skill, "frames": r.reference.num_frames} for r in references
        ],
        "mm": mm,
        "teacher_return": [row["episode_return"] for row in teacher["iterations"]],
        "teacher": columns(teacher["iterations"]),
        "teacher_start_sampler_probabilities": teacher["start_sampler_probabilities"],
        "student_loss": [row["total"] for row in student_rows],
        "student": columns(student_rows),
        "student_parameters": student["parameters"],
        **outputs,
    }
    plot_curves(result, out / "curves.png")
    write_json(out / "smoke.json", result)
    return result
