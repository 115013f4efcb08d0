"""The roundtrip profile's scope rewriting and its LIST-5 check, without a live fleet."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from conformance.roundtrip import PINNED_TOPOLOGY, scope_problems, scoped_topology


def _worker(ns: str) -> dict[str, Any]:
    return {"namespace": ns, "component": "c", "endpoint": "rl", "instance_id": 7}


def test_prefix_scope_spreads_groups_under_the_prefix_with_one_outside() -> None:
    data, kwargs = scoped_topology(PINNED_TOPOLOGY, "prefix")
    assert kwargs == {"namespace_prefix": "dynamo-rl"}
    namespaces = [g["namespace"] for g in data["engines"]]
    assert namespaces[0] == "dynamo-rl" and namespaces[-1] == "other-dynamo-rl"
    assert len(set(namespaces[:-1])) == len(PINNED_TOPOLOGY["engines"]) > 2
    assert all(ns.startswith("dynamo-rl") for ns in namespaces[:-1])
    assert "namespace" not in PINNED_TOPOLOGY["engines"][0]  # the original is untouched


def test_suffix_scope_and_exact_scope() -> None:
    data, kwargs = scoped_topology(PINNED_TOPOLOGY, "suffix")
    assert kwargs == {"worker_suffix": "w"}
    assert {g["namespace"] for g in data["engines"][:-1]} == {"dynamo-w"}
    assert data["engines"][-1]["namespace"] == "dynamo"
    assert scoped_topology(PINNED_TOPOLOGY, "exact") == (PINNED_TOPOLOGY, {})


def test_scope_check_fails_on_a_wrong_scope_or_a_worker_outside_it() -> None:
    prefix = SimpleNamespace(scope="p", extra_env={"DYN_NAMESPACE_PREFIX": "p"})
    exact = SimpleNamespace(scope="p", extra_env={})
    good = {"namespace": "p", "workers": [_worker("p"), _worker("p-a")]}
    assert scope_problems(good, prefix, when="t") == []
    assert scope_problems({"namespace": "p", "workers": [_worker("p")]}, exact, when="t") == []
    wrong = scope_problems({"namespace": "q", "workers": []}, prefix, when="t")
    assert wrong == ["t: expected the body's namespace to be the scope 'p', found 'q'"]
    outside = scope_problems({"namespace": "p", "workers": [_worker("x-p")]}, prefix, when="t")
    assert len(outside) == 1 and "x-p.c.rl#7: namespace 'x-p' is outside the scope" in outside[0]
    assert len(scope_problems(good, exact, when="t")) == 1  # p-a under an exact scope


# --- how long the roundtrip waits for a listing to converge -----------------------------------


class _Fleet:
    """A fleet whose listing is scripted: ``bodies`` in turn, the last one for ever."""

    def __init__(self, engines: list[Any], bodies: list[dict[str, Any]]) -> None:
        self.engines, self.bodies, self.polls = engines, bodies, 0

    def in_scope(self, engine: Any) -> bool:
        return True

    def listing(self) -> dict[str, Any]:
        self.polls += 1
        return self.bodies[min(self.polls, len(self.bodies)) - 1]


def _engines() -> list[Any]:
    from prime_rl_dynamo.suite.harness import DynamoEngine
    from prime_rl_dynamo.topology import topology_from_dict

    topology = topology_from_dict(
        {"version": 1, "namespace": "dynamo", "model": "m", "engines": [{"component": "prefill"}]},
        source="test",
    )
    return [
        DynamoEngine(
            spec=spec,
            system_url="http://127.0.0.1:9",
            admin_base_url="http://127.0.0.1:9/admin",
            instance_id=5 + i,
            alive=True,
            models=("m",),
        )
        for i, spec in enumerate(topology.engines())
    ]


def _listed(engine: Any, **changes: Any) -> dict[str, Any]:
    from conformance.roundtrip import expected_entry

    entry = {**engine.identity._asdict(), **expected_entry(engine), **changes}
    del entry["error"]
    return {k: v for k, v in entry.items() if v is not None}


def test_a_listing_whose_values_stop_changing_is_decided_before_the_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from conformance import roundtrip

    monkeypatch.setattr(roundtrip, "SETTLED_S", 0.0)
    engines = _engines()
    old_release = {"namespace": "dynamo", "workers": [_listed(engines[0], admin_base_url=None)]}
    fleet = _Fleet(engines, [old_release])
    problems = roundtrip._converge(fleet, set(), "t", 60.0)  # type: ignore[arg-type]
    assert len(problems) == 1 and "expected admin_base_url" in problems[0]
    assert "only listed values differ" in problems[0]
    assert fleet.polls == roundtrip._SETTLED_POLLS  # decided, not waited out


def test_a_listing_still_changing_or_missing_an_engine_is_waited_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from conformance import roundtrip

    monkeypatch.setattr(roundtrip, "SETTLED_S", 0.0)
    engines = _engines()
    good = {"namespace": "dynamo", "workers": [_listed(engines[0])]}
    # The model comes late (after more polls than it takes to decide a value-only difference,
    # but each poll differs from the one before): the listing converges, nothing is reported.
    late = [
        {"namespace": "dynamo", "workers": [_listed(engines[0], model=f"m-{i}")]}
        for i in range(roundtrip._SETTLED_POLLS + 2)
    ]
    assert roundtrip._converge(_Fleet(engines, [*late, good]), set(), "t", 60.0) == []  # type: ignore[arg-type]
    # An engine not listed is a membership difference: no early decision, the deadline decides.
    missing = _Fleet(engines, [{"namespace": "dynamo", "workers": []}])
    problems = roundtrip._converge(missing, set(), "t", 0.5)  # type: ignore[arg-type]
    assert len(problems) == 1 and "registered but not listed" in problems[0]
    assert "still after 0.5 s" in problems[0]
    # A dead instance still listed without an error, beside a value difference: waited for too.
    dead = roundtrip.WorkerId("dynamo", "prefill", "rl", 99)
    stale = {**_listed(engines[0]), "instance_id": 99}
    body = {"namespace": "dynamo", "workers": [_listed(engines[0], routes=["x"]), stale]}
    problems = roundtrip._converge(_Fleet(engines, [body]), {dead}, "t", 0.5)  # type: ignore[arg-type]
    assert any("dead instance listed without error" in p for p in problems)
    assert all("still after 0.5 s" in p for p in problems)
