import numpy as np
import pytest

from parkour_core.robots import G1
from training.envs import randomization as dr
from training.envs.mujoco_cpu import BatchedMujoco


def test_draws_lie_in_php_ranges() -> None:
    cfg = dr.RandomizationConfig()
    d = dr.draw_physics(cfg, 2000, np.random.default_rng(0))
    assert d.static_friction.min() >= 0.4 and d.static_friction.max() <= 1.3
    assert d.kinetic_friction.min() >= 0.4 and d.kinetic_friction.max() <= 1.1
    assert np.all(d.kinetic_friction <= d.static_friction)
    np.testing.assert_array_equal(d.friction, d.kinetic_friction)
    assert d.restitution.min() >= 0.0 and d.restitution.max() <= 0.5
    assert np.all(np.abs(d.torso_com_offset_m) <= [0.025, 0.05, 0.05])
    assert d.static_friction.max() - d.static_friction.min() > 0.8  # actually spread over the range


def test_restitution_maps_to_damping_ratio() -> None:
    assert dr.restitution_to_dampratio(np.array(0.0)) == pytest.approx(1.0)
    zeta = dr.restitution_to_dampratio(np.array(0.5))
    # A damped oscillator with this ratio bounces back with e = exp(-zeta pi / sqrt(1 - zeta^2)).
    assert np.exp(-zeta * np.pi / np.sqrt(1.0 - zeta**2)) == pytest.approx(0.5)


def test_apply_changes_the_model() -> None:
    sim = BatchedMujoco(1, G1, max_boxes=1, nthread=1)
    base, model = sim.base_model, sim.models[0]
    randomizer = dr.ModelRandomizer(base, G1.torso_body)
    draw = dr.draw_physics(dr.RandomizationConfig(), 1, np.random.default_rng(3))
    randomizer.apply(sim, 0, draw, 0)
    g = randomizer.contact_geoms
    assert model.geom("floor").id in g and model.geom("terrain_box0").id in g
    np.testing.assert_allclose(model.geom_friction[g, 0], draw.friction[0])
    np.testing.assert_allclose(model.pair_friction[:, 0:2], draw.friction[0])
    np.testing.assert_allclose(model.geom_solref[g, 1], draw.dampratio[0])
    np.testing.assert_allclose(model.geom_solref[g, 0], base.geom_solref[g, 0])
    torso = model.body(G1.torso_body).id
    np.testing.assert_allclose(model.body_ipos[torso], base.body_ipos[torso] + draw.torso_com_offset_m[0])
    # A second draw is relative to the nominal values, not to the first draw.
    randomizer.apply(sim, 0, draw, 0)
    np.testing.assert_allclose(model.body_ipos[torso], base.body_ipos[torso] + draw.torso_com_offset_m[0])
    sim.close()


def test_pushes_last_one_to_three_seconds() -> None:
    cfg = dr.RandomizationConfig()
    n, dt = 8, 0.02
    pushes = dr.Pushes(cfg, n, np.random.default_rng(4))
    pushes.reset(np.arange(n), np.zeros(n))
    active = []
    for k in range(3000):  # 60 s
        f = pushes.forces(np.full(n, k * dt))
        active.append(np.linalg.norm(f, axis=-1) > 0.0)
        assert np.all(f[:, 2] == 0.0) and np.all(np.linalg.norm(f, axis=-1) <= 30.0 + 1e-9)
    on = np.array(active)
    durations = []
    for i in range(n):
        edges = np.flatnonzero(np.diff(on[:, i].astype(int)))
        starts, ends = edges[::2], edges[1::2]
        durations += list((ends - starts[: len(ends)]) * dt)
    assert len(durations) > 40
    assert 1.0 - dt <= min(durations) and max(durations) <= 3.0 + dt
    off = dr.Pushes(dr.NOMINAL, n, np.random.default_rng(4))
    off.reset(np.arange(n), np.zeros(n))
    assert not np.any(off.forces(np.full(n, 5.0)))
