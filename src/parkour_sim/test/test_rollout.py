"""The walking bundle in plain MuJoCo: the observation order is the contract."""

import dataclasses

import pytest

from parkour_core.bundle import load_bundle
from parkour_core.bundles import resolve_bundle
from parkour_core.bundles.importers.holosoma import CONFIG_LISTED_ORDER
from parkour_sim.rollout import rollout


@pytest.fixture(scope="module")
def walk_bundle():
    return load_bundle(resolve_bundle("g1_walk"))


def test_walking_bundle_walks_forward(walk_bundle):
    result = rollout(walk_bundle, (0.5, 0.0, 0.0), seconds=6.0)
    assert not result.fell
    assert result.forward_m > 1.2


def test_walking_bundle_stands_still_on_zero_command(walk_bundle):
    result = rollout(walk_bundle, (0.0, 0.0, 0.0), seconds=4.0)
    assert not result.fell
    assert abs(result.forward_m) < 0.3


def test_terms_in_the_config_listed_order_make_the_robot_fall(walk_bundle):
    terms = {t.name: t for t in walk_bundle.manifest.obs_terms}
    wrong = dataclasses.replace(walk_bundle.manifest, obs_terms=tuple(terms[n] for n in CONFIG_LISTED_ORDER))
    result = rollout(dataclasses.replace(walk_bundle, manifest=wrong), (0.5, 0.0, 0.0), seconds=3.0)
    assert result.fell
    assert result.fell_at_s is not None and result.fell_at_s < 1.0
