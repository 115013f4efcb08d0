"""The located path (entry-by-entry decode; jsonschema on the defective entries alone) and the
columnar fast path must give the exhaustive path's verdict, violation for violation. Also: the
semantic rules are keyed by catalog requirement IDs, and a Violation's expected/found fields are
what its message and the JSON report say."""

from __future__ import annotations

import copy
import importlib.util
import json
from typing import Any

import pytest
from _validate_support import mutated_bodies, valid_bodies
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conformance.frontend import structured
from prime_rl_dynamo.requirements import all_requirements
from prime_rl_dynamo.validate import (
    SEMANTIC_RULES,
    check_body,
    check_body_exhaustive,
    validate_body,
)
from prime_rl_dynamo.violation import Violation


def _worker(i: int, **fields: Any) -> dict[str, Any]:
    w: dict[str, Any] = {
        "namespace": "dynamo",
        "component": "decode",
        "endpoint": "rl",
        "instance_id": 100 + i,
        "transport": {"tcp": f"10.0.0.{i}:4000"},
        "request_plane_url": "dyn://dynamo.decode.rl",
        "routes": ["pause_generation", "resume_generation"],
        "admin_base_url": f"http://10.1.0.{i}:9000/engine",
        "world_size": 2,
    }
    w.update(fields)
    return {k: v for k, v in w.items() if v is not None}


def _body(workers: list[dict[str, Any]]) -> bytes:
    doc = {"protocol_version": 1, "namespace": "dynamo", "workers": workers}
    return json.dumps(doc, separators=(",", ":")).encode()


#: One defect in one entry of a 12-worker body, each a different requirement; the identity and
#: admin cases break a rule across entries (entry 5 against entry 4).
ONE_DEFECT: dict[str, dict[str, Any] | None] = {
    "world_size 0": {"world_size": 0},
    "two transports": {"transport": {"tcp": "a", "http": "b"}},
    "routes reversed": {"routes": ["resume_generation", "pause_generation"]},
    "wrong request_plane_url": {"request_plane_url": "dyn://dynamo.x.rl"},
    "out of scope": {"namespace": "other", "request_plane_url": "dyn://other.decode.rl"},
    "admin without world_size": {"world_size": None},
    "same identity, other admin": {"instance_id": 104},
    "same admin as entry 4": {"admin_base_url": "http://10.1.0.4:9000/engine"},
    "same admin endpoint, other spelling": {"admin_base_url": "HTTP://10.1.0.4:9000/engine/"},
    "unusable admin host": {"admin_base_url": "http://999.1.1.1:9000/engine"},
    "error worker with routes": {"error": "boom", "admin_base_url": None, "world_size": None},
    "instance_id as a float": {"instance_id": 105.0},
    "instance_id beyond u64": {"instance_id": 2**64},
    "out of order": {"instance_id": 1},
    "not an object": None,
}


def test_one_defective_entry_is_located_and_judged_as_the_exhaustive_path_judges_it() -> None:
    for name, change in ONE_DEFECT.items():
        workers: list[Any] = [_worker(i) for i in range(12)]
        workers[5] = _worker(5, **change) if change is not None else 7
        raw = _body(workers)
        expected = check_body_exhaustive(raw)
        assert expected, name
        assert check_body(raw) == expected, name


def test_every_entry_defective_is_judged_as_the_exhaustive_path_judges_it() -> None:
    # Each entry judged property by property, each distinct defect by jsonschema once per body:
    # the same defect in every entry, and a different one in each, give the exhaustive verdict.
    changes = [c for c in ONE_DEFECT.values() if c is not None]
    bodies = [[_worker(i, **change) for i in range(12)] for change in changes]
    bodies.append([_worker(i, **changes[i % len(changes)]) for i in range(3 * len(changes))])
    for workers in bodies:
        raw = _body(workers)
        expected = check_body_exhaustive(raw)
        assert expected and check_body(raw) == expected


def test_the_located_path_hands_over_what_only_the_whole_text_can_say() -> None:
    valid = _body([_worker(i) for i in range(3)])
    repeated = valid.replace(b'"world_size":2', b'"world_size":3,"world_size":2', 1)
    unknown_null = valid.replace(b'"world_size":2', b'"world_size":0,"x":null', 1)
    lone = valid.replace(b'"rl"', b'"\\ud800"', 1)
    for raw in (repeated, unknown_null, lone, b"[]", b'{"namespace":"d"}'):
        assert check_body(raw) == check_body_exhaustive(raw), raw


@settings(max_examples=200)
@given(mutated_bodies())
@example(
    json.loads(_body([_worker(0), _worker(1), _worker(1, admin_base_url="http://10.1.0.9:9/e")]))
)
def test_located_path_agrees_with_the_exhaustive_path(doc: Any) -> None:
    raw = json.dumps(doc).encode()
    assert check_body(raw) == check_body_exhaustive(raw)


@settings(max_examples=60)
@given(valid_bodies(), st.integers(2, 40))
def test_wide_valid_bodies_stay_on_the_fast_path(doc: dict[str, Any], copies: int) -> None:
    # The columnar checks over many entries: one namespace per copy keeps identities unique.
    workers = []
    for k in range(copies):
        for w in doc["workers"]:
            ns = f"{w['namespace']}{k:03d}"
            workers.append(
                {
                    **w,
                    "namespace": ns,
                    "request_plane_url": f"dyn://{ns}.{w['component']}.{w['endpoint']}",
                }
            )
            if "admin_base_url" in w:
                workers[-1]["admin_base_url"] = f"{w['admin_base_url']}/{k}"
    wide = {
        **doc,
        "workers": sorted(
            workers, key=lambda w: (w["namespace"], w["component"], w["endpoint"], w["instance_id"])
        ),
    }
    raw = json.dumps(wide).encode()
    slow = check_body_exhaustive(raw)
    assert slow == [], slow[:3]
    assert check_body(raw) == []
    assert validate_body(raw) == validate_body(wide)


def test_semantic_rules_are_keyed_by_catalog_requirements() -> None:
    catalog = set(all_requirements())
    assert set(SEMANTIC_RULES) <= catalog
    assert {"LIST-1", "LIST-2", "LIST-3", "LIST-4", "LIST-5", "LIST-6"} <= set(SEMANTIC_RULES)


def test_expected_and_found_compose_the_message_and_the_report() -> None:
    v = Violation("WORKER-9", "/workers/0/world_size", expected="an integer", found="0")
    assert v.message == "expected an integer, found 0"
    assert str(v) == "WORKER-9 at /workers/0/world_size: expected an integer, found 0"
    plain = Violation("V2-4", "", "304 without If-None-Match")
    assert plain.expected is None and plain.message == "304 without If-None-Match"
    (bad,) = check_body(_body([_worker(0, world_size=0)]))
    report = structured(bad, "GET")
    assert report["expected"] == bad.expected and report["found"] == "0"
    assert report["message"] == f"expected {bad.expected}, found 0"
    assert structured(plain, "GET")["expected"] is None


#: Defects that keep every member's JSON type, by the member they change (the typed tier of the
#: located path builds their violations from the schema's keywords, without jsonschema).
TYPED_DEFECTS: dict[str, list[Any]] = {
    "namespace": ["", "zzz", "dyn"],
    "component": ["", "a"],
    "endpoint": [""],
    "instance_id": [-1, -(2**63), 2**64, 2**64 + 7, 0],
    "request_plane_url": ["", "http://x", "dyn://other.a.b"],
    "routes": [["b", "a"], ["a", ""], ["a", "a"], ["", ""], [""] * 25, ["b", "a", "a", ""]],
    "system_url": ["", "ftp://x", "http://", "http://a b"],
    "admin_base_url": ["", "ftp://x", "http://999.1.1.1:9000/e", "HTTP://A:9/", "http://a:0",
                       "http://[::1]:9/e", "http://xn--a.b:9/", "http://10.1.0.1:9000/engine/1"],
    "model": ["", "m"],
    "world_size": [0, -3, 2**32, 2**32 - 1, 1],
    "error": ["", "boom"],
}  # fmt: skip


@st.composite
def typed_defective_bodies(draw: st.DrawFn) -> bytes:
    """A wide valid body (many entries) with defects of every kind that keep the JSON types:
    several in one entry, in many entries, some removing an optional member."""
    doc = draw(valid_bodies(unknown_fields=False))
    workers = [json.loads(json.dumps(w)) for w in doc["workers"]] * draw(st.integers(1, 4))
    if not workers:
        workers = [_worker(0)]
    for _ in range(draw(st.integers(1, 2 * len(workers) + 2))):
        w = workers[draw(st.integers(0, len(workers) - 1))]
        name = draw(st.sampled_from(sorted(TYPED_DEFECTS)))
        if draw(st.integers(0, 5)) == 0 and name in ("system_url", "admin_base_url", "model",
                                                     "world_size", "error"):  # fmt: skip
            w.pop(name, None)
        else:
            w[name] = draw(st.sampled_from(TYPED_DEFECTS[name]))
    if draw(st.booleans()):
        workers.reverse()
    return json.dumps({**doc, "workers": workers}).encode()


@settings(max_examples=300, deadline=None)
@given(typed_defective_bodies())
@example(_body([_worker(0, routes=[""] * 25, world_size=0), _worker(1, error="", namespace="")]))
@example(_body([_worker(0, error="x", routes=["b", "a"], system_url="ftp://x", world_size=0)]))
def test_typed_located_builds_the_exhaustive_paths_violations(raw: bytes) -> None:
    # The differential test of the typed tier's builders: every kind of defect, per property,
    # several per entry, in many entries; the same IDs, pointers, labels and texts.
    assert check_body(raw) == check_body_exhaustive(raw)


def test_defects_that_keep_the_json_types_take_the_typed_tier() -> None:
    # Its other tiers would give the same verdict at many times the price: the typed tier must
    # not hand these over (two transport keys, a float and a non-object are not its to judge).
    for name, change in ONE_DEFECT.items():
        if name in ("two transports", "instance_id as a float", "not an object"):
            continue
        workers = [_worker(i) for i in range(12)]
        workers[5] = _worker(5, **(change or {}))
        raw = _body(workers)
        assert check_body(raw) == check_body_exhaustive(raw), name


def test_the_validator_refuses_a_schema_it_cannot_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    # The table reads its checks from the bundled schema at import; a keyword it has no check for,
    # or an unknown format, stops the import rather than being skipped (so a schema change that
    # adds a rule cannot pass unjudged). A second copy of the module is imported on a drifted schema.
    from prime_rl_dynamo import resources, validate

    real = resources.load_json
    for drift in ({"maxLength": 9}, {"format": "uri"}, {"multipleOf": 2}):
        schema = copy.deepcopy(real(validate.SCHEMA_NAME))
        schema["$defs"]["identityPart"].update(drift)
        monkeypatch.setattr(
            resources,
            "load_json",
            lambda name, s=schema: s if name == validate.SCHEMA_NAME else real(name),
        )
        spec = importlib.util.spec_from_file_location(
            "validate_on_a_drifted_schema", validate.__file__
        )
        assert spec is not None and spec.loader is not None
        with pytest.raises(ImportError, match="does not judge"):
            spec.loader.exec_module(importlib.util.module_from_spec(spec))
    monkeypatch.setattr(resources, "load_json", real)
    spec = importlib.util.spec_from_file_location("validate_on_the_schema", validate.__file__)
    assert spec is not None and spec.loader is not None
    spec.loader.exec_module(importlib.util.module_from_spec(spec))  # the counterpart: it imports
