"""The located path (entry-by-entry decode; jsonschema on the defective entries alone) and the
columnar fast path must give the exhaustive path's verdict, violation for violation. Also: the
semantic rules are keyed by catalog requirement IDs, and a Violation's expected/found fields are
what its message and the JSON report say."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_validate_fastpath import mutated_bodies, valid_bodies

from conformance.frontend import structured
from prime_rl_dynamo._strict_json import parse
from prime_rl_dynamo.requirements import all_requirements
from prime_rl_dynamo.validate import (
    _ENTRIES,
    _ENTRY,
    SEMANTIC_RULES,
    _decode_entries,
    _entry_errors,
    _entry_validator,
    _exhaustive_text,
    _fast,
    _located,
    _typed_located,
    check_body,
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
        assert _fast(raw) is None, name
        expected = _exhaustive_text(raw)[0]
        assert expected, name
        located = _located(raw)
        assert located is not None, f"{name}: the located path should vouch for this body"
        assert located == expected, name
        assert check_body(raw) == expected, name


def test_every_entry_defective_is_judged_as_the_exhaustive_path_judges_it() -> None:
    # Each entry judged property by property, each distinct defect by jsonschema once per body:
    # the same defect in every entry, and a different one in each, give the exhaustive verdict.
    changes = [c for c in ONE_DEFECT.values() if c is not None]
    bodies = [[_worker(i, **change) for i in range(12)] for change in changes]
    bodies.append([_worker(i, **changes[i % len(changes)]) for i in range(3 * len(changes))])
    for workers in bodies:
        raw = _body(workers)
        expected = _exhaustive_text(raw)[0]
        assert expected and check_body(raw) == expected
        located = _located(raw)
        assert located is None or located == expected


def _errors(errors: Any) -> list[tuple[Any, ...]]:
    """What the violations are built from, per jsonschema error (of a required keyword: which
    members are missing; a remembered one may come from another entry with the same members)."""
    return [
        (list(e.absolute_path), e.validator, id(e.schema), repr(e.validator_value),
         [p for p in e.validator_value if p not in e.instance] if e.validator == "required"
         else repr(e.instance), getattr(e, "more_items", 0))
        for e in errors
    ]  # fmt: skip


@settings(max_examples=200)
@given(mutated_bodies())
def test_entry_errors_are_jsonschemas_errors_in_its_order(doc: Any) -> None:
    # The differential test of the split judge: per property (with the clean-value predicates)
    # and the allOf rules, first computed and then from the memo, against jsonschema on the entry.
    workers = doc.get("workers") if isinstance(doc, dict) else None
    memo: dict[Any, list[Any]] = {}
    for w in workers if isinstance(workers, list) else []:
        entry = parse(json.dumps(w).encode())  # as the located path reads an entry
        if isinstance(entry, Violation):
            continue
        expected = _errors(_entry_validator().iter_errors(entry))
        assert _errors(_entry_errors(entry, memo)) == expected
        assert _errors(_entry_errors(entry, memo)) == expected  # from the memo


def _one_by_one(entries: list[Any]) -> list[Any]:
    out = []
    for entry in entries:
        try:
            out.append(_ENTRY.decode(entry))
        except (msgspec.ValidationError, msgspec.DecodeError):
            out.append(None)
    return out


@settings(max_examples=150)
@given(mutated_bodies(), st.integers(1, 6))
def test_runs_of_entries_decode_as_the_entries_one_by_one(doc: Any, copies: int) -> None:
    # Runs decoded in one call, restarted after the entry msgspec names: the same as one by one.
    workers = doc.get("workers") if isinstance(doc, dict) else None
    if not isinstance(workers, list):
        return
    entries = _ENTRIES.decode(json.dumps(workers * copies).encode())
    assert _decode_entries(entries) == _one_by_one(entries)


def test_the_located_path_hands_over_what_only_the_whole_text_can_say() -> None:
    valid = _body([_worker(i) for i in range(3)])
    repeated = valid.replace(b'"world_size":2', b'"world_size":3,"world_size":2', 1)
    unknown_null = valid.replace(b'"world_size":2', b'"world_size":0,"x":null', 1)
    lone = valid.replace(b'"rl"', b'"\\ud800"', 1)
    for raw in (repeated, unknown_null, lone, b"[]", b'{"namespace":"d"}'):
        assert _located(raw) is None, raw
        assert check_body(raw) == _exhaustive_text(raw)[0]


@settings(max_examples=200)
@given(mutated_bodies())
@example(
    json.loads(_body([_worker(0), _worker(1), _worker(1, admin_base_url="http://10.1.0.9:9/e")]))
)
def test_located_path_agrees_with_the_exhaustive_path(doc: Any) -> None:
    raw = json.dumps(doc).encode()
    located = _located(raw)
    if located is not None:
        assert located == _exhaustive_text(raw)[0]


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
    slow = _exhaustive_text(raw)
    assert slow[0] == [], slow[0][:3]
    assert _fast(raw) == slow[1]


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
    expected = _exhaustive_text(raw)[0]
    typed = _typed_located(raw)
    if not expected:
        assert typed is None
        return
    assert check_body(raw) == expected
    if typed is None:  # only what the typed tier leaves to the other: an escaped quote, or
        # more than _ITEM_ERRORS item errors in one routes array
        assert b'\\"' in raw or raw.count(b'""') > 20
        return
    assert typed == expected


def test_defects_that_keep_the_json_types_take_the_typed_tier() -> None:
    # Its other tiers would give the same verdict at many times the price: the typed tier must
    # not hand these over (two transport keys, a float and a non-object are not its to judge).
    for name, change in ONE_DEFECT.items():
        if name in ("two transports", "instance_id as a float", "not an object"):
            continue
        workers = [_worker(i) for i in range(12)]
        workers[5] = _worker(5, **(change or {}))
        raw = _body(workers)
        assert _typed_located(raw) == _exhaustive_text(raw)[0], name


def test_the_typed_tier_refuses_a_schema_it_cannot_judge() -> None:
    # The typed tier reads its checks from the bundled schema at import; a keyword it has no check
    # for, or an unknown format, stops it rather than being skipped (so a schema change that adds a
    # rule cannot pass unjudged on this path).
    from prime_rl_dynamo import validate

    known = {"type": "string", "minLength": 1, "x-requirement": "WORKER-1", "description": "x"}
    assert [c.keyword for c in validate._checks(known)] == ["minLength"]
    for drift in ({"maxLength": 9}, {"format": "uri"}, {"multipleOf": 2}):
        with pytest.raises(ImportError, match="does not judge"):
            validate._checks({**known, **drift})
