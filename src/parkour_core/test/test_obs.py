from __future__ import annotations

import numpy as np
import pytest

from parkour_core.obs import TERMS, ObsInput, ObsTerm, build_observation, observation_size


def make_input(n: int = 4) -> ObsInput:
    return ObsInput(
        q=np.arange(n, dtype=np.float64) * 0.1 + 1.0,
        dq=np.arange(n, dtype=np.float64) - 2.0,
        quat_wxyz=np.array([1.0, 0.0, 0.0, 0.0]),
        gyro=np.array([0.4, -0.8, 1.2]),
        command=np.array([0.5, -0.25, 0.75]),
        last_action=np.linspace(-3.0, 3.0, n),
        default_q=np.full(n, 0.5),
        gait_phase=np.array([0.3, 0.3 - np.pi]),
        command_discrete=np.array([2.0, 7.0]),
    )


def test_terms_are_concatenated_in_given_order_with_scale():
    o = make_input()
    terms = [
        ObsTerm("dof_vel", 4, 0.05),
        ObsTerm("command_ang_vel", 1),
        ObsTerm("base_ang_vel", 3, 0.25),
        ObsTerm("command_lin_vel", 2, 2.0),
        ObsTerm("dof_pos", 4),
        ObsTerm("projected_gravity", 3),
        ObsTerm("sin_phase", 2),
        ObsTerm("cos_phase", 2),
        ObsTerm("actions", 4),
    ]
    out = build_observation(terms, o)
    expected = np.concatenate(
        [
            o.dq * 0.05,
            o.command[2:3],
            o.gyro * 0.25,
            o.command[:2] * 2.0,
            o.q - o.default_q,
            [0.0, 0.0, -1.0],
            np.sin(o.gait_phase),
            np.cos(o.gait_phase),
            o.last_action,
        ]
    )
    assert out.dtype == np.float32
    assert out.shape == (observation_size(terms),) == (25,)
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-7)


def test_order_matters():
    o = make_input()
    a = build_observation([ObsTerm("dof_pos", 4), ObsTerm("dof_vel", 4)], o)
    b = build_observation([ObsTerm("dof_vel", 4), ObsTerm("dof_pos", 4)], o)
    np.testing.assert_allclose(a[:4], b[4:])
    np.testing.assert_allclose(a[4:], b[:4])
    assert not np.allclose(a, b)


def test_clip_is_applied_after_scale():
    o = make_input()  # last_action = [-3, -1, 1, 3]
    out = build_observation([ObsTerm("actions", 4, scale=0.5, clip=1.0)], o)
    np.testing.assert_allclose(out, [-1.0, -0.5, 0.5, 1.0])
    # Without clip, the scaled values pass through.
    out = build_observation([ObsTerm("actions", 4, scale=0.5)], o)
    np.testing.assert_allclose(out, [-1.5, -0.5, 0.5, 1.5])


def test_writes_into_given_buffer():
    o = make_input()
    buf = np.full(5, np.nan, dtype=np.float32)
    out = build_observation([ObsTerm("dof_pos", 4), ObsTerm("command_ang_vel", 1)], o, out=buf)
    assert out is buf
    np.testing.assert_allclose(buf, [0.5, 0.6, 0.7, 0.8, 0.75], rtol=1e-6)


@pytest.mark.parametrize("name,dims", [("dof_pos", 5), ("base_ang_vel", 2), ("sin_phase", 1), ("command_lin_vel", 3)])
def test_dims_mismatch_raises_naming_the_term(name, dims):
    with pytest.raises(ValueError, match=rf"'{name}'.*\({dims},\)"):
        build_observation([ObsTerm("command_ang_vel", 1), ObsTerm(name, dims)], make_input())


def test_from_dict_defaults_and_round_trip():
    t = ObsTerm.from_dict({"name": "dof_vel", "dims": 29})
    assert t == ObsTerm("dof_vel", 29, 1.0, None)
    t = ObsTerm.from_dict({"name": "dof_vel", "dims": "29", "scale": 0.05, "clip": 5})
    assert t == ObsTerm("dof_vel", 29, 0.05, 5.0)
    assert ObsTerm.from_dict(t.to_dict()) == t


def test_from_dict_rejects_unknown_term_name():
    with pytest.raises(ValueError, match=r"'joint_torque' is not known.*dof_pos"):
        ObsTerm.from_dict({"name": "joint_torque", "dims": 29})


def test_from_dict_rejects_unknown_keys():
    with pytest.raises(ValueError, match=r"'dof_pos'.*unknown keys \['offset'\]"):
        ObsTerm.from_dict({"name": "dof_pos", "dims": 29, "offset": 0.1})


def test_every_known_term_is_buildable():
    o = make_input()
    dims = {"actions": 4, "dof_pos": 4, "dof_vel": 4, "base_ang_vel": 3, "projected_gravity": 3}
    dims |= {"command_lin_vel": 2, "command_ang_vel": 1, "sin_phase": 2, "cos_phase": 2, "command_discrete": 2}
    assert set(dims) == set(TERMS)
    out = build_observation([ObsTerm(n, d) for n, d in dims.items()], o)
    assert out.shape == (sum(dims.values()),)
    assert np.all(np.isfinite(out))


def test_command_discrete_term_reads_the_mapped_command():
    out = build_observation([ObsTerm("command_discrete", 2, scale=0.5)], make_input())
    np.testing.assert_array_equal(out, [1.0, 3.5])


def test_a_batch_of_robots_builds_what_each_robot_builds_alone():
    """Training builds every environment's observation in one call; each row must be the runtime's."""
    from parkour_core.bundle import load_bundle
    from parkour_core.bundles import resolve_bundle
    from parkour_core.runner import RobotState, observation_input

    rng = np.random.default_rng(0)
    for name in ("g1_walk", "student_walk"):
        m = load_bundle(resolve_bundle(name)).manifest
        n, joints = 5, len(m.joint_names)
        quat = rng.normal([1, 0, 0, 0], 0.3, (n, 4))
        quat /= np.linalg.norm(quat, axis=1, keepdims=True)
        state = RobotState(
            rng.normal(0, 0.3, (n, joints)), rng.normal(0, 2, (n, joints)), quat, rng.normal(0, 1, (n, 3))
        )
        command = rng.uniform(-1.2, 1.2, (n, 3))
        last, default_q = rng.normal(0, 1, (n, joints)), np.asarray(m.default_joint_pos)
        phase = rng.uniform(-3, 3, (n, 2 if m.gait_period_s else 0))
        batch = build_observation(m.obs_terms, observation_input(m, state, command, last, default_q, phase))
        for i in range(n):
            one = RobotState(state.q[i], state.dq[i], quat[i], state.gyro[i])
            row = build_observation(m.obs_terms, observation_input(m, one, command[i], last[i], default_q, phase[i]))
            assert np.allclose(batch[i], row, atol=1e-6), name
