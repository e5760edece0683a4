"""PolicyRunner's step is bit for bit a straightforward one: build_observation, session.run, clip, scale.

The runner writes its observation with a compiled writer (scalar gravity, gait clock and discrete
command) and runs onnxruntime through IOBinding on its own arrays. A reference written the plain way
(numpy's batch gait clock, ``observation_input`` + ``build_observation``, a session of its own fed a
dict, outputs taken as ``run`` returns them) replays the same ticks beside it: hundreds of steps of
a trained recurrent depth student with new frames, command changes through standing still, resets
and an adopted previous action; every target, action, hidden state and latent must be equal.
"""

from __future__ import annotations

import itertools
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from parkour_core.bundle import Bundle, load_bundle
from parkour_core.bundles.depth_gated_walk import build
from parkour_core.command import DiscreteCommandSpec
from parkour_core.gait import GaitClock
from parkour_core.inference import BoundRun, make_session
from parkour_core.math3d import projected_gravity, projected_gravity_one
from parkour_core.obs import ObservationWriter, ObsInput, ObsTerm, build_observation, observation_size
from parkour_core.runner import PolicyRunner, RobotState, observation_input

TRAINED_STUDENT = "student_step_lib_seed1"  # recurrent depth student with a gait clock and a discrete command
STEPS = 400


class Reference:
    """PolicyRunner's step the straightforward way, on a session of its own."""

    def __init__(self, bundle: Bundle) -> None:
        m = self.m = bundle.manifest
        self.session = make_session(bundle.file(m.policy.file), 1)
        self.backbone = make_session(bundle.file(m.depth_backbone.file), 1) if m.depth_backbone else None
        self.default_q = np.asarray(m.default_joint_pos, dtype=np.float64)
        # batch=1 keeps numpy's array path of the clock (the runner's one clock takes Python floats)
        self.gait = GaitClock(m.gait_period_s, 1.0 / m.policy_hz, batch=1) if m.gait_period_s else None
        self.latent = np.zeros((1, m.depth.latent_dim), dtype=np.float32) if m.depth else None
        self.reset()

    def reset(self) -> None:
        self.last_action = np.zeros(len(self.default_q))
        self.hidden = np.zeros(self.m.hidden_shape, dtype=np.float32) if self.m.hidden_shape else None
        if self.gait is not None:
            self.gait.reset()

    def set_depth(self, image: np.ndarray) -> None:
        assert self.backbone is not None and self.m.depth_backbone is not None
        io = self.m.depth_backbone
        self.latent = self.backbone.run([io.outputs["latent"]], {io.inputs["depth"]: image[None]})[0]

    def step(self, state: RobotState, command: np.ndarray) -> np.ndarray:
        phase = self.gait.advance(command[None])[0] if self.gait is not None else np.zeros(0)
        o = observation_input(self.m, state, command, self.last_action, self.default_q, phase)
        obs = build_observation(self.m.obs_terms, o)
        io = self.m.policy
        feeds = {io.inputs["obs"]: obs[None]}
        names = [io.outputs["action"]]
        if self.latent is not None:
            feeds[io.inputs["latent"]] = self.latent
        if self.hidden is not None:
            feeds[io.inputs["hidden"]] = self.hidden
            names.append(io.outputs["hidden"])
        outputs = self.session.run(names, feeds)
        if self.hidden is not None:
            self.hidden = outputs[1]
        self.last_action = np.clip(outputs[0][0].astype(np.float64), -self.m.action_clip, self.m.action_clip)
        return self.default_q + self.m.action_scale * self.last_action


def ticks(default_q: np.ndarray, count: int, seed: int):
    """(state, command, depth frame or None, reset?) per tick: joints near the default pose, tilted base,
    commands in segments that pass through standing still and the discrete levels' boundaries, a 30 Hz
    camera's frames on a 50 Hz loop, and a reset now and then."""
    rng = np.random.default_rng(seed)
    commands = [
        (0.5, 0.0, 0.0), (0.0, 0.0, 0.0), (1.0, 0.3, -0.4), (0.25, 0.0, 0.0), (0.0, -0.6, 0.2),
        (0.004, 0.0, 0.005), (1.5, 0.0, 0.0), (-0.0, 0.0, 0.0), (0.75, -0.75, 0.0),
    ]  # fmt: skip
    for k in range(count):
        quat = np.array([1.0, *rng.normal(0.0, 0.1, 3)])
        state = RobotState(
            default_q + rng.normal(0.0, 0.15, len(default_q)),
            rng.normal(0.0, 1.0, len(default_q)),
            quat / np.linalg.norm(quat),
            rng.normal(0.0, 0.5, 3),
        )
        command = np.array(commands[(k // 23) % len(commands)]) + (rng.normal(0.0, 0.05, 3) if k % 7 == 0 else 0.0)
        frame = rng.uniform(0.0, 1.0, (58, 87)).astype(np.float32) if (k * 3) // 5 != ((k - 1) * 3) // 5 else None
        yield state, command, frame, k in (150, 311)


def assert_replays_bit_for_bit(bundle: Bundle, steps: int, seed: int) -> None:
    runner, ref = PolicyRunner(bundle), Reference(bundle)
    for k, (state, command, frame, reset) in enumerate(ticks(runner.default_q, steps, seed)):
        if reset:
            runner.reset()
            ref.reset()
        if k == 200:  # a swap adopts the executed targets' action (parkour_control.swap.ShadowRun)
            runner.last_action = ref.last_action = np.linspace(-1.0, 1.0, len(runner.default_q))
        if frame is not None and ref.backbone is not None:
            runner.set_depth(frame, stamp_s=k * 0.02)
            ref.set_depth(frame)
        got, expected = runner.step(state, command), ref.step(state, command)
        assert got.tobytes() == expected.tobytes(), f"tick {k}: targets differ"
        assert runner.last_action.tobytes() == ref.last_action.tobytes(), f"tick {k}: actions differ"
        if ref.hidden is not None:
            assert runner.hidden.tobytes() == ref.hidden.tobytes(), f"tick {k}: hidden state differs"
        if ref.latent is not None:
            assert runner.latent.tobytes() == ref.latent.tobytes(), f"tick {k}: latent differs"
    assert runner.built_observations == 0  # every tick took the compiled writer


def test_trained_recurrent_student_replays_the_reference_bit_for_bit(repo_root: Path):
    bundle = load_bundle(repo_root / "models" / TRAINED_STUDENT)
    m = bundle.manifest
    assert m.recurrent and m.uses_depth and m.command is not None and m.gait_period_s  # every part of the step
    assert_replays_bit_for_bit(bundle, STEPS, seed=0)


def test_walking_policy_replays_the_reference_bit_for_bit(g1_walk_dir: Path):
    assert_replays_bit_for_bit(load_bundle(g1_walk_dir), STEPS, seed=1)


def test_depth_gated_stand_in_replays_the_reference_bit_for_bit(g1_walk_dir: Path, tmp_path: Path):
    assert_replays_bit_for_bit(load_bundle(build(g1_walk_dir, tmp_path / "g1_walk_depth_gated")), 100, seed=2)


def test_the_fast_paths_are_the_ones_running(repo_root: Path):
    """The replays above compare the compiled writer and the bound sessions, not the fallbacks."""
    runner = PolicyRunner(load_bundle(repo_root / "models" / TRAINED_STUDENT))
    assert runner.paths() == {"observation": "ObservationWriter", "policy": "IOBinding", "backbone": "IOBinding"}
    assert isinstance(runner._run_policy, BoundRun) and isinstance(runner._run_backbone, BoundRun)


def test_float32_inputs_take_the_builder_and_still_match(g1_walk_dir: Path):
    """Inputs the writer does not take (float32 here) go through build_observation: the same targets."""
    bundle = load_bundle(g1_walk_dir)
    runner, ref = PolicyRunner(bundle), Reference(bundle)
    for state, command, _, _ in ticks(runner.default_q, 20, seed=3):
        parts: list[Any] = [np.asarray(a, dtype=np.float32) for a in (state.q, state.dq, state.quat_wxyz, state.gyro)]
        state32 = RobotState(*parts)
        assert runner.step(state32, command).tobytes() == ref.step(state32, command).tobytes()
    assert runner.built_observations == 20


# -------------------------------------------------------------------------- the writer's parts, edge values
EDGES = (0.0, -0.0, 1.0, -1.0, 0.3, -0.7, 1e-300, -1e-300, np.inf, -np.inf, np.nan)


def test_scalar_gravity_is_numpy_s_bit_for_bit():
    rng = np.random.default_rng(0)
    quats = [np.array(q) for q in itertools.product(EDGES, repeat=4)]
    quats += [q / np.linalg.norm(q) for q in rng.normal(size=(5000, 4))]
    with np.errstate(invalid="ignore", over="ignore"):
        for q in quats:
            assert np.array(projected_gravity_one(*q.tolist())).tobytes() == projected_gravity(q).tobytes(), q


def test_one_gait_clock_is_the_batch_clock_bit_for_bit():
    rng = np.random.default_rng(1)
    one, batch = GaitClock(0.8, 0.02), GaitClock(0.8, 0.02, batch=1)
    near = [(0.01, 0.0, 0.0), (0.0, 0.0, -0.01), (0.00707106781186547, 0.00707106781186548, 0.0), (np.nan, 0.0, 0.0)]
    for k in range(3000):
        command = np.array(near[k % 4]) if k % 5 == 0 else rng.normal(0.0, 0.3, 3) * (k % 3 != 0)
        if k % 401 == 0:
            one.reset()
            batch.reset()
        assert one.advance(command).tobytes() == batch.advance(command[None])[0].tobytes(), k
        assert one.standing == batch.standing


@pytest.mark.parametrize("with_spec", [True, False])
def test_writer_is_build_observation_bit_for_bit(with_spec: bool):
    """Every term, scaled and clipped, in a shuffled order, on ordinary and edge values."""
    n, rng = 5, np.random.default_rng(2)
    spec = DiscreteCommandSpec() if with_spec else None
    names = ["actions", "base_ang_vel", "command_ang_vel", "command_lin_vel", "cos_phase", "dof_pos", "dof_vel",
             "projected_gravity", "sin_phase"] + (["command_discrete"] * with_spec)  # fmt: skip
    dims = {"actions": n, "dof_pos": n, "dof_vel": n, "base_ang_vel": 3, "projected_gravity": 3, "command_lin_vel": 2,
            "command_ang_vel": 1, "command_discrete": 2, "sin_phase": 2, "cos_phase": 2}  # fmt: skip
    for trial in range(40):
        order = rng.permutation(names)
        terms = [
            ObsTerm(str(t), dims[t], float(rng.choice([1.0, 0.05, 0.25, 2.0, -1.5])),
                    None if rng.uniform() < 0.5 else float(rng.choice([0.1, 1.0, 100.0])))
            for t in order
        ]  # fmt: skip
        default_q = rng.normal(0.0, 0.3, n)
        out = np.empty(observation_size(terms), dtype=np.float32)
        writer = ObservationWriter.compile(terms, default_q, spec, 2, out)
        assert writer is not None
        for _ in range(30):
            pick = (lambda k: rng.choice(EDGES, k)) if trial % 4 == 0 else (lambda k: rng.normal(0.0, 2.0, k))
            q, dq, last, gyro, command, phase = (np.asarray(pick(k), dtype=np.float64) for k in (n, n, n, 3, 3, 2))
            quat = np.asarray(pick(4), dtype=np.float64)
            with np.errstate(all="ignore"):
                o = observation_input_like(q, dq, quat, gyro, command, last, default_q, phase, spec)
                expected = build_observation(terms, o)
                assert writer.accepts(q, dq, quat, gyro, command, last, phase)
                got = writer.write(q, dq, quat, gyro, command, last, phase)
            assert got.tobytes() == expected.tobytes(), (terms, q, dq, quat, gyro, command, last, phase)


def observation_input_like(q, dq, quat, gyro, command, last, default_q, phase, spec) -> ObsInput:
    from parkour_core.command import discretise_command

    discrete = discretise_command(command, spec) if spec is not None else np.zeros(0)
    return ObsInput(q, dq, quat, gyro, command, last, default_q, phase, discrete)


def test_writer_declines_what_it_does_not_cover():
    out = np.empty(7, dtype=np.float32)
    assert ObservationWriter.compile([ObsTerm("dof_pos", 7)], np.zeros(5), None, 2, out) is None  # not the joints
    assert ObservationWriter.compile([ObsTerm("command_discrete", 2)], np.zeros(5), None, 2, out[:2]) is None
    writer = ObservationWriter.compile([ObsTerm("dof_pos", 5), ObsTerm("sin_phase", 2)], np.zeros(5), None, 2, out)
    assert writer is not None
    z5, z3, z2 = np.zeros(5), np.zeros(3), np.zeros(2)
    unpickled = pickle.loads(pickle.dumps(z5))  # float64, but not numpy's own dtype object
    assert writer.accepts(unpickled, z5, np.zeros(4), z3, z3, z5, z2)
    assert not writer.accepts(z5.astype(np.float32), z5, np.zeros(4), z3, z3, z5, z2)
    assert not writer.accepts(list(z5), z5, np.zeros(4), z3, z3, z5, z2)
    assert not writer.accepts(np.zeros(6), z5, np.zeros(4), z3, z3, z5, z2)
