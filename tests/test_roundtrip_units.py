"""The roundtrip profile's scope rewriting and its LIST-5 check, without a live fleet."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

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
