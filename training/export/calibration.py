"""Robot states and depth frames recorded from the simulator, as the policy sees them. No ROS.

The int8 backbone's convolution ranges are calibrated on depth frames, and the int8 variants are
checked against fp32, on inputs that should look like the robot's: this module records them from
the same pieces the evaluation runs (``training.eval.episode``), without the supervisor
(:func:`record_sim_rollout`). Everything is seeded: the same bundle, seed and length give the same
frames and states on the same machine (MuJoCo and onnxruntime's one-thread CPU kernels are
deterministic).

The recording is a :class:`training.export.parity.Rollout` (``starts`` marks each episode's first
tick, where a replay resets the runner). Each tick carries the frame published since the previous
tick (the last one if two arrived; the backbone is stateless, so only the last sets the latent);
an episode's first tick carries the frame the runner held when it was reset.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from parkour_core.bundle import Bundle, load_bundle
from parkour_core.config import SimCameraConfig
from parkour_core.runner import PolicyRunner, RobotState
from parkour_core.safety import JointCommand
from parkour_sim.depth_camera import SimDepthSensor
from parkour_sim.physics import RobotSim
from training.eval.protocol import Instance, Protocol, sample_instance
from training.export.parity import Rollout, concat_rollouts
from training.export.student import quantize_bundle

PHYSICS_DT_S = 0.002  # config/g1_sim.yaml bridge.physics_dt_s
STAND_S = 1.0  # on the band at the default pose
SETTLE_S = 0.5  # released, still at the default pose
STILL_S = 0.5  # active, commanded 0 m/s, before walking
SPEEDS_MPS = (0.5, 1.0)
HEIGHTS_M = (0.05, 0.10, 0.15, 0.20)
OBSTACLES = 3
SPACING_M = (2.0, 3.0)
BEYOND_M = 0.5  # past the last box's far face: the course is done
LANES = 12
LANE_SPACING_M = 8.0
# The recordings an int8 variant of a trained bundle is made from (sim_quantize, bench/policy/run.py):
# frames for calibration from one seed, the check's rollout from another.
# The check's verdict is on its worst tick, so it depends on how much driving it sees: a variant that
# passes on one long recording can fail on others, so it is checked on three recordings of 1500 ticks
# (90 s at 50 Hz, 6-12 episodes).
CALIBRATION_SEED = 1
CALIBRATION_TICKS = 600
CALIBRATION_COUNT = 256
CHECK_SEEDS = (2, 3, 4)
CHECK_TICKS = 1500


@dataclass(frozen=True)
class SimRecording:
    """A recorded rollout, the driver's own actions on it, and what each episode was."""

    rollout: Rollout
    actions: np.ndarray  # [ticks, joints]: the driving bundle's actions (after its clip)
    driver: str  # the bundle that drove the robot
    seed: int
    episodes: list[dict[str, Any]] = field(default_factory=list)

    def frames(self) -> list[np.ndarray]:
        """Every preprocessed policy image in the recording, in order."""
        return [f for f in self.rollout.depth_frames if f is not None]

    def describe(self) -> dict[str, Any]:
        """What the recording is, for a result file or a manifest's provenance."""
        outcomes: dict[str, int] = {}
        for e in self.episodes:
            outcomes[e["outcome"]] = outcomes.get(e["outcome"], 0) + 1
        return {
            "source": "training.export.calibration.record_sim_rollout: RobotSim + SimDepthSensor (87x58 ray cast, "
            "training noise, 60-80 ms latency) on platform courses, driven by PolicyRunner",
            "driver": self.driver,
            "seed": self.seed,
            "ticks": len(self.rollout),
            "frames": len(self.frames()),
            "episodes": len(self.episodes),
            "episode_outcomes": outcomes,
            "heights_m": list(HEIGHTS_M),
            "speeds_mps": list(SPEEDS_MPS),
        }


def calibration_frames(recording: SimRecording, count: int) -> list[np.ndarray]:
    """``count`` frames spread evenly over the recording (all of them if it has fewer)."""
    frames = recording.frames()
    if count >= len(frames):
        return frames
    picks = np.linspace(0, len(frames) - 1, count).round().astype(int)
    return [frames[i] for i in picks]


def _courses(rng: np.random.Generator) -> list[tuple[float, Instance]]:
    """:data:`LANES` courses, lane i's boxes shifted to y = i * LANE_SPACING_M."""
    lanes = []
    for lane in range(LANES):
        speed = float(rng.choice(SPEEDS_MPS))
        instance = sample_instance(
            Protocol(), speed, HEIGHTS_M[0], rng, obstacles=OBSTACLES, heights=HEIGHTS_M, spacing_m=SPACING_M
        )
        boxes = tuple(replace(b, y=b.y + lane * LANE_SPACING_M) for b in instance.boxes)
        lanes.append((speed, replace(instance, boxes=boxes)))
    return lanes


def _world(lanes: list[tuple[float, Instance]]) -> dict[str, Any]:
    boxes = [b.scene_entry(f"lane{i}_box{k}") for i, (_, inst) in enumerate(lanes) for k, b in enumerate(inst.boxes)]
    return {"description": "platform courses side by side (training.export.calibration)", "boxes": boxes}


def record_sim_rollout(bundle: Bundle, ticks: int, seed: int = 0, max_episode_s: float = 20.0) -> SimRecording:
    """``ticks`` policy ticks of ``bundle`` driving the simulated G1 on platform courses.

    - ``parkour_sim.physics.RobotSim`` (MuJoCo with the motor PD law) on the evaluation's platform courses
      (``training.eval.protocol``: 0.8 m deep, 3 m wide boxes yawed up to 20 deg, here 5-20 cm high, three
      per course, as in ``parkour eval`` on low platforms). Compiling the G1 takes seconds, so one world
      holds :data:`LANES` courses side by side, :data:`LANE_SPACING_M` apart (a neighbour lane is beyond
      the camera's 2 m depth range wherever it is in view), and each episode starts the robot at the head
      of the next lane;
    - ``parkour_sim.depth_camera.SimDepthSensor``: the simulated D435i (87x58 ray cast) with the training
      noise model and its 60-80 ms latency, preprocessed by ``parkour_core.depth.preprocess_depth``
      exactly as the policy node receives the image;
    - ``bundle`` driving the robot through ``PolicyRunner`` (the policy node's runner): the robot stands on
      the elastic band at the default pose (stand gains), is released, then the runner is reset (as on
      entering ACTIVE) and the robot is commanded 0 m/s for 0.5 s, then straight ahead at 0.5 or 1 m/s.
      An episode ends when the robot falls, passes the course, or after its horizon; the next episode
      starts from a new course until enough ticks are recorded.
    """
    m = bundle.manifest
    if m.depth is None:
        raise ValueError(f"bundle {m.name!r} reads no depth: nothing to record frames for")
    spec = bundle.robot
    n = spec.num_joints
    rng = np.random.default_rng(seed)
    runner = PolicyRunner(bundle, intra_op_threads=1)
    policy_every = max(1, round(1.0 / (m.policy_hz * PHYSICS_DT_S)))
    kp, kd = np.asarray(m.kp, dtype=np.float64), np.asarray(m.kd, dtype=np.float64)
    zeros = np.zeros(n)
    stand = JointCommand(spec.default_q.copy(), zeros, spec.kp_stand.copy(), spec.kd_stand.copy(), zeros)
    states: list[RobotState] = []
    commands: list[np.ndarray] = []
    frames: list[np.ndarray | None] = []
    actions: list[np.ndarray] = []
    starts: list[int] = []
    episodes: list[dict[str, Any]] = []
    sim: RobotSim | None = None
    lanes: list[tuple[float, Instance]] = []
    while len(states) < ticks:
        if not lanes:
            lanes = _courses(rng)
            sim = RobotSim(spec, _world(lanes), PHYSICS_DT_S)
            lane = 0
        assert sim is not None
        speed, instance = lanes.pop(0)
        sim.reset(base_xy_yaw=(0.0, lane * LANE_SPACING_M, 0.0))
        lane += 1
        sim.hang()
        sim.set_command(stand, np.ones(n, dtype=bool))
        camera = replace(SimCameraConfig(), seed=int(rng.integers(2**31)))
        sensor = SimDepthSensor(sim.model, camera, m.depth.spec, start_s=sim.time, strip_max=0)
        active_at = STAND_S + SETTLE_S
        latest: np.ndarray | None = None  # the newest published policy image
        new_frame: np.ndarray | None = None  # published since the last recorded tick
        step = 0
        episode_start = len(states)
        outcome = "horizon"
        try:
            while len(states) < ticks:
                now = sim.time
                for scheduled in sensor.tick(sim.data):
                    latest = new_frame = scheduled.frame.policy
                    runner.set_depth(latest, scheduled.frame.exposure_s)
                if sim.band is not None and now >= STAND_S:
                    sim.hang(None)
                if step % policy_every == 0 and now >= active_at - 1e-9:
                    if len(states) == episode_start:
                        runner.reset()  # as the policy node does on entering ACTIVE
                        starts.append(episode_start)
                        new_frame = latest  # the view the runner holds at activation
                    command = np.array([0.0 if now < active_at + STILL_S else speed, 0.0, 0.0])
                    state = RobotState(sim.q, sim.dq, sim.quat_wxyz, sim.gyro)
                    states.append(state)
                    commands.append(command)
                    frames.append(new_frame)
                    new_frame = None
                    targets = runner.step(state, command)
                    actions.append(runner.last_action.copy())
                    sim.set_command(JointCommand(targets, zeros, kp, kd, zeros), np.ones(n, dtype=bool))
                sim.step()
                step += 1
                if step % policy_every == 0 and sim.time >= active_at:  # judged at the policy's rate
                    if sim.fallen():
                        outcome = "fell"
                        break
                    last = instance.boxes[-1]
                    if float(last.local_x(sim.base_pos[None, :2])[0]) > last.depth_m / 2 + BEYOND_M:
                        outcome = "passed"
                        break
                    if sim.time - active_at >= max_episode_s:
                        break
        finally:
            sensor.close()
        if len(states) > episode_start:
            episodes.append(
                {
                    "speed_mps": speed,
                    "heights_m": [round(b.height_m, 3) for b in instance.boxes],
                    "ticks": len(states) - episode_start,
                    "outcome": outcome if len(states) < ticks else "recording full",
                    "progress_m": round(float(sim.base_pos[0]), 2),
                }
            )
    rollout = Rollout(states, commands, frames, tick_s=1.0 / m.policy_hz, starts=tuple(starts))
    return SimRecording(rollout, np.array(actions), m.name, seed, episodes)


def calibration_note() -> dict[str, Any]:
    """How :func:`sim_quantize` (and the bench) make and check an int8 variant, for its provenance."""
    return {
        "frames_from": f"training.export.calibration.record_sim_rollout, seed {CALIBRATION_SEED}, "
        f"{CALIBRATION_TICKS} ticks, {CALIBRATION_COUNT} frames spread evenly",
        "checked_on": f"record_sim_rollout, seeds {', '.join(map(str, CHECK_SEEDS))}, {CHECK_TICKS} ticks each",
    }


def check_recordings(bundle: Bundle) -> list[SimRecording]:
    """The recordings an int8 variant of ``bundle`` is checked on (:data:`CHECK_SEEDS`)."""
    return [record_sim_rollout(bundle, CHECK_TICKS, seed) for seed in CHECK_SEEDS]


def sim_quantize(source: Path | str, out_dir: Path | str, precision: str = "int8", name: str | None = None) -> Path:
    """A trained fp32 bundle quantised to int8: calibrated on frames of one recording it drives, checked
    (``training.export.student.quantize_bundle``) on three others; raises ParityError when the check fails."""
    bundle = load_bundle(source)
    frames = calibration_frames(record_sim_rollout(bundle, CALIBRATION_TICKS, CALIBRATION_SEED), CALIBRATION_COUNT)
    check = concat_rollouts([r.rollout for r in check_recordings(bundle)])
    return quantize_bundle(source, out_dir, precision, frames, check, calibration_note(), name)
