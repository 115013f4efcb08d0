"""The single-requirement mutations break exactly their requirement, whichever chooser decides."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prime_rl_dynamo.suite.mutations import MUTATIONS, DrawChooser, RandomChooser, mutate
from prime_rl_dynamo.suite.reference.listing import dumps
from prime_rl_dynamo.suite.strategies import discovery_bodies
from prime_rl_dynamo.validate import check_body
from prime_rl_dynamo.variants import with_variants


def _requirements(body: Any) -> set[str]:
    return {v.requirement for v in check_body(dumps(body))}


@settings(max_examples=40, deadline=None)
@given(
    body=discovery_bodies(max_engines=4),
    requirement=st.sampled_from(sorted(MUTATIONS)),
    data=st.data(),
)
def test_drawn_and_seeded_choices_break_the_same_requirement(
    body: dict[str, Any], requirement: str, data: st.DataObject
) -> None:
    drawn = mutate(requirement, body, DrawChooser(data.draw))
    seeded = mutate(requirement, body, RandomChooser(random.Random(requirement)))
    assert _requirements(drawn) == with_variants(requirement)
    assert _requirements(seeded) == with_variants(requirement)


@pytest.mark.parametrize("requirement", sorted(MUTATIONS))
def test_an_empty_listing_gets_something_to_break(requirement: str) -> None:
    empty = {"protocol_version": 1, "namespace": "dynamo", "workers": []}
    broken = mutate(requirement, empty, RandomChooser(random.Random(0)))
    assert _requirements(broken) == with_variants(requirement)
    assert empty["workers"] == [], "mutate must leave its input alone"


@pytest.mark.parametrize("scope", ["0", "00", "x", "1a"])
def test_list5_leaves_every_scope(scope: str) -> None:
    # A namespace one character longer than the scope never starts with it when that character
    # differs from the scope's first (a scope of zeros took "0" + scope as in scope).
    body = {"protocol_version": 1, "namespace": scope, "workers": []}
    for seed in range(5):
        broken = mutate("LIST-5", body, RandomChooser(random.Random(seed)))
        assert _requirements(broken) == {"LIST-5"}


@pytest.mark.parametrize(("requirement", "key"), [("WORKER-6", "model"), ("WORKER-12", "model")])
def test_a_mutated_member_keeps_dynamos_key_order(requirement: str, key: str) -> None:
    body = {"protocol_version": 1, "namespace": "dynamo", "workers": []}
    for seed in range(8):
        broken = mutate(requirement, body, RandomChooser(random.Random(seed)))
        (worker,) = [w for w in broken["workers"] if key in w or "system_url" in w]
        keys = list(worker)
        if key in worker:
            assert keys.index(key) == keys.index("routes") - 1
        else:
            assert keys.index("system_url") == keys.index("admin_base_url") - 1


def test_the_same_seed_makes_the_same_choices() -> None:
    body = {"protocol_version": 1, "namespace": "dynamo", "workers": []}
    for requirement in MUTATIONS:
        first = dumps(mutate(requirement, body, RandomChooser(random.Random(3))))
        assert first == dumps(mutate(requirement, body, RandomChooser(random.Random(3))))
