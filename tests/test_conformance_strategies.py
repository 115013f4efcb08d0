"""The public hypothesis strategies (prime_rl_dynamo.suite.strategies) keep their promises."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from prime_rl_dynamo.plan import plan_broadcast
from prime_rl_dynamo.suite.mutations import DrawChooser, mutate
from prime_rl_dynamo.suite.strategies import (
    BREAKABLE_REQUIREMENTS,
    DEFAULT_MODEL,
    Fleet,
    FleetEngine,
    Layout,
    discovery_bodies,
    fleets,
    instance_ids,
    invalid_bodies,
    layouts,
    sample,
    topologies,
)
from prime_rl_dynamo.topology import topology_from_dict
from prime_rl_dynamo.validate import check_body, validate_body
from prime_rl_dynamo.variants import with_variants

# World sizes [2, 4, 1] in canonical order: where an even split of W goes wrong.
PINNED_241 = Fleet(
    scope="dynamo",
    prefix=False,
    engines=tuple(
        FleetEngine(
            namespace="dynamo",
            component=f"engine-{name}",
            endpoint="rl",
            instance_id=2**53 + 1 + i,
            layout=Layout(tp=ws),
            model=DEFAULT_MODEL,
            role="prefill",
            port=20000 + 3 * i,
        )
        for i, (name, ws) in enumerate([("c", 1), ("a", 2), ("b", 4)])  # arrives out of order
    ),
)


@settings(max_examples=25)
@given(discovery_bodies())
@example(PINNED_241.body())
def test_generated_bodies_are_valid(body: dict) -> None:
    assert check_body(body) == []
    snapshot = validate_body(body)
    assert all(w.instance_id > 2**53 for w in snapshot.workers)


# A scope of x's only (e.g. "x"): an "x"+scope namespace would still start with the scope, so the
# LIST-5 mutation prefixes a character unlike the scope's first. Pinned.
_X_SCOPE = Fleet(scope="x", prefix=False, engines=PINNED_241.engines)


@pytest.mark.parametrize("requirement", BREAKABLE_REQUIREMENTS)
def test_each_invalid_body_breaks_exactly_its_requirement(requirement: str) -> None:
    @settings(max_examples=8, deadline=None)
    @given(invalid_bodies(requirement))
    def breaks_one(case: tuple[str, object]) -> None:
        req, body = case
        found = {v.requirement for v in check_body(body)}
        assert found == with_variants(req), f"{req}: the validator reported {sorted(found)}"

    breaks_one()


def test_worker2_breaker_regression_non_integer_id_on_a_later_worker() -> None:
    # Re-sorting whenever the *first* worker's id is an integer would compare a string id on a
    # later worker with ints (TypeError): the mutation re-sorts only for an integer id.
    @settings(max_examples=30, deadline=None)
    @given(st.data())
    def run(d: st.DataObject) -> None:
        # Same component everywhere, so sorting has to compare the instance ids.
        same = Fleet(
            scope="dynamo",
            prefix=False,
            engines=tuple(replace(e, component="prefill") for e in PINNED_241.engines),
        )
        broken = mutate("WORKER-2", same.body(), DrawChooser(d.draw))
        assert {v.requirement for v in check_body(broken)} == {"WORKER-2"}

    run()


def test_list5_breaker_regression_scope_starting_with_x() -> None:
    data = st.data()

    @settings(max_examples=3, deadline=None)
    @given(data)
    def run(d: st.DataObject) -> None:
        body = _X_SCOPE.body()
        for w in body["workers"]:
            w["namespace"] = "x"
            w["request_plane_url"] = f"dyn://x.{w['component']}.rl"
        broken = mutate("LIST-5", body, DrawChooser(d.draw))
        assert {v.requirement for v in check_body(broken)} == {"LIST-5"}

    run()


@settings(max_examples=30)
@given(fleets())
def test_plans_do_not_depend_on_arrival_order(fleet: Fleet) -> None:
    ready = fleet.ready_engines()
    width = sum(e.world_size for e in ready)
    by_arrival = [e for e in fleet.engines if e in ready]
    # FleetEngine has what a plan needs (identity, world_size, admin_base_url).
    canonical = plan_broadcast(ready, width, "prime-nccl")
    arrived = plan_broadcast(by_arrival, width, "prime-nccl")
    assert canonical.rank_offsets == arrived.rank_offsets
    assert canonical.rank_offsets[0] == 0


@settings(max_examples=25)
@given(fleets(min_engines=4, max_engines=8))
def test_fleets_cover_the_shapes_the_issue_asks_for(fleet: Fleet) -> None:
    # Each property holds for every fleet; the coverage of optional shapes is checked below.
    assert all(e.instance_id > 2**53 for e in fleet.engines)
    assert len({e.identity for e in fleet.engines}) == len(fleet.engines)
    assert fleet.inference_world_size() >= 1


def test_fleets_reach_every_optional_shape() -> None:
    drawn = sample(fleets(min_engines=4, max_engines=8), 40, seed=3)
    shared = any(
        len({e.component for e in f.engines if e.instance_id == iid}) > 1
        for f in drawn
        for iid in {e.instance_id for e in f.engines}
    )
    assert shared, "no fleet had components sharing an instance id"
    assert any(e.error for f in drawn for e in f.engines), "no error worker"
    assert any(e.model not in (DEFAULT_MODEL,) for f in drawn for e in f.engines), "no other model"
    assert any(f.prefix for f in drawn), "no prefix scope"
    assert any(
        [e.identity for e in f.engines] != sorted(e.identity for e in f.engines) for f in drawn
    )
    assert any(e.layout.ep > 1 for f in drawn for e in f.engines), "no expert parallelism"


@settings(max_examples=40)
@given(layouts())
def test_layout_world_size_is_tp_pp_pcp_dp(layout: Layout) -> None:
    assert layout.world_size == layout.tp * layout.pp * layout.pcp * layout.dp
    assert layout.world_size % layout.model_parallel == 0
    assert (layout.tp * layout.dp) % layout.ep == 0


@given(instance_ids())
def test_instance_ids_are_u64_above_2_53(iid: int) -> None:
    assert 2**53 < iid <= 2**64 - 1


@settings(max_examples=30)
@given(topologies())
def test_generated_topologies_are_valid_files_with_a_ready_model(data: dict) -> None:
    topology = topology_from_dict(data)
    engines = topology.engines()
    assert any(e.model == topology.model and e.publishes_admin for e in engines)
    # Every engine of the topology's model publishes an admin URL, so a client can get ready.
    assert all(e.admin for e in engines if e.model == topology.model)


def test_sample_is_deterministic_for_a_seed() -> None:
    assert sample(topologies(), 4, seed=9) == sample(topologies(), 4, seed=9)
    assert sample(topologies(), 4, seed=9) != sample(topologies(), 4, seed=10)
