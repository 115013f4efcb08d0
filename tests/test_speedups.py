"""The C accelerator of the fast path (prime_rl_dynamo/_speedups.c) against the Python rules it
stands in for: where it answers, it answers what ``validate._columns_hold`` does; where it may not
be sure, it answers None and the Python rules decide. Its URL matchers are held to the regular
expressions they spell, character class by character class."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from prime_rl_dynamo import validate
from prime_rl_dynamo.validate import (
    _CANONICAL_ADMIN_ONE,
    _DECODER,
    _SYSTEM_URL,
    _TYPED,
    _columns_hold,
    _exhaustive_text,
    _fast,
    _typed_flags,
    _typed_located,
    check_body,
)
from prime_rl_dynamo.violation import Violation, violation_of
from tests.test_validate_fastpath import mutated_bodies, valid_bodies
from tests.test_validate_located import _worker as located_worker
from tests.test_validate_located import typed_defective_bodies
from tools.bench.validation import make_body

C = validate._C_COLUMNS_HOLD
needs_c = pytest.mark.skipif(C is None, reason="the C accelerator is not built here")


def test_the_install_builds_the_accelerator() -> None:
    # make setup compiles it (hatch_build.py); a silent fall back to pure Python would only show
    # as a slower benchmark, so a checkout without it fails here unless asked to be pure.
    if os.environ.get("PRIME_RL_DYNAMO_PURE_PYTHON"):
        assert not validate.ACCELERATED
    else:
        assert validate.ACCELERATED, "prime_rl_dynamo/_speedups.c was not compiled: make setup"


def test_pure_python_is_one_variable_away(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRIME_RL_DYNAMO_PURE_PYTHON", "1")
    pure = validate._accelerator()
    assert pure.columns_hold is None and pure.typed_flags is None
    assert pure.property_violations is None and pure.violation is violation_of
    assert pure.label is validate._label_of
    assert pure.quotes(b'"a" "b"') == 4 and pure.scan is validate._scan


def _python(workers: tuple[Any, ...], scope: str) -> int | None:
    return _columns_hold(workers, scope)


def _c_answer(raw: bytes) -> Any:
    """The accelerator's own answer: a count, (a count, the admin URLs outside LIST-6's form
    left to validate._settled), or None."""
    snapshot = _DECODER.decode(raw)
    assert C is not None
    return C(snapshot.workers, snapshot.namespace)


def _both(raw: bytes) -> tuple[int | None, int | None] | None:
    """(the accelerator's count, settled by validate._settled when it leaves admin URLs to it;
    the Python rules' count), or None when the body does not decode."""
    try:
        snapshot = _DECODER.decode(raw)
    except Exception:
        return None
    c = _c_answer(raw)
    if type(c) is tuple:
        assert c[1], "a settled answer names the admin URLs it leaves"
        c = validate._settled(c, snapshot.workers)
    return c, _python(snapshot.workers, snapshot.namespace)


@needs_c
@settings(max_examples=300, deadline=None)
@given(st.one_of(valid_bodies(unknown_fields=False), mutated_bodies()))
def test_the_accelerator_answers_what_the_python_rules_answer_or_none(doc: Any) -> None:
    pair = _both(json.dumps(doc).encode())
    if pair is None:
        return
    c, python = pair
    assert c is None or c == python, (c, python)
    if python is None:
        assert c is None
    if type(_c_answer(json.dumps(doc).encode())) is tuple:  # settled in Python: the same answer
        assert c == python


@needs_c
@pytest.mark.parametrize("workers", [1, 2, 64, 1024])
def test_dynamo_shaped_listings_are_decided_in_c(workers: int) -> None:
    # Canonical admin URLs, one namespace, ASCII names: what Dynamo writes, and what must not
    # need the Python rules (that is the accelerator's point).
    raw = make_body(workers)
    c, python = _both(raw) or (None, None)
    assert c is not None and c == python
    assert _fast(raw) is not None


def _worker(i: int, **changes: Any) -> dict[str, Any]:
    """test_validate_located's worker, as a backend with its own admin path."""
    return located_worker(
        i,
        **{
            "component": "backend",
            "instance_id": 10 + i,
            "request_plane_url": "dyn://dynamo.backend.rl",
            "admin_base_url": f"http://10.1.0.{i}:9000/engine/{i}",
            **changes,
        },
    )


def _body(*workers: dict[str, Any], scope: str = "dynamo") -> bytes:
    return json.dumps(
        {"protocol_version": 1, "namespace": scope, "workers": list(workers)}
    ).encode()


#: One rule broken each: the accelerator must not answer, and the Python rules refuse.
BROKEN: dict[str, bytes] = {
    "identities equal": _body(_worker(0), _worker(1, instance_id=10)),
    "instance_ids decreasing": _body(_worker(0, instance_id=11), _worker(1, instance_id=10)),
    "components decreasing": _body(
        _worker(0, component="z", request_plane_url="dyn://dynamo.z.rl"), _worker(1)
    ),
    "namespaces decreasing": _body(
        _worker(0, namespace="dynamo2", request_plane_url="dyn://dynamo2.backend.rl"), _worker(1)
    ),
    "beyond u64": _body(_worker(0, instance_id=2**64)),
    "request_plane_url": _body(_worker(0, request_plane_url="dyn://dynamo.backend.rl2")),
    "request_plane_url, first separator": _body(
        _worker(0, request_plane_url="dyn://dynamo:backend.rl")
    ),
    "request_plane_url, second separator": _body(
        _worker(0, request_plane_url="dyn://dynamo.backend:rl")
    ),
    "request_plane_url one short": _body(_worker(0, request_plane_url="dyn://dynamo.backend.r")),
    "out of scope": _body(_worker(0), scope="dynamo-other"),
    "routes unsorted": _body(_worker(0, routes=["b", "a"])),
    "routes repeated": _body(_worker(0, routes=["a", "a"])),
    "error worker with routes": _body(
        _worker(0, error="boom", admin_base_url=None, world_size=None)
    ),
    "error worker with world_size": _body(_worker(0, error="boom", routes=[], admin_base_url=None)),
    "error worker with admin": _body(_worker(0, error="boom", routes=[], world_size=None)),
    "admin without world_size": _body(_worker(0, world_size=None)),
    "admin repeated": _body(_worker(0), _worker(1, admin_base_url="http://10.1.0.0:9000/engine/0")),
    "system_url": _body(_worker(0, system_url="ftp://x")),
    "empty transport": _body(_worker(0, transport={})),
}

#: Valid, but a shape the accelerator leaves to the Python rules (they accept it).
PYTHON_ONLY: dict[str, bytes] = {
    "non-ASCII identity": _body(
        _worker(0, endpoint="é", request_plane_url="dyn://dynamo.backend.é")
    ),
}

#: Admin URLs outside LIST-6's form, in the last of two workers: every other rule is judged in C,
#: and these URLs' WORKER-8 and LIST-6 by validate._settled. Valid ones first, then broken ones.
SETTLED_VALID = {
    "admin scheme in upper case": "HTTP://10.1.0.0:9000/e",
    "admin without a port": "http://10.1.0.0/e",
    "admin with a trailing slash": "http://a:9/e/",
    "admin with a non-ASCII path": "http://a:9/é",
}
SETTLED_BROKEN = {
    "admin of another scheme": "ftp://bad",
    "admin with port 0": "HTTP://a:0/e",
    "admin the first's endpoint in upper case": "HTTP://10.1.0.0:9000/engine/0",
    "admin with user info": "http://u@a:9/e",
}


def _settled_body(url: str) -> bytes:
    return _body(_worker(0), _worker(1, admin_base_url=url))


@needs_c
@pytest.mark.parametrize("name", sorted(SETTLED_VALID) + sorted(SETTLED_BROKEN))
def test_an_admin_url_outside_list6s_form_is_settled_as_the_python_rules_judge(name: str) -> None:
    raw = _settled_body({**SETTLED_VALID, **SETTLED_BROKEN}[name])
    answer = _c_answer(raw)
    assert type(answer) is tuple and answer[1] == [1], "left to validate._settled: only that URL"
    c, python = _both(raw) or (0, 0)
    assert c == python
    if name in SETTLED_VALID:
        assert python is not None and check_body(raw) == [] and _fast(raw) is not None
    else:
        assert python is None and check_body(raw) != []


@needs_c
@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_rule_is_never_answered_in_c(name: str) -> None:
    pair = _both(BROKEN[name])
    assert pair == (None, None), "the body must decode and the Python rules refuse it"
    assert check_body(BROKEN[name]) != []


@needs_c
@pytest.mark.parametrize("name", sorted(PYTHON_ONLY))
def test_a_shape_the_accelerator_leaves_is_judged_in_python(name: str) -> None:
    c, python = _both(PYTHON_ONLY[name]) or (0, None)
    assert c is None and python is not None
    assert _fast(PYTHON_ONLY[name]) is not None and check_body(PYTHON_ONLY[name]) == []


@needs_c
def test_a_valid_body_of_each_kind_is_answered_in_c() -> None:
    # The counterpart of the table above: the same template, valid, is the accelerator's.
    for raw in (
        _body(_worker(0), _worker(1)),
        _body(_worker(0, error="boom", routes=[], admin_base_url=None, world_size=None)),
        _body(_worker(0, system_url="HTTPS://h:1/x?y#z", model="m")),
        _body(_worker(0, namespace="dynamo-a", request_plane_url="dyn://dynamo-a.backend.rl")),
        _body(_worker(0, admin_base_url="https://a-1.b_2.example:65535/p/q")),
    ):
        c, python = _both(raw) or (None, None)
        assert c is not None and c == python
        assert check_body(raw) == []


URL_TOKENS = ["http", "https", "HTTP", "Https", "://", "xn--", "a", "z", "Z", "0", "1", "9",
              "25", "255", "256", "300", "65535", "65536", "99999", "00", ".", ":", "/", "-",
              "_", "%", "#", "?", "@", " ", "\x7f", "\t", "é", "~", '"', "!"]  # fmt: skip
url_texts = st.lists(st.sampled_from(URL_TOKENS), max_size=14).map("".join)
canonical = st.from_regex(validate._CANONICAL_ADMIN, fullmatch=True).filter(lambda u: "\n" not in u)


def _admin_decided(url: str) -> bool:
    """Whether the accelerator holds the admin URL to be in LIST-6's form (a count, with no URL
    left to validate._settled)."""
    return type(_c_answer(_body(_worker(0, admin_base_url=url)))) is int


@needs_c
@settings(max_examples=400, deadline=None)
@given(st.one_of(url_texts, canonical, url_texts.map(lambda t: "http://" + t)))
@example("http://10.1.0.0:9000/engine/0")
@example("http://01.1.0.0:9000")
@example("http://1.2.3:9")
@example("http://10.1.0.255:9")
@example("http://10.1.0.256:9")
@example("http://10.1.300.1:9")
@example("http://a.:9")
@example("http://xn--a:9")
@example("http://a.xn--b.c:9")
@example("http://123:9")
@example("http://a:09")
@example("http://a:65536")
@example("http://a:9/")
@example("http://a:9/%41")
def test_the_admin_matcher_is_the_canonical_pattern(url: str) -> None:
    assert _admin_decided(url) == (_CANONICAL_ADMIN_ONE(url) is not None), url


@needs_c
@settings(max_examples=400, deadline=None)
@given(st.one_of(url_texts, url_texts.map(lambda t: "http://" + t)))
@example("HtTpS://h")
@example("http://:9")
@example("http:///x")
@example("http://h\x85")
@example("http://h/ x")
@example("https:/h")
def test_the_system_url_matcher_is_the_schemas_pattern(url: str) -> None:
    pair = _both(_body(_worker(0, system_url=url)))
    assert pair is not None
    assert (pair[0] is not None) == (_SYSTEM_URL(url) is not None), url


@needs_c
@given(st.binary(max_size=300), st.integers(0, 40))
def test_quotes_counts_what_bytes_count_counts(data: bytes, quotes: int) -> None:
    raw = data + b'"' * quotes + data[::-1]
    assert validate._quotes(raw) == raw.count(b'"')


@needs_c
@pytest.mark.parametrize("size", [4079, 4080, 4081, 65536 + 3])
def test_quotes_counts_long_runs_of_quotes(size: int) -> None:
    # 16 bytes a step, summed every 255 steps (4,080 bytes): runs that fill every lane.
    for raw in (b'"' * size, b'a"' * (size // 2), make_body(64)[:size]):
        assert validate._quotes(raw) == raw.count(b'"')


# --------------------------------------------------------------------------------------------
# The typed tier: the accelerator flags the members of the decoded _TypedWorkers as
# validate._typed_flags does, when it is sure the listing-wide rules hold.


_ACCELERATED_NAMES = ("_C_COLUMNS_HOLD", "_C_TYPED_FLAGS", "_property_violations_of",
                      "_violation", "_worker_label")  # fmt: skip


@contextmanager
def _without_accelerator() -> Iterator[None]:
    """validate.py as an install without the C accelerator runs it (the scan aside)."""
    saved = [getattr(validate, name) for name in _ACCELERATED_NAMES]
    pure = (None, None, validate._property_violations, violation_of, validate._label_of)
    for name, value in zip(_ACCELERATED_NAMES, pure, strict=True):
        setattr(validate, name, value)
    try:
        yield
    finally:
        for name, value in zip(_ACCELERATED_NAMES, saved, strict=True):
            setattr(validate, name, value)


def _with_last(workers: int, name: str, value: Any) -> bytes:
    doc = json.loads(make_body(workers))
    if value is None:
        del doc["workers"][-1][name]
    else:
        doc["workers"][-1][name] = value
    return json.dumps(doc).encode()


#: One member's defect each, in the last of Dynamo-shaped workers: the order, transports and admin
#: URLs hold, so the accelerator flags the members as the Python rules would.
ENTRY_DEFECTS: dict[str, tuple[str, Any]] = {
    "world_size 0": ("world_size", 0),
    "world_size beyond u32": ("world_size", 2**32),
    "world_size negative": ("world_size", -1),
    "world_size missing": ("world_size", None),
    "model empty": ("model", ""),
    "first route empty": ("routes", ["", "resume_generation"]),
    "the one route empty": ("routes", [""]),
    "routes reversed": ("routes", ["resume_generation", "pause_generation"]),
    "routes repeated": ("routes", ["a", "a"]),
    "request_plane_url": ("request_plane_url", "dyn://dynamo.backend.other"),
    "request_plane_url without dyn://": ("request_plane_url", "http://x"),
    "system_url": ("system_url", "ftp://x"),
    "system_url with a space": ("system_url", "http://a b"),
    "error worker with routes": ("error", "boom"),
    "error empty": ("error", ""),
    "namespace out of scope": ("namespace", "zzz"),
}

T = validate._C_TYPED_FLAGS


def _flags(raw: bytes) -> tuple[Any, Any]:
    """(the accelerator's typed flags, the Python rules' (flags, canonical) or None)."""
    typed = _TYPED.decode(raw)
    assert T is not None
    columns = tuple(zip(*map(validate._ROW, typed.workers), strict=True))
    return T(typed.workers, typed.namespace), _typed_flags(
        validate._quotes(raw), columns, typed.namespace
    )


@needs_c
@pytest.mark.parametrize("workers", [1, 3, 64])
@pytest.mark.parametrize("name", sorted(ENTRY_DEFECTS))
def test_an_entry_defect_is_flagged_in_c_as_in_python(name: str, workers: int) -> None:
    member, value = ENTRY_DEFECTS[name]
    if member == "namespace" and workers > 1:
        return  # out of order then: the Python rules' (LIST-1)
    raw = _with_last(workers, member, value)
    c, python = _flags(raw)
    assert c is not None, "not flagged in C"
    strings, flagged = c
    assert validate._quotes(raw) == 2 * strings
    assert python == (flagged, True)
    expected = _exhaustive_text(raw)[0]
    assert expected and _typed_located(raw) == expected
    with _without_accelerator():
        assert _typed_located(raw) == expected


@needs_c
@pytest.mark.parametrize("name", sorted(BROKEN))
def test_typed_workers_are_left_to_python_or_flagged_alike(name: str) -> None:
    # The listing-wide rules (order, one transport, admins) are never answered in C; a broken
    # per-entry rule is flagged as the Python rules flag it.
    c, python = _flags(BROKEN[name])
    listing_wide = ("identities", "decreasing", "admin repeated", "empty transport", "u64")
    if any(word in name for word in listing_wide):
        assert c is None
    else:
        assert c is not None and python == (c[1], True) and c[1]


@needs_c
@settings(max_examples=300, deadline=None)
@given(st.one_of(typed_defective_bodies(), mutated_bodies().map(lambda d: json.dumps(d).encode())))
def test_the_accelerators_typed_flags_are_the_python_flags(raw: bytes) -> None:
    try:
        typed = _TYPED.decode(raw)
    except Exception:
        return
    if not typed.workers:
        return
    c, python = _flags(raw)
    if c is None:
        return
    strings, flagged = c
    if validate._quotes(raw) == 2 * strings:
        assert python is not None and _agree(flagged, python)
    else:  # a member the models do not hold: the Python rules see it too
        assert python is None


def _agree(c_flagged: dict[str, list[int]], python: tuple[dict[str, list[int]], bool]) -> bool:
    """The accelerator's flags are the Python rules': the same members, but that C flags every
    admin URL outside LIST-6's form (its pattern, host and key judged in Python), where the
    Python rules flag those that break the pattern or have no usable host, and say whether all
    are in that form."""
    python_flagged, canonical = python
    c_admins = c_flagged.get("admin_base_url", [])
    rest = {k: v for k, v in c_flagged.items() if k != "admin_base_url"}
    python_rest = {k: v for k, v in python_flagged.items() if k != "admin_base_url"}
    python_admins = python_flagged.get("admin_base_url", [])
    return (
        rest == python_rest
        and canonical == (not c_admins)
        and set(python_admins) <= set(c_admins)
        and sorted(c_admins) == c_admins
    )


@needs_c
@settings(max_examples=300, deadline=None)
@given(st.one_of(typed_defective_bodies(), mutated_bodies().map(lambda d: json.dumps(d).encode())))
def test_the_typed_tier_gives_one_verdict_with_or_without_the_accelerator(raw: bytes) -> None:
    accelerated = _typed_located(raw)
    with _without_accelerator():
        assert _typed_located(raw) == accelerated


SCAN_TOKENS = [b"null", b"nul", b"nnull", b":", b"[", b",", b" ", b"\t", b"\r", b"\n", b'"', b"a",
               b"system_routes", b"system_route", b"weight_transfer_backend",
               b"weight_transfer_backen", b"{", b"}", b"\\"]  # fmt: skip


@needs_c
@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(SCAN_TOKENS), max_size=24).map(b"".join))
@example(b":null")
@example(b"[ \t\r\nnull")
@example(b"x null")
@example(b"null")
@example(b',"system_routes"')
def test_scan_is_the_located_paths_look_at_the_text(raw: bytes) -> None:
    assert validate._located_scan is not validate._scan
    assert validate._located_scan(raw) == validate._scan(raw)


# --- the violations the typed tier builds: property_violations, violation, label ---------------


@needs_c
@settings(max_examples=300, deadline=None)
@given(typed_defective_bodies())
def test_the_accelerators_property_violations_are_the_pythons(raw: bytes) -> None:
    # the Python rules' flags, so that every flagged member is judged by both
    typed = _TYPED.decode(raw)
    columns = tuple(zip(*map(validate._ROW, typed.workers), strict=True))
    flags = _typed_flags(validate._quotes(raw), columns, typed.namespace)
    if flags is None:
        return
    flagged = flags[0]
    judges = validate._PROPERTY_JUDGES
    c_labels: dict[int, str] = {}
    python_labels: dict[int, str] = {}
    try:
        with _without_accelerator():
            python = validate._property_violations(typed.workers, flagged, judges, python_labels)
    except validate._Fallback:  # too many item errors: the C function gives up alike
        with pytest.raises(validate._Fallback):
            validate._C_PROPERTY_VIOLATIONS(typed.workers, flagged, judges, c_labels)
        return
    c = validate._C_PROPERTY_VIOLATIONS(typed.workers, flagged, judges, c_labels)
    assert c == python and c_labels == python_labels
    assert all(type(v) is Violation for _, v in c[0])


INTS = [-(2**70), -(2**63) - 1, -(2**63), -3, -1, 0, 1, 2**32 - 1, 2**32, 2**63, 2**64 - 1, 2**64,
        2**70]  # fmt: skip


@needs_c
@pytest.mark.parametrize("value", INTS)
@pytest.mark.parametrize("name", ["world_size", "instance_id"])
def test_an_int_is_judged_in_c_as_by_the_schemas_checks(name: str, value: int) -> None:
    (judge,) = [j for j in validate._PROPERTY_JUDGES if j[0] == name]
    assert judge[3] is not None, "judged in Python: the C bounds are not exercised"
    typed = _TYPED.decode(make_body(1))
    worker = msgspec.structs.replace(typed.workers[0], **{name: value})
    labels: dict[int, str] = {}
    c = validate._C_PROPERTY_VIOLATIONS((worker,), {name: [0]}, (judge,), labels)
    python = validate._property_violations((worker,), {name: [0]}, (judge,), {})
    assert c == python
    assert bool(c[0]) == (judge[2](value) != [])  # a value out of bounds is named, once


@needs_c
@settings(max_examples=200, deadline=None)
@given(
    st.text(min_size=0, max_size=8),
    st.text(min_size=0, max_size=8),
    st.text(min_size=0, max_size=8),
    st.one_of(st.integers(), st.sampled_from(INTS)),
)
@example("dynamo", "backend", "generate", 2**64 - 1)
@example("d\u00e9", "\U0001f600", "", -1)
def test_the_accelerators_label_is_the_pythons(ns: str, comp: str, ep: str, iid: int) -> None:
    typed = _TYPED.decode(make_body(1))
    worker = msgspec.structs.replace(
        typed.workers[0], namespace=ns, component=comp, endpoint=ep, instance_id=iid
    )
    assert validate._worker_label(worker) == validate._label_of(worker)


@needs_c
def test_the_accelerators_label_refuses_what_is_not_a_decoded_worker() -> None:
    with pytest.raises(TypeError):
        validate._worker_label(object())


@needs_c
@given(st.lists(st.one_of(st.none(), st.text(max_size=12)), min_size=6, max_size=6))
def test_the_accelerators_violation_is_violation_of(fields: list[str | None]) -> None:
    requirement, pointer, message = (f or "" for f in fields[:3])
    worker, expected, found = fields[3:]
    c = validate._violation(requirement, pointer, message, worker, expected, found)
    python = violation_of(requirement, pointer, message, worker, expected, found)
    assert type(c) is Violation and c == python and hash(c) == hash(python)
    assert str(c) == str(python) and c.level == "MUST"


@needs_c
@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        url_texts,
        url_texts.map(lambda t: "http://" + t),
        st.sampled_from(sorted([*SETTLED_BROKEN.values(), *SETTLED_VALID.values()])),
    ),
    st.integers(0, 2),
)
@example("HTTP://10.1.0.0:9000/engine/0", 0)
@example("http://a:0/e", 1)
@example("ftp://bad", 2)
def test_the_fast_paths_admin_verdict_is_the_exhaustive_paths(url: str, where: int) -> None:
    # Every rule but WORKER-8 and LIST-6 of one admin URL outside LIST-6's form holds: the fast
    # path names that URL's violations itself, as the exhaustive path (jsonschema) does.
    workers = [_worker(i) for i in range(3)]
    workers[where]["admin_base_url"] = url
    raw = _body(*workers)
    try:
        answer = _c_answer(raw)
    except Exception:
        return  # not decoded: another road
    expected = _exhaustive_text(raw)[0]
    found = validate._fast_verdict(raw)[2]
    if type(answer) is tuple and validate._quotes(raw) == 2 * answer[0] and expected:
        assert found is not None, "left to the located path"
    if found is not None:
        assert found[0] == expected
    assert check_body(raw) == expected
