"""Reference fleet, unit level: byte-exact listings against Dynamo 1.6.1 samples, fault syntax,
requirement-breaking bodies (one per validator-checked requirement), churn and the schedule.

No servers here; the loopback tests are in test_reference_fleet.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prime_rl_dynamo import validate
from prime_rl_dynamo.errors import ConfigError
from prime_rl_dynamo.requirements import all_requirements
from prime_rl_dynamo.resources import load_json
from prime_rl_dynamo.suite.reference.breaks import BREAKS, break_body
from prime_rl_dynamo.suite.reference.faults import FAULTS, Fault, parse_fault, parse_faults
from prime_rl_dynamo.suite.reference.frontend import Frontend
from prime_rl_dynamo.suite.reference.listing import WorkerView, dumps, listing_body
from prime_rl_dynamo.suite.reference.state import FleetState, ReferenceEngine, churn_view
from prime_rl_dynamo.suite.strategies import discovery_bodies, topologies
from prime_rl_dynamo.topology import MembershipEvent, default_topology, topology_from_dict
from prime_rl_dynamo.variants import with_variants
from prime_rl_dynamo.wire import WORKER_FIELDS

SAMPLES = Path(__file__).parent / "data" / "samples"


def _sample(name: str) -> bytes:
    return (SAMPLES / name).read_bytes().rstrip(b"\n")


def _view_from_sample(worker: dict[str, Any]) -> WorkerView:
    port = int(worker["transport"]["tcp"].split(":", 1)[1].split("/", 1)[0])
    return WorkerView(
        namespace=worker["namespace"],
        component=worker["component"],
        endpoint=worker["endpoint"],
        instance_id=worker["instance_id"],
        port=port,
        routes=tuple(reversed(worker["routes"])),  # the listing must sort them back
        system_url=worker.get("system_url"),
        admin_base_url=worker.get("admin_base_url"),
        model=worker.get("model"),
        world_size=worker.get("world_size"),
        error=worker.get("error"),
    )


@pytest.mark.parametrize(
    "name",
    [
        "dynamo-1.6.1-empty-fleet.json",
        "dynamo-1.6.1-pd-fleet.json",
        "dynamo-1.6.1-mixed-fleet.json",
        "dynamo-1.6.1-dead-workers.json",
    ],
)
def test_listing_reproduces_real_dynamo_bytes(name: str) -> None:
    sample = _sample(name)
    parsed = json.loads(sample)
    # Fed in reverse order: the listing sorts workers as the real frontend does.
    views = [_view_from_sample(w) for w in reversed(parsed["workers"])]
    assert dumps(listing_body(parsed["namespace"], views)) == sample


def test_worker_fields_are_in_real_dynamos_order() -> None:
    for name in ("dynamo-1.6.1-pd-fleet.json", "dynamo-1.6.1-dead-workers.json"):
        for worker in json.loads(_sample(name))["workers"]:
            assert list(worker) == [k for k in WORKER_FIELDS if k in worker]


def test_dead_engine_error_names_its_port() -> None:
    topo = topology_from_dict(
        {"engines": [{"component": "prefill", "world_size": 2, "faults": {"dead": True}}]}
    )
    engine = ReferenceEngine(spec=topo.engines()[0], port=41665, host="127.0.0.1")
    entry = json.loads(dumps(listing_body("dynamo", [engine.view()])))["workers"][0]
    assert entry["error"] == "Unavailable: TCP connection to 127.0.0.1:41665 failed"
    assert entry["routes"] == []
    assert list(entry) == [*WORKER_FIELDS[:6], "routes", "error"]


def test_engine_without_admin_keeps_world_size_like_the_backend_sample() -> None:
    topo = topology_from_dict({"engines": [{"component": "backend", "admin": False, "tp": 2}]})
    engine = ReferenceEngine(spec=topo.engines()[0], port=41000, host="127.0.0.1")
    entry = listing_body("dynamo", [engine.view()])["workers"][0]
    assert "admin_base_url" not in entry
    assert entry["world_size"] == 2
    assert list(entry)[-2:] == ["routes", "world_size"]


def test_admin_host_localhost_is_advertised() -> None:
    topo = topology_from_dict(
        {"engines": [{"component": "decode", "admin_host": "localhost", "world_size": 4}]}
    )
    engine = ReferenceEngine(spec=topo.engines()[0], port=41001, host="127.0.0.1")
    entry = listing_body("dynamo", [engine.view()])["workers"][0]
    assert entry["admin_base_url"] == "http://localhost:41001/admin/"
    assert entry["system_url"] == "http://localhost:41001"


# -- fault syntax ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("gzip", Fault("gzip")),
        ("rate-limit=1:2", Fault("rate-limit", "1", 2)),
        ("reset:3", Fault("reset", None, 3)),
        ("reset=:3", Fault("reset", None, 3)),
        ("break=WORKER-8", Fault("break", "WORKER-8")),
        ("latency=250", Fault("latency", "250")),
        ("churn=0.5", Fault("churn", "0.5")),
    ],
)
def test_fault_syntax(text: str, expected: Fault) -> None:
    assert parse_fault(text) == expected
    assert parse_fault(str(expected)) == expected


@pytest.mark.parametrize(
    "text",
    ["nope", "gzip=1", "rate-limit", "latency=-5", "break=HTTP-1", "slow=abc", "GZIP", "reset:x"],
)
def test_bad_faults_are_refused_with_what_was_expected(text: str) -> None:
    with pytest.raises(ConfigError, match=r"expected|takes no value|needs a value|must be"):
        parse_fault(text)


def test_every_numeric_fault_has_bounds() -> None:
    # A numeric fault without a largest value was a KeyError out of parse_fault (status=403).
    from prime_rl_dynamo.suite.reference import faults

    assert set(faults._NUMERIC) == set(faults._MAXIMUM)
    assert parse_fault("status=403") == Fault("status", "403", None)
    assert parse_fault("version=2") == Fault("version", "2", None)
    with pytest.raises(ConfigError, match="at most 599"):
        parse_fault("status=600")


def test_count_limits_a_fault_to_the_first_requests() -> None:
    fault = parse_fault("unavailable:2")
    assert [fault.active(n) for n in (1, 2, 3)] == [True, True, False]
    assert parse_fault("unavailable").active(10_000)


def test_every_fault_is_described() -> None:
    assert {f.name for f in parse_faults(["gzip", "truncate"])} <= set(FAULTS)
    assert all(text for _, text in FAULTS.values())


def test_topology_schema_accepts_the_count_suffix() -> None:
    topo = topology_from_dict({"engines": [], "faults": ["reset:1", "rate-limit=2:3"]})
    assert parse_faults(topo.faults) == (Fault("reset", None, 1), Fault("rate-limit", "2", 3))


# -- requirement-breaking bodies ---------------------------------------------------------------


def _breakable_ids() -> list[str]:
    """Every requirement a validator checks on a listing body (schema or validator enforced)."""
    return [
        r.id
        for r in all_requirements().values()
        if r.enforced_by in ("schema", "validator") and (r.party == "server" or r.id == "DIALECT-1")
    ]


def _default_body() -> dict[str, Any]:
    engines = [
        ReferenceEngine(spec=spec, port=42000 + i, host="127.0.0.1")
        for i, spec in enumerate(default_topology().engines())
    ]
    return listing_body("dynamo", [e.view() for e in engines])


def test_default_body_is_valid() -> None:
    assert validate.check_body(dumps(_default_body())) == []


@pytest.mark.parametrize("requirement", _breakable_ids())
def test_break_fault_breaks_exactly_that_requirement(requirement: str) -> None:
    assert requirement in BREAKS, f"no break={requirement} fault: add one to reference/breaks.py"
    broken = break_body(requirement, _default_body(), seed=7)
    if requirement == "HTTP-5":
        # The whole-listing failure body has its own schema; HTTP-5 is its only requirement.
        assert broken.status == 500
        errors = list(
            jsonschema.Draft202012Validator(
                load_json("rl-workers-error.v1.schema.json")
            ).iter_errors(broken.body)
        )
        assert errors, "the broken discovery_failed body should fail its schema"
        return
    assert broken.status == 200
    found = {v.requirement for v in validate.check_body(dumps(broken.body))}
    assert found == with_variants(requirement)


@pytest.mark.parametrize("requirement", sorted(BREAKS))
def test_breaks_are_deterministic_given_the_seed(requirement: str) -> None:
    body = _default_body()
    first = dumps(break_body(requirement, body, seed=3).body)
    assert first == dumps(break_body(requirement, body, seed=3).body)
    assert dumps(body) == dumps(_default_body()), "break_body must not mutate its input"


def test_breaks_work_on_an_empty_fleet() -> None:
    empty = listing_body("dynamo", [])
    for requirement in ("LIST-1", "LIST-6", "WORKER-8"):
        found = {
            v.requirement
            for v in validate.check_body(dumps(break_body(requirement, empty, 1).body))
        }
        assert found == {requirement}


def test_dialect_break_is_detected_as_smg() -> None:
    body = break_body("DIALECT-1", _default_body(), seed=0).body
    assert validate.detect_dialect(body) == "smg"


# -- membership over time ----------------------------------------------------------------------


def _state(schedule: tuple[MembershipEvent, ...] = ()) -> FleetState:
    engines = [
        ReferenceEngine(spec=spec, port=43000 + i, host="127.0.0.1")
        for i, spec in enumerate(default_topology().engines())
    ]
    return FleetState(engines, schedule)


def test_schedule_applies_each_event_once_in_time_order() -> None:
    state = _state(
        (
            MembershipEvent(1.0, "leave", "dynamo.prefill#3"),
            MembershipEvent(2.0, "resize", "dynamo.decode#0", world_size=8),
            MembershipEvent(3.0, "kill", "dynamo.decode#1"),
        )
    )
    assert state.apply_schedule(0.5) == []
    assert [e.action for e in state.apply_schedule(2.5)] == ["leave", "resize"]
    assert len(state.members()) == 5
    assert state.by_key("dynamo.decode#0").world_size == 8
    assert state.apply_schedule(2.5) == []
    state.apply_schedule(3.0)
    assert state.by_key("dynamo.decode#1").view().error is not None


def test_schedule_naming_an_unknown_engine_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"dynamo\.nope#0"):
        _state((MembershipEvent(1.0, "leave", "dynamo.nope#0"),))


def test_churn_alternates_between_the_fleet_and_one_change() -> None:
    state = _state()
    members = state.members()
    base = [v.world_size for v in churn_view(members, [], period=1.0, elapsed=0.2, seed=0)]
    assert base == [e.world_size for e in members]
    changed = churn_view(members, [], period=1.0, elapsed=1.2, seed=0)
    assert sum(v.world_size or 0 for v in changed) != sum(base)
    assert churn_view(members, [], period=1.0, elapsed=1.7, seed=0) == changed
    assert [v.world_size for v in churn_view(members, [], period=1.0, elapsed=2.1, seed=0)] == base


# -- properties over generated fleets ----------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    body=discovery_bodies(),
    requirement=st.sampled_from(sorted(set(BREAKS) - {"HTTP-5"})),
    seed=st.integers(0, 2**16),
)
def test_breaks_hold_on_any_valid_body(body: dict[str, Any], requirement: str, seed: int) -> None:
    assert validate.check_body(dumps(body)) == []
    broken = break_body(requirement, body, seed)
    assert {v.requirement for v in validate.check_body(dumps(broken.body))} == with_variants(
        requirement
    )


@settings(max_examples=40, deadline=None)
@given(data=topologies(error_workers=True))
def test_listing_of_any_topology_is_valid(data: dict[str, Any]) -> None:
    topology = topology_from_dict(data)
    engines = [
        ReferenceEngine(spec=spec, port=20000 + i, host="127.0.0.1")
        for i, spec in enumerate(topology.engines())
    ]
    frontend = Frontend(FleetState(engines), namespace=topology.namespace)
    status, body = frontend.body([])
    assert status == 200
    snapshot = validate.validate_body(dumps(body))
    published = sum(w.world_size or 0 for w in snapshot.workers if w.admin_base_url)
    listed = [e for e in engines if e.spec.namespace.startswith(topology.namespace)]
    assert published == sum(e.world_size for e in listed if e.spec.publishes_admin)
