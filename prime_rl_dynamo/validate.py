"""The discovery-body validator: bytes or parsed JSON -> an immutable typed Snapshot, or every violation.

Three roads, one verdict. The fast path decodes once into the generated msgspec models (types
checked in the same C pass) and judges what msgspec cannot express over whole columns of the
decoded workers. When that fails, the located path first decodes the whole body once into the
same models without their value constraints (the JSON types alone): when that holds every member,
the columns show which entries may break a rule and each of their violations is built straight
from the schema's keywords, with no strict parse and no jsonschema. Otherwise it decodes the
entries in runs, so only the defective workers are parsed strictly and judged, property by
property, each distinct defect by jsonschema once; the rest are known good. Anything either
cannot vouch for goes to the exhaustive path: the strict text parser (``_strict_json``), jsonschema
on the bundled schema (each error mapped to the ``x-requirement`` of its subschema) and the
semantic rules (``SEMANTIC_RULES``, one function per requirement ID). Every road lists EVERY
violation with its requirement ID, JSON pointer, worker label and expected/found. Hostile bodies
cost time linear in their size, and every message quotes at most a clipped excerpt.
"""

from __future__ import annotations

import dataclasses
import json
import operator
import os
import re
import sys
import types
import typing
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cache, cached_property, partial
from itertools import islice
from typing import Any

import msgspec

from prime_rl_dynamo._models import PATTERNS, Snapshot, Transport, Worker
from prime_rl_dynamo._strict_json import MAX_DEPTH, BigInt, Number, Object, depth, parse, too_deep
from prime_rl_dynamo._urls import admin_key, url_host_problem
from prime_rl_dynamo.errors import DialectError, ProtocolError
from prime_rl_dynamo.resources import load_json
from prime_rl_dynamo.text import clip
from prime_rl_dynamo.variants import (
    detect_dialect,
    dialect_violations,
    may_be_variant,
    version_violations,
)
from prime_rl_dynamo.violation import Violation, violation_of
from prime_rl_dynamo.wire import (
    U64_MAX,
    WORKER_FIELDS,
    WorkerId,
    entry_label,
    request_plane_url,
)

__all__ = [
    "MAX_DEPTH",
    "PATTERNS",
    "SCHEMA_NAME",
    "SEMANTIC_RULES",
    "Snapshot",
    "Transport",
    "Worker",
    "check_body",
    "detect_dialect",
    "json_pointer",
    "validate_body",
]

SCHEMA_NAME = "rl-workers.v1.schema.json"

# Item errors of one routes array reported one by one; the rest are counted in the last message.
_ITEM_ERRORS = 20

# A JSON null *value* is always preceded by ':', '[' or ',' (plus whitespace). msgspec's Optional
# fields take null for "absent", so when such bytes occur the body is decoded once more into probe
# models whose optional fields refuse null (UNSET is their absent); only a null in a known optional
# field then sends the body down the exhaustive path. Nulls in unknown fields or inside strings
# cost one cheap extra decode, never correctness.
_NULL_VALUE = re.compile(rb"[:\[,][ \t\r\n]*null")

_DECODER = msgspec.json.Decoder(Snapshot)
#: What a decode raises for a text its model refuses (one tuple: the failure path names it often).
_DECODE_ERRORS = (msgspec.ValidationError, msgspec.DecodeError, RecursionError)
# The located path: the top level with its values undecoded, the workers array entry by entry.
_TOP = msgspec.json.Decoder(dict[str, msgspec.Raw])
_ENTRIES = msgspec.json.Decoder(list[msgspec.Raw])
_ENTRY = msgspec.json.Decoder(Worker)
_WORKERS = msgspec.json.Decoder(list[Worker])
_AT_INDEX = re.compile(r"\$\[([0-9]+)\]")  # msgspec's path of the entry that failed


def _or_unset(kind: Any) -> Any:
    return typing.Union[kind, msgspec.UnsetType]  # noqa: UP007 (built at runtime from objects)


def _is_struct(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, msgspec.Struct)


def _probe_model(cls: Any) -> Any:
    """A Struct with ``cls``'s optional and nested fields, each refusing null (absent = UNSET)."""
    fields: list[tuple[str, Any, Any]] = []
    for f in msgspec.structs.fields(cls):
        args = [a for a in typing.get_args(f.type) if a is not type(None)]
        if f.default is None and args:  # optional: X | None -> X | UnsetType
            fields.append((f.name, _or_unset(args[0]), msgspec.UNSET))
        elif _is_struct(f.type):
            fields.append((f.name, _or_unset(_probe_model(f.type)), msgspec.UNSET))
        elif typing.get_origin(f.type) is tuple and args and _is_struct(args[0]):
            items = tuple.__class_getitem__((_probe_model(args[0]), ...))
            fields.append((f.name, _or_unset(items), msgspec.UNSET))
    return msgspec.defstruct(f"NullProbe{cls.__name__}", fields, kw_only=True, gc=False)


_NULL_PROBE = msgspec.json.Decoder(_probe_model(Snapshot))

# The fast path checks every schema pattern itself (msgspec would run one re.search per value at
# ~2 us each). request_plane_url's pattern is implied by the LIST-3 equality check it must pass.
_FAST_PATTERNS = {"Worker.request_plane_url", "Worker.system_url", "Worker.admin_base_url"}
if set(PATTERNS) != _FAST_PATTERNS:  # a new pattern in the schema must not be skipped silently
    raise ImportError(
        f"validate.py checks patterns {sorted(_FAST_PATTERNS)}, the schema has {sorted(PATTERNS)}"
    )
_SYSTEM_URL = re.compile(PATTERNS["Worker.system_url"]).search
_ADMIN_BASE_URL = re.compile(PATTERNS["Worker.admin_base_url"]).search
# Admin URLs already in the form LIST-6 compares (lower case, explicit port, no %, no trailing
# slash, no punycode, an IPv4 address or a name) and within the schema's pattern: Dynamo writes
# these, and then the string is the key. One match over all of them, joined by newlines, costs
# what the pattern alone would (a per-URL call is most of the price of a short match).
_OCTET = r"(?:[1-9]?[0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5])"  # short ones first: fewer failed branches
_CANONICAL_ADMIN = (
    r"https?://(?:(?:" + _OCTET + r"\.){3}" + _OCTET
    + r"|(?:(?!xn--)[a-z0-9_-]+\.)*(?!xn--)[0-9]*[a-z_-][a-z0-9_-]*)"
    r":(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
    r"(?:/[\x21\x22\x24\x26-\x3e\x40-\x7e]*[\x21\x22\x24\x26-\x2e\x30-\x3e\x40-\x7e])?"
)  # fmt: skip
# Possessive: each round ends at the newline no URL line holds, so giving one back never helps.
_CANONICAL_ADMINS = re.compile(r"(?:" + _CANONICAL_ADMIN + r"\n)*+\Z").match
_CANONICAL_ADMIN_ONE = re.compile(_CANONICAL_ADMIN + r"\Z").match  # one URL: no line to add

# A Worker's fields in declaration order: msgspec.structs.astuple gives a row, zip(*rows) columns.
_WORKER_COLUMNS = tuple(f.name for f in msgspec.structs.fields(Worker))
if _WORKER_COLUMNS[:4] != WorkerId._fields or len(_WORKER_COLUMNS) != 12:
    raise ImportError(f"validate.py reads Worker rows as {_WORKER_COLUMNS}: regenerate or adapt")
_ROW = msgspec.structs.astuple
_NO_TRANSPORT = (None, None, None)
_COUNT_NONE = operator.methodcaller("count", None)
_TRANSPORT = operator.attrgetter("transport")
_EMPTY_TRANSPORT = Transport()
_LT = operator.lt
_EQ = operator.eq
# Component runs spelt one by one in _planes_match before the general check takes over.
_RUNS = 64
_IDENTITY = operator.attrgetter(*WorkerId._fields)
if request_plane_url("n", "c", "e") != "dyn://n.c.e":  # _entries_hold spells it inline
    raise ImportError("validate.py's request_plane_url form disagrees with wire.py")


# --------------------------------------------------------------------------------------------
# Public API


def validate_body(data: bytes | bytearray | memoryview | str | Mapping[str, Any]) -> Snapshot:
    """Parse and validate a discovery body; raise ProtocolError (DialectError) listing every violation."""
    if type(data) is bytes:  # what a client hands over: a body the fast path proves needs no more
        snapshot, clean, found = _fast_verdict(data)
        if clean:
            return typing.cast(Snapshot, snapshot)
        violations, snapshot = found or _after_fast(data, snapshot, clean)
    else:
        violations, snapshot = _check(data)
    if snapshot is not None:
        return snapshot
    body = bytes(data) if isinstance(data, bytes | bytearray | memoryview) else None
    ids = list(dict.fromkeys(v.requirement for v in violations))
    more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
    message = (
        f"discovery body breaks {', '.join(ids)}: {violations[0]}{more}"
        if violations
        else "discovery body refused"
    )
    if any(v.requirement == "DIALECT-1" for v in violations):
        raise DialectError(message, violations=violations, body=body, requirement="DIALECT-1")
    raise ProtocolError(message, violations=violations, body=body)


def check_body(data: object) -> list[Violation]:
    """Every violation of the discovery contract in ``data`` (empty when valid); never raises for content."""
    if type(data) is bytes:  # as validate_body: the fast path's verdict first, one call less
        snapshot, clean, found = _fast_verdict(data)
        return [] if clean else (found or _after_fast(data, snapshot, clean))[0]
    return _check(data)[0]


def json_pointer(parts: Iterable[str | int]) -> str:
    """RFC 6901 pointer of a path (``~`` and ``/`` escaped); ``""`` is the whole document."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


# --------------------------------------------------------------------------------------------
# Dispatch


def _check(data: object) -> tuple[list[Violation], Snapshot | None]:
    raw: bytes | None = None
    if type(data) is bytes:  # what a client hands over: no conversion, no isinstance of a union
        raw = data
    elif isinstance(data, bytes | bytearray | memoryview):
        raw = bytes(data)
    elif isinstance(data, str):
        try:
            raw = data.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: only the exhaustive path can say more
            return _exhaustive_text(data)
    elif isinstance(data, Mapping):
        try:
            raw = json.dumps(data, allow_nan=False).encode("ascii")
        except (TypeError, ValueError):  # not JSON-native values: let the schema name them
            return _exhaustive(data)
    else:
        return _exhaustive(data)
    snapshot, clean, found = _fast_verdict(raw)
    return found or _after_fast(raw, snapshot, clean)


def _after_fast(
    raw: bytes, snapshot: Snapshot | None, clean: bool
) -> tuple[list[Violation], Snapshot | None]:
    """The verdict on ``raw`` given the fast path's (``_fast_verdict``)."""
    if snapshot is not None and (clean or not may_be_variant(raw)):
        return [], snapshot
    if snapshot is None:
        located = _located(raw)
        if located is not None:
            return located, None
    return _exhaustive_text(raw)


# --------------------------------------------------------------------------------------------
# Fast path


def _fast(raw: bytes) -> Snapshot | None:
    """The snapshot if ``raw`` is certainly valid, else None (then another path decides)."""
    return _fast_verdict(raw)[0]


_Found = tuple[list[Violation], None] | None
_NOT_FAST: tuple[None, bool, _Found] = (None, False, None)


def _fast_verdict(raw: bytes) -> tuple[Snapshot | None, bool, _Found]:
    """(the snapshot if ``raw`` is certainly valid, else None; whether the text is proven to hold
    nothing but the snapshot's strings: then it names no member the snapshot lacks, and no variant;
    the verdict when the fast path found every violation itself, else None)."""
    try:
        snapshot = _DECODER.decode(raw)
    except _DECODE_ERRORS:
        return _NOT_FAST
    workers = snapshot.workers
    # The C accelerator's answer when it is sure every rule holds (but for admin URLs outside
    # LIST-6's form, which _settled judges); else the Python rules decide.
    strings = _C_COLUMNS_HOLD(workers, snapshot.namespace) if _C_COLUMNS_HOLD else None
    if type(strings) is tuple:
        settled = _settled(strings, workers)
        if settled is None:  # only admin URLs outside LIST-6's form may be wrong: when the text
            # holds nothing but the snapshot, their violations are all there is
            found = (
                _admin_violations(workers, strings[1], snapshot.namespace)
                if _quotes(raw) == 2 * strings[0]
                else None
            )
            return (None, False, (found, None)) if found else _NOT_FAST
        strings = settled
    elif strings is None:
        strings = (
            _one_holds(workers[0], snapshot.namespace)
            if len(workers) == 1  # one call less: most of one worker's price is fixed
            else _columns_hold(workers, snapshot.namespace)
        )
        if strings is None:
            return _NOT_FAST
    # msgspec checks UTF-8, escapes and depth only in what it decodes, takes null for an absent
    # optional field and lets a repeated member win silently. Every string the snapshot counts is
    # one of the text's (each transport names a key: _columns_hold checked it), so when the text
    # holds exactly as many, there is no other member (unknown, repeated or null) to worry about.
    if _quotes(raw) == 2 * strings:
        return snapshot, True, None
    # Otherwise (unknown members, a null, escaped quotes) the null probe and one parse settle it.
    try:
        if b"null" in raw and _NULL_VALUE.search(raw):
            _NULL_PROBE.decode(raw)  # raises when a known optional field holds null
    except _DECODE_ERRORS:
        return _NOT_FAST
    transports = list(map(_ROW, map(_TRANSPORT, workers)))
    if sum(map(_COUNT_NONE, transports)) != 2 * len(workers):
        return _NOT_FAST  # exactly one key each: none is empty, so 2 of 3 absent in every one
    parsed = parse(raw)
    if isinstance(parsed, Violation) or next(_repeated_members(parsed), None) is not None:
        return _NOT_FAST
    return snapshot, False, None


def _settled(answer: tuple[int, list[int]], workers: Sequence[Any]) -> int | None:
    """The C accelerator's count when every rule held but WORKER-8 and LIST-6 of the admin URLs
    at ``answer[1]`` (not in LIST-6's form: the others are, each its own key, none twice): the
    count when those URLs hold the pattern and have a usable host, and their keys are new."""
    strings, others = answer
    urls = [workers[i].admin_base_url for i in others]
    if not all(map(_ADMIN_BASE_URL, urls)) or any(map(url_host_problem, urls)):
        return None
    keys = set(map(admin_key, urls))
    if len(keys) != len(urls):
        return None
    apart = set(others)
    listed = (w.admin_base_url for i, w in enumerate(workers) if i not in apart)
    return strings if keys.isdisjoint(listed) else None


def _admin_violations(workers: tuple[Any, ...], others: list[int], scope: str) -> list[Violation]:
    """Every violation of a listing whose every rule holds but WORKER-8 and LIST-6 of the admin
    URLs at ``others`` (outside LIST-6's form; the others are in it, none twice), in the body's
    order: those URLs judged by the schema's pattern, then their hosts and keys."""
    labels: dict[int, str] = {}
    keyed, bad = _property_violations_of(
        workers, {"admin_base_url": others}, _PROPERTY_JUDGES, labels
    )
    keyed += _other_admins(workers, others, bad, labels, scope)
    return _in_order(keyed) or []


def _other_admins(
    workers: tuple[Any, ...],
    others: list[int],
    bad: set[tuple[int, str]],
    labels: dict[int, str],
    scope: str,
) -> _Keyed:
    """LIST-6 and WORKER-8's host, keyed, for the admin URLs at ``others`` (outside LIST-6's
    form) that the schema did not refuse (``bad``); every other URL is in that form, none twice."""
    if all((i, "admin_base_url") in bad for i in others):
        return []
    urls = [w.admin_base_url for w in workers]
    listing = _Listing(list(workers), [], bad, scope, labels=dict(labels))
    return [(_entry_sort_key(v.pointer), v)
            for v in _listing_wide(listing, None, urls, False, set(others))]  # fmt: skip


def _columns_hold(workers: tuple[Worker, ...], scope: str) -> int | None:
    """What msgspec cannot express, judged over whole columns of the decoded workers in C calls
    (a Python loop per worker would cost more than the decode): a transport key in each, the
    error-worker rules, admin_base_url with world_size, the u64 bound, URL patterns and usable admin
    hosts, routes strictly increasing, request_plane_url, the namespace scope, the order (LIST-1,
    LIST-2) and unique admin endpoints (LIST-6). None when any may be broken (another path then
    decides); else how many JSON strings (member names included) the snapshot was decoded from."""
    n = len(workers)
    if n == 1:  # the columns' fixed cost is most of the price of one worker
        return _one_holds(workers[0], scope)
    if not n:
        return 4  # the top level's 3 names and the namespace
    rows = list(map(_ROW, workers))
    ns, comp, ep, iid, transport, rpu, routes, system, admin, model, size, error = zip(
        *rows, strict=True
    )
    columns = _Identities(ns, comp, ep, iid, rpu)
    if not _runs_hold(columns, scope) and not _rows_hold(rows, columns, scope):
        return None
    if _EMPTY_TRANSPORT in transport:
        return None
    errors = n - error.count(None)
    sizes = n - size.count(None)
    admins_n = n - admin.count(None)
    # WORKER-11 and WORKER-10 need a look worker by worker only when some worker may break them.
    if (errors or (admins_n and sizes != n)) and not _kinds_hold(
        routes, system, admin, size, error
    ):
        return None
    first = routes[0]
    if routes.count(first) == n:  # most workers advertise the same routes
        distinct: Iterable[tuple[str, ...]] = (first,)
        route_strings = len(first) * n
    else:
        distinct = set(routes)
        route_strings = sum(map(len, routes))
    for r in distinct:
        if len(r) > 1 and not all(map(_LT, r, islice(r, 1, None))):
            return None
    systems_n = n - system.count(None)
    if systems_n and not all(map(_SYSTEM_URL, (s for s in system if s is not None))):
        return None
    if admins_n and not _admins_hold(
        admin if admins_n == n else [a for a in admin if a is not None]
    ):
        return None
    strings = 4 + 13 * n + route_strings + 2 * errors + sizes + 2 * (n - model.count(None))
    return strings + 2 * (admins_n + systems_n)


class _Identities(typing.NamedTuple):
    """The columns of the decoded workers that the order and the request-plane rules read."""

    ns: tuple[str, ...]
    comp: tuple[str, ...]
    ep: tuple[str, ...]
    iid: tuple[int, ...]
    rpu: tuple[str, ...]


def _runs_hold(columns: _Identities, scope: str) -> bool:
    """LIST-1 and LIST-2 (identities strictly increasing), the u64 bound, LIST-3 and LIST-5 over
    the columns of a listing in one namespace whose components each list one endpoint (Dynamo's
    shape): components come in runs found by bisection, and each run is judged by a few C calls
    (one URL spelt per run). False when the listing has another shape or may break one of them:
    then ``_rows_hold`` decides."""
    ns, comp, ep, iid, rpu = columns
    n = len(ns)
    first = ns[0]
    if ns.count(first) != n or not first.startswith(scope):
        return False
    start = 0
    previous = ""
    for _ in range(_RUNS):
        c, e = comp[start], ep[start]
        end = bisect_right(comp, c, start)
        size = end - start
        ids = iid[start:end]
        if (
            (start and not previous < c)
            or comp[start:end].count(c) != size
            or ep[start:end].count(e) != size
            or (size > 1 and not all(map(_LT, ids, islice(ids, 1, None))))
            or ids[-1] > U64_MAX
            or rpu[start:end].count(f"dyn://{first}.{c}.{e}") != size
        ):
            return False
        if end == n:
            return True
        start, previous = end, c
    return False


def _rows_hold(rows: list[tuple[Any, ...]], columns: _Identities, scope: str) -> bool:
    """What ``_runs_hold`` judges, for a listing of any shape: rows compare by identity first."""
    ns, comp, ep, iid, rpu = columns
    n = len(rows)
    # LIST-1, LIST-2: equal identities either stop the comparison at the transports (TypeError)
    # or show as equal neighbouring instance_ids, looked at closely.
    try:
        if not all(map(_LT, rows, islice(rows, 1, None))):
            return False
    except TypeError:
        return False
    if True in map(_EQ, iid, islice(iid, 1, None)) and any(
        rows[i][:4] == rows[i + 1][:4] for i in range(n - 1) if iid[i] == iid[i + 1]
    ):
        return False
    if max(iid) > U64_MAX:
        return False
    return _planes_match(ns, comp, ep, rpu, scope)


def _one_holds(w: Worker, scope: str) -> int | None:
    """``_columns_hold`` of a listing of one worker, field by field."""
    ns, comp, ep, iid, transport, rpu, routes, system, admin, model, size, error = _ROW(w)
    k = len(routes)
    if (
        iid > U64_MAX
        or transport == _EMPTY_TRANSPORT
        or rpu != f"dyn://{ns}.{comp}.{ep}"
        or not ns.startswith(scope)
        or (k > 1 and not (routes[0] < routes[1] if k == 2 else all(map(_LT, routes, routes[1:]))))
        or (
            error is not None and (k or system is not None or admin is not None or size is not None)
        )
        or (
            admin is not None
            and (
                size is None or (_CANONICAL_ADMIN_ONE(admin) is None and not _admins_hold((admin,)))
            )
        )
        or (system is not None and not _SYSTEM_URL(system))
    ):
        return None
    strings = 17 + k + 2 * (error is not None) + (size is not None)
    return strings + 2 * ((model is not None) + (admin is not None) + (system is not None))


def _kinds_hold(
    routes: Sequence[tuple[str, ...]],
    system: Sequence[str | None],
    admin: Sequence[str | None],
    size: Sequence[int | None],
    error: Sequence[str | None],
) -> bool:
    """WORKER-11 (an error worker has no routes, URLs or world_size) and WORKER-10 (admin_base_url
    comes with world_size) over the columns of some workers."""
    n = len(error)
    if error.count(None) != n and any(map(_kind_breaks, routes, system, admin, size, error)):
        return False
    return not (
        size.count(None)
        and admin.count(None) != n
        and any(a is not None and w is None for a, w in zip(admin, size, strict=True))
    )


def _kind_breaks(
    routes: Sequence[str],
    system: str | None,
    admin: str | None,
    size: int | None,
    error: str | None,
) -> bool:
    """Whether one worker breaks WORKER-11 (an error worker with routes, URLs or world_size) or
    WORKER-10 (admin_base_url without world_size)."""
    if error is not None:
        return bool(routes) or system is not None or admin is not None or size is not None
    return admin is not None and size is None


def _planes_match(
    ns: tuple[str, ...],
    comp: tuple[str, ...],
    ep: tuple[str, ...],
    rpu: tuple[str, ...],
    scope: str,
) -> bool:
    """LIST-3 (request_plane_url is dyn://namespace.component.endpoint) and LIST-5 (namespaces in
    scope) over identity-sorted columns. One namespace (first == last when sorted): components
    come in runs found by bisection, and each run's URL is spelt once."""
    n = len(ns)
    first = ns[0]
    if first == ns[-1]:
        if not first.startswith(scope):
            return False
        expected: list[str] = []
        start = 0
        while start < n and len(expected) < _RUNS:
            c = comp[start]
            end = bisect_right(comp, c, start)
            if ep[start] != ep[end - 1]:
                break  # several endpoints in one component: the general check below
            expected += [f"dyn://{first}.{c}.{ep[start]}"] * (end - start)
            start = end
        else:
            if start == n:
                return rpu == tuple(expected)
    elif not all(name.startswith(scope) for name in set(ns)):
        return False
    return all(r == f"dyn://{a}.{b}.{c}" for a, b, c, r in set(zip(ns, comp, ep, rpu, strict=True)))


def _admins_hold(admins: Sequence[str]) -> bool:
    """WORKER-8 (pattern and a usable host) and LIST-6 (no endpoint twice) for these URLs."""
    # Admin URLs already in the form LIST-6 compares are their own key: one match over all of
    # them, joined by newlines, costs what the pattern alone would (a per-URL call is most of the
    # price of a short match).
    if len(admins) == 1:
        if "\n" not in admins[0] and _CANONICAL_ADMINS(admins[0] + "\n") is not None:
            return True
    else:
        joined = "\n".join(admins) + "\n"
        if joined.count("\n") == len(admins) and _CANONICAL_ADMINS(joined) is not None:
            return len(set(admins)) == len(admins)
    return (
        all(map(_ADMIN_BASE_URL, admins))
        and not any(map(url_host_problem, admins))
        and len(set(map(admin_key, admins))) == len(admins)
    )


class _Held(typing.NamedTuple):
    """What the per-entry rules leave for the listing-wide ones, when every entry holds them
    (a NamedTuple: built once per body, and cheaper to build than a frozen dataclass)."""

    strings: int  # JSON strings (member names included) the entries were decoded from
    identities: list[tuple[str, str, str, int]]  # each entry's, in listing order
    admin_keys: list[str]  # the endpoint each admin_base_url names (LIST-6 compares these)


def _entries_hold(workers: Sequence[Worker], scope: str | None) -> _Held | None:
    """The per-entry rules msgspec cannot express, judged column by column in C: exactly one
    transport, error-worker rules, admin_base_url with world_size, the u64 bound, URL patterns and
    usable admin hosts, routes strictly increasing, request_plane_url and the namespace scope
    (when ``scope`` is a string). None when any entry may break one."""
    if not workers:
        return _Held(0, [], [])
    n = len(workers)
    rows = list(map(_ROW, workers))
    ns, comp, ep, iid, transport, rpu, routes, system, admin, model, size, error = zip(
        *rows, strict=True
    )
    # Exactly one transport key each: 2n absent keys in all and no entry without any.
    transports = list(map(_ROW, transport))
    absent = sum(map(_COUNT_NONE, zip(*transports, strict=True)))
    if absent != 2 * n or _NO_TRANSPORT in transports:
        return None
    if not _kinds_hold(routes, system, admin, size, error):
        return None
    errors = n - error.count(None)
    sizes = n - size.count(None)
    if max(iid) > U64_MAX:
        return None
    distinct_routes = set(routes)  # most workers advertise the same routes
    lt = operator.lt
    for r in distinct_routes:
        if len(r) > 1 and not all(map(lt, r, r[1:])):
            return None
    if list(rpu) != [f"dyn://{a}.{b}.{c}" for a, b, c in zip(ns, comp, ep, strict=True)]:
        return None  # LIST-3 (an f-string per worker costs half a mapped str.format)
    if scope is not None and not all(name.startswith(scope) for name in set(ns)):
        return None
    systems = [s for s in system if s is not None] if system.count(None) != n else []
    if not all(map(_SYSTEM_URL, systems)):
        return None
    admins = [a for a in admin if a is not None] if admin.count(None) != n else []
    joined = "\n".join(admins) + "\n"
    if joined.count("\n") == len(admins) and _CANONICAL_ADMINS(joined) is not None:
        keys = admins
    elif not all(map(_ADMIN_BASE_URL, admins)) or any(map(url_host_problem, admins)):
        return None
    else:
        keys = list(map(admin_key, admins))
    # Per entry: 7 names, 4 string values, transport name + value; then the optional members.
    strings = 13 * n + sum(map(len, routes)) + 2 * errors + sizes
    strings += 2 * (n - model.count(None)) + 2 * (len(admins) + len(systems))
    return _Held(strings, list(zip(ns, comp, ep, iid, strict=True)), keys)


# --------------------------------------------------------------------------------------------
# Located path


class _Fallback(Exception):
    """The located path cannot vouch for this body: the exhaustive path decides."""


def _fragment(text: bytes) -> Any:
    """One value of the body parsed strictly, or _Fallback when only the whole text can say."""
    if text.count(b"[") + text.count(b"{") > MAX_DEPTH - 3:  # depth is judged on the body
        raise _Fallback
    parsed = parse(text)
    if isinstance(parsed, Violation):  # its offsets are the fragment's, not the body's
        raise _Fallback
    return parsed


def _fragments(texts: list[bytes]) -> list[Any]:
    """Some values of the body parsed strictly, in one parse (as an array of them), or _Fallback."""
    if any(text.count(b"[") + text.count(b"{") > MAX_DEPTH - 3 for text in texts):
        raise _Fallback  # depth is judged on the body
    # Each text nests at most MAX_DEPTH - 3 deep: in the array, in the body, within the limit.
    parsed = parse(b"[" + b",".join(texts) + b"]", shallow=True)
    if isinstance(parsed, Violation):  # its offsets are the fragments', not the body's
        raise _Fallback
    return typing.cast(list[Any], parsed)


def _located(raw: bytes) -> list[Violation] | None:
    """Every violation of a body whose defects lie inside some worker entries, or None.

    First the typed tier (``_typed_located``): the body in one decode, each member of its JSON
    type. Else the top level is decoded with its values left as text and the workers array entry
    by entry into the Worker model. Entries that decode and hold every per-entry rule are known
    good; only the others are parsed strictly and judged by jsonschema, with the paths of the
    whole body.
    Listing-wide rules (order, uniqueness, LIST-6) then run over all entries. Whatever the text
    could hide (known variants, null, repeated or unknown members, deep nesting, text errors)
    returns None: the exhaustive path gives the verdict."""
    quotes, marked = _located_scan(raw)
    if marked:  # the variants' markers (VERSION-1), or a null: judged on the whole body
        return None
    typed = _typed_located(raw, quotes)
    if typed is not None:
        return typed
    try:
        top = _TOP.decode(raw)
        if "namespace" not in top or "workers" not in top:
            return None
        entries = _ENTRIES.decode(top["workers"])
    except _DECODE_ERRORS:
        return None
    try:
        return _located_violations(raw, top, entries)
    except _Fallback:
        return None


def _decode_entries(entries: list[msgspec.Raw]) -> list[Worker | None]:
    """Each entry as a Worker, None where it does not decode. Runs of entries are decoded in one
    call; msgspec names the index of the first that fails, and the run restarts after it (runs
    double after a success and start from one after a failure: linear however many fail)."""
    out: list[Worker | None] = []
    start, run, n = 0, len(entries), len(entries)
    while start < n:
        if run == 1:  # after a failure: the next entry alone, no index to read
            try:
                out.append(_ENTRY.decode(entries[start]))
                run = 2
            except (msgspec.ValidationError, msgspec.DecodeError):
                out.append(None)
            start += 1
            continue
        chunk = entries[start : start + run]
        try:
            out += _WORKERS.decode(b"[" + b",".join(chunk) + b"]")
            start += len(chunk)
            run *= 2
            continue
        except msgspec.ValidationError as exc:
            at = _AT_INDEX.match(str(exc).rpartition(" - at `")[2])
        except msgspec.DecodeError:
            at = None
        k = int(at.group(1)) if at is not None and int(at.group(1)) < len(chunk) else None
        if k is None:  # no index to trust: this run entry by entry
            for entry in chunk:
                try:
                    out.append(_ENTRY.decode(entry))
                except (msgspec.ValidationError, msgspec.DecodeError):
                    out.append(None)
            start += len(chunk)
        else:
            if k:  # the entries before the failing one decode: decoded again, in one call
                out += _WORKERS.decode(b"[" + b",".join(chunk[:k]) + b"]")
            out.append(None)
            start += k + 1
        run = 1
    return out


def _located_violations(
    raw: bytes, top: dict[str, msgspec.Raw], entries: list[msgspec.Raw]
) -> list[Violation] | None:
    quotes = 2 * len(top)
    body: dict[str, Any] = {}
    for name, value in top.items():
        if name != "workers":
            text = bytes(value)
            body[name] = _fragment(text)
            quotes += text.count(b'"')
    scope = body["namespace"] if isinstance(body["namespace"], str) else None
    workers = _decode_entries(entries)
    good = [w for w in workers if w is not None]
    held = _entries_hold(good, scope)
    if held is None:  # some decoded entries break a per-entry rule: find them one by one
        workers = [w if w is None or _entries_hold((w,), scope) else None for w in workers]
        held = _entries_hold([w for w in workers if w is not None], scope)
        if held is None:
            raise _Fallback
    suspects = [i for i, w in enumerate(workers) if w is None]
    if suspects:
        texts = [bytes(entries[i]) for i in suspects]
        for i, value in zip(suspects, _fragments(texts), strict=True):
            workers[i] = value
        quotes += sum(text.count(b'"') for text in texts)
    if quotes + 2 * held.strings != _quotes(raw):
        raise _Fallback  # a string the decoded entries do not account for: unknown or repeated
    listed = {**body, "workers": workers}
    violations, bad = _schema_violations(listed, _validator().iter_errors({**body, "workers": []}))
    memo: dict[Any, list[Any]] = {}  # one body's defects mostly repeat: judged once each
    listing = _Listing(workers, suspects, bad, scope)
    templates: _Templates = {}
    for i in suspects:
        errors = _entry_errors(workers[i], memo)
        if errors:
            found, touched = _entry_violations(i, errors, listing.label, templates)
            violations += found
            bad |= touched
    violations += _semantic(listing)
    violations += _repeated_members(listed, suspects)
    if not violations:
        raise _Fallback
    violations.sort(key=lambda v: _pointer_sort_key(v.pointer))
    return violations


# --------------------------------------------------------------------------------------------
# Located path, typed tier: the whole body decoded once into unconstrained models, each defect
# built straight from the schema's keywords (a table of small checks, as jsonschema's
# _keywords.py has), with no strict parse and no jsonschema call


def _unconstrained(kind: Any) -> Any:
    """``kind`` without its msgspec.Meta constraints (at any depth): the JSON types alone."""
    origin = typing.get_origin(kind)
    if origin is typing.Annotated:
        return _unconstrained(typing.get_args(kind)[0])
    if origin is tuple:
        return tuple.__class_getitem__((_unconstrained(typing.get_args(kind)[0]), ...))
    if origin is typing.Union or type(kind) is types.UnionType:
        return typing.Union[tuple(map(_unconstrained, typing.get_args(kind)))]  # noqa: UP007
    return kind


def _unconstrained_model(cls: Any, name: str, **types_: Any) -> Any:
    fields = [
        (f.name, types_.get(f.name, _unconstrained(f.type)))
        if f.required
        else (f.name, types_.get(f.name, _unconstrained(f.type)), f.default)
        for f in msgspec.structs.fields(cls)
    ]
    return msgspec.defstruct(name, fields, kw_only=True, frozen=True, gc=False, omit_defaults=True)


#: A worker whose members have their JSON types, whatever their values (same fields, same order).
_TypedWorker = _unconstrained_model(Worker, "TypedWorker")
_TYPED = msgspec.json.Decoder(
    _unconstrained_model(
        Snapshot, "TypedSnapshot", workers=tuple.__class_getitem__((_TypedWorker, ...))
    )
)
#: The decoded worker structs a _Listing reads by attribute: a Worker holds every per-entry rule;
#: a _TypedWorker only has its JSON types, so the typed tier hands the listing its identities and
#: admins itself (``_listing_wide``) rather than let the listing trust them.
_KNOWN_GOOD = (Worker, _TypedWorker)


class _Accelerator(typing.NamedTuple):
    """The C accelerator's functions (prime_rl_dynamo/_speedups.c), or None and ``bytes.count``."""

    columns_hold: Callable[[tuple[Any, ...], str], int | tuple[int, list[int]] | None] | None
    typed_flags: Callable[[tuple[Any, ...], str], tuple[int, dict[str, list[int]]] | None] | None
    quotes: Callable[[bytes], int]
    scan: Callable[[bytes], tuple[int, bool]]
    violation: Callable[[str, str, str, str | None, str | None, str | None], Violation]
    label: Callable[[Any], str]
    property_violations: Callable[..., tuple[list[Any], set[tuple[int, str]]]] | None


def _scan(raw: bytes) -> tuple[int, bool]:
    """(the quotes in ``raw``, whether it holds a variant's marker or a null value): what the
    located path looks at before it decodes."""
    marked = b"system_routes" in raw or b"weight_transfer_backend" in raw
    return raw.count(b'"'), marked or (b"null" in raw and _NULL_VALUE.search(raw) is not None)


def _label_of(worker: Any) -> str:
    """A decoded worker's label (its identity, as WorkerId spells it)."""
    return "%s.%s.%s#%d" % _IDENTITY(worker)  # noqa: UP031 (one call)


def _accelerator(*models: Any) -> _Accelerator:
    """The C accelerator, told where the worker ``models`` (Worker, then _TypedWorker) keep their
    fields. Absent when no compiler built it, when it was built from another revision of the file
    (its ABI), or when PRIME_RL_DYNAMO_PURE_PYTHON is set: the verdicts are the same either way."""
    pure = _Accelerator(
        None, None, operator.methodcaller("count", b'"'), _scan, violation_of, _label_of, None
    )
    if os.environ.get("PRIME_RL_DYNAMO_PURE_PYTHON"):
        return pure
    try:
        import prime_rl_dynamo._speedups as _speedups
    except ImportError:
        return pure
    if getattr(_speedups, "ABI", None) != _SPEEDUPS_ABI:
        return pure
    _speedups.configure(
        Transport,
        tuple(Transport.__dict__[name] for name in ("tcp", "nats_tcp", "http")),
        tuple((m, tuple(m.__dict__[name] for name in _WORKER_COLUMNS)) for m in models),
    )
    _speedups.configure_violations(
        Violation, tuple(Violation.__dict__[f.name] for f in dataclasses.fields(Violation)), "MUST"
    )
    return _Accelerator(
        _speedups.columns_hold,
        _speedups.typed_flags,
        _speedups.quotes,
        _speedups.scan,
        _speedups.violation,
        _speedups.label,
        _speedups.property_violations,
    )


_SPEEDUPS_ABI = 6  # the _speedups.c revision this module is written against (its SPEEDUPS_ABI)
if tuple(f.name for f in msgspec.structs.fields(Transport)) != ("tcp", "nats_tcp", "http"):
    raise ImportError("validate.py hands _speedups Transport's fields as tcp, nats_tcp, http")
(
    _C_COLUMNS_HOLD,
    _C_TYPED_FLAGS,
    _quotes,
    _located_scan,
    _violation,
    _worker_label,
    _C_PROPERTY_VIOLATIONS,
) = _accelerator(Worker, _TypedWorker)
#: Whether the C accelerator judges the fast path's column rules in this process.
ACCELERATED = _C_COLUMNS_HOLD is not None


class _Check(typing.NamedTuple):
    """One assertion keyword of a subschema, on a value already of the subschema's JSON type."""

    keyword: str
    fails: Callable[[Any], bool]
    requirement: str
    expected: str
    limit: Any  # the keyword's value


def _pattern_fails(pattern: str) -> Callable[[Any], bool]:
    search = re.compile(pattern).search
    return lambda v: search(v) is None


#: The assertion keywords the typed tier judges, each a builder of its check from the keyword's
#: value. ``type`` is the decode's; ``format`` asserts only uint64 (an integer literal, as decoded).
_KEYWORDS: dict[str, Callable[[Any], Callable[[Any], bool]]] = {
    "minLength": lambda m: lambda v: len(v) < m,
    "maxItems": lambda m: lambda v: len(v) > m,
    "minimum": lambda m: lambda v: v < m,
    "maximum": lambda m: lambda v: v > m,
    "pattern": _pattern_fails,
    "uniqueItems": lambda u: lambda v: bool(u) and len(set(v)) != len(v),  # strings only
}
_ANNOTATIONS = frozenset({"title", "description", "$comment", "x-requirement", "x-python-name",
                          "type", "format"})  # fmt: skip


def _target(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """The subschema a present, non-null member is judged by: references followed, the null
    branch of ``if``/``then``/``else`` passed over."""
    defs = load_json(SCHEMA_NAME)["$defs"]
    while True:
        if "$ref" in schema:
            schema = defs[schema["$ref"].removeprefix("#/$defs/")]
        elif "else" in schema:
            if schema["if"] != {"$ref": "#/$defs/isNull", "x-requirement": "WORKER-6"}:
                raise ImportError("a worker property's if is not the null test: adapt _target")
            schema = schema["else"]
        else:
            return schema


def _checks(schema: Mapping[str, Any]) -> list[_Check]:
    unknown = set(schema) - _ANNOTATIONS - set(_KEYWORDS) - {"items"}
    if unknown or schema.get("format", "uint64") not in ("uint64", "uint32"):
        raise ImportError(f"the typed located path does not judge {sorted(unknown)}: adapt it")
    return [
        _Check(k, _KEYWORDS[k](v), schema["x-requirement"], schema.get("description", ""), v)
        for k, v in schema.items()
        if k in _KEYWORDS
    ]


class _TypedJudges(typing.NamedTuple):
    """What the typed tier judges: each worker property's checks and its items' (in the schema's
    order), and the texts of the allOf rules (an error worker's, a probed worker's)."""

    properties: dict[str, tuple[list[_Check], list[_Check]]]  # by name, in the schema's order
    error_routes: _Check
    absent: tuple[str, str]  # requirement, expected of a member an error worker must not have
    probed: tuple[str, str]  # requirement, expected when admin_base_url comes without world_size


def _typed_judges() -> _TypedJudges:
    root = load_json(SCHEMA_NAME)
    defs = root["$defs"]
    worker = defs["worker"]
    properties = {}
    for name, sub in worker["properties"].items():
        if name == "transport":  # its one key is checked on the columns, or the body falls back
            continue
        target = _target(sub)
        items = _checks(_target(target["items"])) if "items" in target else []
        properties[name] = (_checks(target), items)
    rules = worker["allOf"][-1]
    error_worker, probed = _target(rules["then"]), _target(rules["else"])
    if (set(error_worker["properties"]) != {"routes", *_ABSENT_ON_ERROR_WORKER}
            or probed["then"].get("required") != ["world_size"]):  # fmt: skip
        raise ImportError("the error-worker or probed-worker rules changed: adapt _typed_judges")
    (error_routes,) = _checks(error_worker["properties"]["routes"])
    absent = _target(error_worker["properties"]["world_size"])
    then = probed["then"]
    return _TypedJudges(
        properties,
        error_routes,
        (absent["x-requirement"], absent["description"]),
        (then["x-requirement"], f"property 'world_size' ({then['description']})"),
    )


_ABSENT_ON_ERROR_WORKER = ("system_url", "admin_base_url", "world_size")
_MAX_PART = 2**70  # integers beyond: the exhaustive path renders them (the text may be huge)
#: At import (0.5 ms): a schema the typed tier cannot judge stops it, as above.
_JUDGES = _typed_judges()


def _typed_located(raw: bytes, quotes: int | None = None) -> list[Violation] | None:
    """The located path's verdict for a body whose every member has its JSON type and is known
    (a cheap proof: the text has exactly the strings the models were decoded from, ``quotes``
    quotes when the caller has counted them), or None."""
    try:
        snapshot = _TYPED.decode(raw)
    except _DECODE_ERRORS:
        return None
    workers = snapshot.workers
    if not workers:
        return None
    scope = snapshot.namespace
    # The C accelerator flags the members as _typed_flags would, when it is sure the listing-wide
    # rules hold (the order, one transport each, admin URLs in LIST-6's form and none twice).
    if quotes is None:
        quotes = _quotes(raw)
    judged = _C_TYPED_FLAGS(workers, scope) if _C_TYPED_FLAGS else None
    if judged is not None:
        strings, flagged = judged
        if quotes != 2 * strings or not flagged:
            return None  # an unknown or repeated member, or an escaped quote; or no defect here
        c_labels: dict[int, str] = {}
        try:
            keyed, bad = _typed_violations(workers, flagged, c_labels, scope)
        except _Fallback:
            return None
        others = flagged.get("admin_base_url")  # outside LIST-6's form (typed_flags)
        if others:
            keyed += _other_admins(workers, others, bad, c_labels, scope)
        return _in_order(keyed)
    columns = tuple(zip(*map(_ROW, workers), strict=True))
    flags = _typed_flags(quotes, columns, scope)
    if flags is None:
        return None
    flagged, canonical = flags
    labels: dict[int, str] = {}  # of the entries named, as violations are built
    try:
        keyed, bad = _typed_violations(workers, flagged, labels, scope)
    except _Fallback:
        return None
    # The listing-wide rules over the typed workers' columns, when they may be broken.
    ns, comp, ep, iid, _, _, _, _, admin, _, _, _ = columns
    n = len(workers)
    identities = None
    if n > 1:  # LIST-1, LIST-2 over the identities that can be read
        keys = list(zip(ns, comp, ep, iid, strict=True))
        named = set().union(
            *(flagged.get(name, ()) for name in ("namespace", "component", "endpoint"))
        )
        if named:
            identities = [(i, k) for i, k in enumerate(keys) if i not in named]
            keys = [k for _, k in identities]
        if all(map(_LT, keys, islice(keys, 1, None))):
            identities = None
        elif identities is None:
            identities = list(enumerate(keys))
    admins_n = n - admin.count(None)
    admins = not canonical or len(set(admin)) - (admins_n != n) != admins_n  # LIST-6, WORKER-8
    if identities is None and not admins:
        return _in_order(keyed)
    keyed += [
        (_entry_sort_key(v.pointer), v)
        for v in _listing_wide(
            _Listing(list(workers), [], bad, scope, labels=dict(labels)),
            identities,
            admin,
            canonical,
        )
    ]
    return _in_order(keyed)


def _in_order(keyed: _Keyed) -> list[Violation] | None:
    """The violations in the body's order (``keyed`` sorted in place), None when there are none."""
    if len(keyed) == 1:
        return [keyed[0][1]]
    keyed.sort(key=_KEY)
    return [v for _, v in keyed] or None


_Flags = tuple[dict[str, list[int]], bool]


def _typed_flags(quotes: int, columns: Sequence[Sequence[Any]], scope: str) -> _Flags | None:
    """Which (entry, member) pairs of the typed workers (decoded from a text of ``quotes``
    quotes) may break a rule, by member name ("" for WORKER-10 and WORKER-11, "scope" for
    LIST-5), and whether every admin URL is in LIST-6's form; None when the text holds a member
    the models do not (the other tier judges). Whole columns are proved clean in C calls, the
    others looked at value by value."""
    ns, comp, ep, iid, transport, rpu, routes, system, admin, model, size, error = columns
    n = len(ns)
    transports = list(map(_ROW, transport))
    if sum(map(_COUNT_NONE, transports)) != 2 * n or _NO_TRANSPORT in transports:
        return None  # not exactly one transport key each: the located path's other tier judges
    systems_n, admins_n = n - system.count(None), n - admin.count(None)
    strings = 4 + 13 * n + sum(map(len, routes)) + 2 * (n - error.count(None))
    strings += n - size.count(None) + 2 * (n - model.count(None) + admins_n + systems_n)
    if quotes != 2 * strings:
        return None  # an unknown or repeated member, or an escaped quote
    low, high = min(iid), max(iid)
    if low < -_MAX_PART or high > _MAX_PART:
        return None
    flagged = _value_flags(columns)
    if flagged is None:
        return None
    if low < 0 or high > U64_MAX:
        flagged["instance_id"] = [i for i, v in enumerate(iid) if v < 0 or v > U64_MAX]
    planes = [f"dyn://{a}.{b}.{c}" for a, b, c in zip(ns, comp, ep, strict=True)]
    if list(rpu) != planes:  # LIST-3; a URL without dyn:// is among these
        flagged["request_plane_url"] = [
            i for i, (a, b) in enumerate(zip(rpu, planes, strict=True)) if a != b
        ]
    distinct = (routes[0],) if routes.count(routes[0]) == n else set(routes)
    unsorted = {r for r in distinct if "" in r or not all(map(_LT, r, islice(r, 1, None)))}
    if unsorted:
        flagged["routes"] = [i for i, r in enumerate(routes) if r in unsorted]
    if systems_n and not all(map(_SYSTEM_URL, (s for s in system if s is not None))):
        flagged["system_url"] = [
            i for i, s in enumerate(system) if s is not None and not _SYSTEM_URL(s)
        ]
    canonical = admins_n == 0
    if admins_n:
        present = [a for a in admin if a is not None] if admins_n != n else admin
        joined = "\n".join(present) + "\n"
        canonical = joined.count("\n") == admins_n and _CANONICAL_ADMINS(joined) is not None
        if not canonical:  # a URL in LIST-6's form holds WORKER-8: only the others are parsed
            flagged["admin_base_url"] = [
                i
                for i, a in enumerate(admin)
                if a is not None
                and _CANONICAL_ADMIN_ONE(a) is None
                and (not _ADMIN_BASE_URL(a) or url_host_problem(a) is not None)
            ]
    if not _kinds_hold(routes, system, admin, size, error):
        kinds = map(_kind_breaks, routes, system, admin, size, error)
        flagged[""] = [i for i, breaks in enumerate(kinds) if breaks]
    if ns.count(scope) != n and not all(name.startswith(scope) for name in set(ns)):
        flagged["scope"] = [i for i, name in enumerate(ns) if not name.startswith(scope)]
    return flagged, canonical


def _value_flags(columns: Sequence[Sequence[Any]]) -> dict[str, list[int]] | None:
    """The entries whose names, model or error is empty, and whose world_size is out of range,
    by member; None when a world_size is too large to render here (the exhaustive path does)."""
    ns, comp, ep, _, _, _, _, _, _, model, size, error = columns
    flagged: dict[str, list[int]] = {}
    if "" in ns or "" in comp or "" in ep or "" in model or "" in error:
        for name, column in (("namespace", ns), ("component", comp), ("endpoint", ep),
                             ("model", model), ("error", error)):  # fmt: skip
            if "" in column:
                flagged[name] = [i for i, v in enumerate(column) if v == ""]
    sizes = [s for s in size if s is not None] if None in size else size
    if sizes:
        small, large = min(sizes), max(sizes)
        if small < -_MAX_PART or large > _MAX_PART:
            return None
        if small < 1 or large > 4294967295:
            flagged["world_size"] = [
                i for i, s in enumerate(size) if s is not None and not 1 <= s <= 4294967295
            ]
    return flagged


_KEY = operator.itemgetter(0)


def _entry_sort_key(pointer: str) -> tuple[int, str, int]:
    """``_pointer_sort_key``'s order of pointers inside entries (/workers/i[/name[/j]]) that
    name no member with a digit-only name, at a third of its price."""
    parts = pointer.split("/")
    n = len(parts)
    return (int(parts[2]), parts[3] if n > 3 else "", int(parts[4]) if n > 4 else -1)


def _listing_wide(
    listing: _Listing,
    identities: list[tuple[int, tuple[Any, ...]]] | None,
    admin: Sequence[str | None],
    canonical: bool,
    others: set[int] | None = None,
) -> list[Violation]:
    """LIST-1 and LIST-2 when ``identities`` (those that can be read) do not increase, LIST-6
    and WORKER-8's host over the admin URLs the schema did not refuse (all in LIST-6's form when
    ``canonical``; all but those at ``others`` when given)."""
    found: list[Violation] = []
    if identities is not None:
        listing.__dict__["identities"] = identities
        listing.__dict__["increasing"] = False
        found += _sorted_by_identity(listing)
        found += _unique_identity(listing)
    bad = listing.bad
    listing.__dict__["admins"] = [
        (i, a, None, a)
        if canonical
        or (i not in others if others is not None else _CANONICAL_ADMINS(a + "\n") is not None)
        else (i, a, url_host_problem(a), admin_key(a))
        for i, a in enumerate(admin)
        if a is not None and (i, "admin_base_url") not in bad
    ]
    found += _unique_admin_endpoint(listing)
    found += _admin_host_usable(listing)
    return found


_Keyed = list[tuple[tuple[int, str, int], Violation]]


def _typed_violations(
    workers: tuple[Any, ...],
    flagged: dict[str, list[int]],
    labels: dict[int, str],
    scope: str,
) -> tuple[_Keyed, set[tuple[int, str]]]:
    """The violations of the flagged members, each with its sort key, and the (entry, member)
    pairs the schema refused: the schema's in jsonschema's order (the properties, then the allOf
    rules), then LIST-3, LIST-4 and LIST-5 on the members the schema did not refuse."""
    out, bad = _property_violations_of(workers, flagged, _PROPERTY_JUDGES, labels)
    if "" in flagged or "request_plane_url" in flagged or "routes" in flagged or "scope" in flagged:
        _rule_violations(workers, flagged, labels, scope, out, bad)
    return out, bad


def _property_violations(
    workers: tuple[Any, ...],
    flagged: dict[str, list[int]],
    judges: tuple[tuple[str, int, Callable[[Any], list[_Judged]], Any], ...],
    labels: dict[int, str],
) -> tuple[_Keyed, set[tuple[int, str]]]:
    """The violations of the flagged members by each property's judge in turn (``judges``),
    keyed for the body's order, and the (entry, member) pairs refused; the labels made are kept
    in ``labels``. A value's checks depend on the value alone: each distinct one is judged once
    (a broken fleet repeats its defect in every entry). The C accelerator's
    ``property_violations`` stands in for it."""
    out: _Keyed = []
    bad: set[tuple[int, str]] = set()
    for name, _, judge, _ in judges:
        indices = flagged.get(name)
        if indices is None:
            continue
        memo: dict[Any, list[_Judged]] = {}
        for i in indices:
            value = getattr(workers[i], name)
            if value is None:
                continue
            found = memo.get(value)
            if found is None:
                found = memo[value] = judge(value)
            if found:
                bad.add((i, name))
                head = f"/workers/{i}/{name}"
                label = labels.get(i) or _label(workers, labels, i)
                for requirement, j, tail, expected, text, message in found:
                    out.append(((i, name, j), _violation(requirement, head + tail, message,
                                                         label, expected, text)))  # fmt: skip
    return out, bad


def _label(workers: Sequence[Any], labels: dict[int, str], i: int) -> str:
    """Typed entry ``i``'s label (its identity, as WorkerId spells it), kept in ``labels``."""
    label = labels[i] = _worker_label(workers[i])
    return label


def _rule_violations(
    workers: Sequence[Any],
    flagged: dict[str, list[int]],
    labels: dict[int, str],
    scope: str,
    out: _Keyed,
    bad: set[tuple[int, str]],
) -> None:
    """``_typed_violations`` past the properties: the allOf rules, then LIST-3, LIST-4 and
    LIST-5 on the members the schema did not refuse (added to ``out`` and ``bad``)."""

    def add(i: int, requirement: str, name: str, j: int, expected: str, found: str) -> None:
        bad.add((i, name))
        where = f"/workers/{i}/{name}" if j < 0 else f"/workers/{i}/{name}/{j}"
        message = f"expected {expected}, found {found}"
        label = labels.get(i) or _label(workers, labels, i)
        out.append(((i, name, j), _violation(requirement, where, message, label, expected,
                                             found)))  # fmt: skip

    if "" in flagged:
        _error_rules(workers, flagged[""], add)
    if "request_plane_url" in flagged:
        for i in flagged["request_plane_url"]:  # LIST-3
            if (i, "request_plane_url") not in bad and not (
                (i, "namespace") in bad or (i, "component") in bad or (i, "endpoint") in bad
            ):
                w = workers[i]
                url = request_plane_url(w.namespace, w.component, w.endpoint)
                if w.request_plane_url != url:
                    add(i, "LIST-3", "request_plane_url", -1, _plane(url),
                        repr(w.request_plane_url))  # fmt: skip
    if "routes" in flagged:
        steps: dict[tuple[str, ...], tuple[int, str]] = {}
        for i in flagged["routes"]:  # LIST-4
            if (i, "routes") not in bad:
                r = workers[i].routes
                step = steps.get(r)
                if step is None:
                    j = _step_down(r)
                    step = steps[r] = (j, f"{r[j]!r} after {r[j - 1]!r}" if j else "")
                j, text = step
                if j:
                    add(i, "LIST-4", "routes", j, _ROUTES_SORTED, text)
    for i in flagged.get("scope", ()):  # LIST-5
        if (i, "namespace") not in bad:
            add(i, "LIST-5", "namespace", -1, _in_scope(scope), repr(workers[i].namespace))


def _error_rules(
    workers: Sequence[Any],
    flagged: list[int],
    add: Callable[[int, str, str, int, str, str], None],
) -> None:
    """The allOf rules on the flagged entries: an error worker's routes are empty and it has no
    URLs or world_size (WORKER-11); admin_base_url comes with world_size (WORKER-10)."""
    routes_check, (absent, absent_expected), (probed, probed_expected) = _JUDGES[1:]
    for i in flagged:
        w = workers[i]
        routes, error, admin, size = w.routes, w.error, w.admin_base_url, w.world_size
        if error is not None:
            if routes_check.fails(routes):
                add(i, routes_check.requirement, "routes", -1, routes_check.expected,
                    _render(list(routes), routes_check.keyword))  # fmt: skip
            for name in _ABSENT_ON_ERROR_WORKER:
                value = getattr(w, name)
                if value is not None:
                    add(i, absent, name, -1, absent_expected, _render(value, "type"))
        elif admin is not None and size is None:
            add(i, probed, "world_size", -1, probed_expected, "it missing")


#: One violation of a value: requirement, item index (-1 for the value), the pointer's tail
#: from the member, expected, found, message.
_Judged = tuple[str, int, str, str, str, str]


def _judged(checks: list[_Check], items: list[_Check], value: Any) -> list[_Judged]:
    """The violations of one member's value by its subschema's checks and its items' (at most
    _ITEM_ERRORS of those, else _Fallback: the other tier counts the rest)."""
    found: list[_Judged] = []
    if type(value) is tuple:
        value = list(value)  # as JSON reads it (uniqueItems renders a list's repeats)
    for keyword, fails, requirement, expected, _ in checks:  # a _Check's fields, unpacked once
        if fails(value):
            # an int of the typed tier is within _MAX_PART: no clip to make
            text = str(value) if type(value) is int else _render(value, keyword)
            found.append((requirement, -1, "", expected, text,
                          f"expected {expected}, found {text}"))  # fmt: skip
            break
    if not items:
        return found
    failed = 0
    for j, item in enumerate(value):
        for keyword, fails, requirement, expected, _ in items:
            if fails(item):
                failed += 1
                if failed > _ITEM_ERRORS:
                    raise _Fallback  # the count of the rest: the other tier's
                text = _render(item, keyword)
                found.append((requirement, j, f"/{j}", expected, text,
                              f"expected {expected}, found {text}"))  # fmt: skip
                break
    return found


def _bounds(checks: list[_Check], items: list[_Check]) -> tuple[Any, Any, str, str] | None:
    """(minimum, maximum, requirement, expected) of a property judged by those two keywords
    alone (either None when absent), which the C accelerator judges an int by; else None."""
    limits = {c.keyword: c.limit for c in checks}
    if items or not checks or not set(limits) <= {"minimum", "maximum"}:
        return None
    if len({(c.requirement, c.expected) for c in checks}) != 1:
        return None
    return limits.get("minimum"), limits.get("maximum"), checks[0].requirement, checks[0].expected


#: Each worker property the typed tier judges, in the schema's order: its name, its column (its
#: place among the Worker's fields), the judge of its value (``_judged`` with its checks) and
#: its bounds (``_bounds``).
_PROPERTY_JUDGES = tuple(
    # the names interned: the accelerator's flags are keyed by interned names, found by identity
    (sys.intern(n), _WORKER_COLUMNS.index(n), partial(_judged, c, i), _bounds(c, i))
    for n, (c, i) in _JUDGES.properties.items()
)
_property_violations_of = _C_PROPERTY_VIOLATIONS or _property_violations


# --------------------------------------------------------------------------------------------
# Exhaustive path


def _exhaustive_text(raw: bytes | str) -> tuple[list[Violation], Snapshot | None]:
    parsed = parse(raw)
    if isinstance(parsed, Violation):
        return [parsed], None
    return _exhaustive(parsed)


_DEFINED_TOP = frozenset({"protocol_version", "namespace", "workers"})
_DEFINED_WORKER = frozenset(WORKER_FIELDS)
_DEFINED_TRANSPORT = frozenset({"tcp", "nats_tcp", "http"})


def _repeated_members(parsed: Any, entries: Iterable[int] | None = None) -> Iterator[Violation]:
    """BODY-6: a member this document defines written twice in one of its objects (the body, a
    worker, a transport). Names inside unknown members are not judged (BODY-5), as serde does.
    ``entries``: only these workers' objects (the located path knows the others are clean)."""

    def check(obj: Any, defined: frozenset[str], path: list[str | int]) -> Iterator[Violation]:
        if isinstance(obj, Object):
            names = {n: c for n, c in obj.repeated.items() if n in defined}
            if names:
                listed = ", ".join(f"{n!r} {c} times" for n, c in sorted(names.items()))
                yield Violation(
                    "BODY-6",
                    json_pointer(path),
                    expected="each member name once per object",
                    found=f"{clip(listed)} (a parser keeps one value silently: which one "
                    "differs between parsers)",
                    worker=entry_label(obj) if path else None,
                )

    yield from check(parsed, _DEFINED_TOP, [])
    workers = parsed.get("workers") if isinstance(parsed, dict) else None
    if isinstance(workers, list):
        for i in range(len(workers)) if entries is None else entries:
            w = workers[i]
            yield from check(w, _DEFINED_WORKER, ["workers", i])
            if isinstance(w, dict):
                yield from check(
                    w.get("transport"), _DEFINED_TRANSPORT, ["workers", i, "transport"]
                )


def _exhaustive(parsed: object) -> tuple[list[Violation], Snapshot | None]:
    if depth(parsed) > MAX_DEPTH:
        return [too_deep()], None
    dialect = dialect_violations(parsed)  # another protocol: refused as a whole, DIALECT-1 first
    if dialect:
        return dialect, None
    variants = version_violations(parsed)  # known v1 variants by name first (VERSION-1)
    schema_violations, bad = _schema_violations(parsed, _validator().iter_errors(parsed))
    violations = schema_violations + list(_semantic_violations(parsed, bad))
    violations += _repeated_members(parsed)
    if violations or variants:
        violations.sort(key=lambda v: _pointer_sort_key(v.pointer))
        return [*variants, *violations], None
    return [], _to_snapshot(parsed)


@cache
def _entry_validator() -> Any:
    """The validator of one entry of ``workers``: the root's items subschema with every ``$ref``
    replaced by ``allOf: [its target]`` (the same errors, from the same subschemas' keywords,
    without a reference lookup per keyword: a third of jsonschema's time on one entry)."""
    root = _validator().schema
    inlined: dict[str, Any] = {}

    def inline(node: Any) -> Any:
        if isinstance(node, list):
            return [inline(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = {}
        for key, value in node.items():
            if key == "$ref":
                name = value.removeprefix("#/$defs/")
                if name not in inlined:
                    inlined[name] = inline(root["$defs"][name])
                out["allOf"] = [inlined[name]]
            else:
                out[key] = inline(value)
        if "$ref" in node and "allOf" in node:  # both would land in one key
            raise ImportError("the schema puts $ref next to allOf: _entry_validator needs work")
        return out

    schema = inline(root["properties"]["workers"]["items"])
    return type(_validator())(schema, format_checker=_validator().format_checker)


def _memo_key(value: Any) -> Any:
    """A hashable key equal only for JSON values jsonschema cannot tell apart: the same types, the
    same texts of numbers, the same members in the same order (linear; depth bounded)."""
    kind = type(value)
    if kind is list:
        return (kind, tuple(map(_memo_key, value)))
    if kind is dict or kind is Object:
        return (kind, tuple((k, _memo_key(v)) for k, v in value.items()))
    if kind is Number or kind is BigInt:
        return (kind, value.text)
    return (kind, value)


class _EntryJudges(typing.NamedTuple):
    """jsonschema on one entry, split where its errors are independent: each property's subschema
    (in the schema's order, as jsonschema visits them), with a predicate that proves a value clean
    without jsonschema, and the entry's allOf rules."""

    properties: list[tuple[str, Callable[[Any], bool], Any]]
    rules: Any


def _nonempty(value: Any) -> bool:
    return type(value) is str and value != ""


@cache
def _entry_judges() -> _EntryJudges:
    worker = _entry_validator().schema["allOf"][0]
    if set(worker) - {"title", "description", "x-requirement", "x-python-name", "type",
                      "properties", "allOf", "additionalProperties"}:  # fmt: skip
        raise ImportError("the worker schema has a keyword _entry_errors does not split")
    cls, formats = type(_validator()), _validator().format_checker
    system = re.compile(_validator().schema["$defs"]["systemUrl"]["pattern"]).search
    admin = re.compile(_validator().schema["$defs"]["adminBaseUrl"]["pattern"]).search
    clean: dict[str, Callable[[Any], bool]] = {
        "namespace": _nonempty,
        "component": _nonempty,
        "endpoint": _nonempty,
        "instance_id": lambda v: type(v) is int and 0 <= v <= U64_MAX,
        "transport": lambda v: (
            type(v) is dict
            and len(v) == 1
            and next(iter(v)) in _DEFINED_TRANSPORT
            and type(next(iter(v.values()))) is str
        ),
        "request_plane_url": lambda v: type(v) is str and v.startswith("dyn://"),
        "routes": lambda v: (
            type(v) is list and all(type(r) is str and r for r in v) and len(set(v)) == len(v)
        ),
        "system_url": lambda v: type(v) is str and system(v) is not None,
        "admin_base_url": lambda v: type(v) is str and admin(v) is not None,
        "model": _nonempty,
        "world_size": lambda v: type(v) is int and 1 <= v <= 4294967295,
        "error": _nonempty,
    }
    properties = [
        (
            name,
            clean.get(name, lambda _: False),
            cls({"properties": {name: sub}}, format_checker=formats),
        )
        for name, sub in worker["properties"].items()
    ]
    return _EntryJudges(properties, cls({"allOf": worker["allOf"]}, format_checker=formats))


_REQUIRED_FIELDS = ("namespace", "component", "endpoint", "instance_id", "transport",
                    "request_plane_url", "routes")  # fmt: skip
_ERROR_WORKER_FIELDS = ("routes", "system_url", "admin_base_url", "world_size")


def _entry_errors(entry: Any, memo: dict[Any, list[Any]]) -> list[Any]:
    """jsonschema's errors for one worker entry, in its order, each distinct one computed once per
    ``memo``: a value a predicate proves clean costs no jsonschema at all."""
    if type(entry) is not dict and type(entry) is not Object:
        return list(_entry_validator().iter_errors(entry))
    judges = _entry_judges()
    out: list[Any] = []
    for name, clean, judge in judges.properties:
        if name in entry:
            value = entry[name]
            if clean(value):
                continue
            key: tuple[Any, ...] = (name, _memo_key(value))
            errors = memo.get(key)
            if errors is None:
                errors = memo[key] = list(judge.iter_errors({name: value}))
            out += errors
    # The allOf rules read which members are present, whether error and admin_base_url are
    # strings, and on an error worker the values of the members it must not have.
    present = tuple(name in entry for name in _REQUIRED_FIELDS)
    if isinstance(entry.get("error"), str):
        values = tuple(
            (name, _memo_key(entry[name])) if name in entry else (name,)
            for name in _ERROR_WORKER_FIELDS
        )
        key = ("", present, values)
    elif all(present) and (
        "world_size" in entry or not isinstance(entry.get("admin_base_url"), str)
    ):
        return out
    else:
        key = ("", present, isinstance(entry.get("admin_base_url"), str), "world_size" in entry)
    errors = memo.get(key)
    if errors is None:
        errors = memo[key] = list(judges.rules.iter_errors(entry))
    return out + errors


def _error_items(error: Any, path: list[Any]) -> list[tuple[str, list[Any], str, str]]:
    """(requirement, path, expected, found) of each violation jsonschema's ``error`` at ``path``
    stands for: one per missing property of a ``required`` error, else one."""
    schema = error.schema if isinstance(error.schema, dict) else {}
    requirement = schema.get("x-requirement") or "BODY-1"
    description = schema.get("description", "a value the schema allows")
    if error.validator == "required":
        instance = error.instance if isinstance(error.instance, Mapping) else {}
        missing = [p for p in error.validator_value if p not in instance]
        return [
            (requirement, [*path, p], f"property {p!r} ({description})", "it missing")
            for p in missing
        ]
    found = _render(error.instance, error.validator)
    more = getattr(error, "more_items", 0)
    found += f" (and {more} more such items after it, not listed)" if more else ""
    return [(requirement, path, description, found)]


def _schema_violations(
    parsed: object, errors: Iterable[Any]
) -> tuple[list[Violation], set[tuple[int, str]]]:
    """The violations of jsonschema's ``errors`` about ``parsed``, and the (worker index, field)
    pairs they touch."""
    out: list[Violation] = []
    seen: set[tuple[str, str]] = set()
    bad: set[tuple[int, str]] = set()
    for error in errors:
        for requirement, where, expected, what in _error_items(error, list(error.absolute_path)):
            pointer = json_pointer(where)
            if (requirement, pointer) in seen:
                continue  # e.g. transport "x": both "type" and "oneOf" fail; one defect, one entry
            seen.add((requirement, pointer))
            if len(where) >= 2 and where[0] == "workers" and isinstance(where[1], int):
                bad.add((where[1], str(where[2]) if len(where) > 2 else ""))
            out.append(
                Violation(
                    requirement,
                    pointer,
                    expected=expected,
                    found=what,
                    worker=_label_at(parsed, where),
                )
            )
    return out, bad


#: One error's violations inside an entry: (requirement, pointer in the entry, field, message,
#: expected, found), by the error's id (the error kept alongside, so that its id stays its own).
_Templates = dict[int, tuple[Any, list[tuple[str, str, str, str, str, str]]]]


def _entry_violations(
    i: int, errors: list[Any], label: Callable[[int], str | None], templates: _Templates
) -> tuple[list[Violation], set[tuple[int, str]]]:
    """``_schema_violations`` of the errors of worker ``i``'s entry, whose paths are relative to
    it. The errors of one body's entries mostly repeat (``_entry_errors`` memoizes them): each
    distinct one is rendered once per ``templates``, and only its pointer's head is per entry."""
    out: list[Violation] = []
    seen: set[tuple[str, str]] = set()
    bad: set[tuple[int, str]] = set()
    head = f"/workers/{i}"
    for error in errors:
        known = templates.get(id(error))
        if known is None or known[0] is not error:
            items = [
                (
                    requirement,
                    json_pointer(where),
                    str(where[0]) if where else "",
                    f"expected {expected}, found {what}",
                    expected,
                    what,
                )
                for requirement, where, expected, what in _error_items(
                    error, list(error.absolute_path)
                )
            ]
            known = templates[id(error)] = (error, items)
        for requirement, pointer, name, message, expected, what in known[1]:
            if (requirement, pointer) in seen:
                continue  # e.g. transport "x": both "type" and "oneOf" fail; one defect, one entry
            seen.add((requirement, pointer))
            bad.add((i, name))
            out.append(
                Violation(requirement, head + pointer, message, label(i), "MUST", expected, what)
            )
    return out, bad


# --------------------------------------------------------------------------------------------
# Semantic rules: what JSON Schema cannot say, one function per requirement ID


@dataclass
class _Listing:
    """The workers as the semantic rules read them.

    ``workers`` holds parsed JSON values (any shape) and, on the located path, Worker structs
    already known to hold every per-entry rule. ``suspects`` are the indices of the parsed ones:
    per-entry rules judge only those; listing-wide rules (order, uniqueness) judge all. ``bad``:
    the (worker index, field) pairs the schema refused, skipped here so that one defect is
    reported under one requirement.
    """

    workers: list[Any]
    suspects: list[int]
    bad: set[tuple[int, str]]
    scope: str | None
    _names_ok: dict[int, bool] = field(default_factory=dict)
    labels: dict[int, str | None] = field(default_factory=dict)  # by index, as far as built

    def good(self, i: int, name: str, kind: type) -> bool:
        """Whether worker ``i``'s field ``name`` is a ``kind`` the schema did not refuse."""
        if (i, name) in self.bad:
            return False
        value = self.workers[i].get(name)
        return isinstance(value, kind) and not isinstance(value, bool)

    def names_ok(self, i: int) -> bool:
        """Whether worker ``i``'s namespace, component and endpoint are usable strings."""
        if i not in self._names_ok:
            self._names_ok[i] = all(
                self.good(i, f, str) for f in ("namespace", "component", "endpoint")
            )
        return self._names_ok[i]

    def violation(
        self, requirement: str, i: int, where: Sequence[str | int], expected: str, found: str
    ) -> Violation:
        """``requirement`` broken at ``where`` inside worker ``i``, naming the worker."""
        if not where:
            pointer = f"/workers/{i}"
        else:
            tail = "/".join(map(str, where))  # json_pointer's, when no part has ~ or / to escape
            if "~" in tail or tail.count("/") != len(where) - 1:
                tail = json_pointer(where)[1:]
            pointer = f"/workers/{i}/{tail}"
        message = f"expected {expected}, found {found}"
        return Violation(requirement, pointer, message, self.label(i), "MUST", expected, found)

    def field_violation(self, requirement: str, i: int, name: str, expected: str) -> Violation:
        """``requirement`` broken by worker ``i``'s field ``name``, its value quoted as found."""
        return self.violation(requirement, i, [name], expected, repr(self.workers[i][name]))

    def label(self, i: int) -> str | None:
        """Worker ``i``'s label, as far as it can be named."""
        if i not in self.labels:
            w = self.workers[i]
            if isinstance(w, _KNOWN_GOOD):
                label: str | None = str(WorkerId(*_IDENTITY(w)))
            elif type(w) is dict or type(w) is Object:  # entry_label's common case, spelt out
                ns, comp, ep, iid = map(w.get, WorkerId._fields)
                if type(ns) is str and type(comp) is str and type(ep) is str and type(iid) is int:
                    label = f"{ns}.{comp}.{ep}#{iid}"
                else:
                    label = entry_label(w)
            else:
                label = entry_label(w)
            self.labels[i] = label
        return self.labels[i]

    def parsed(self) -> Iterator[tuple[int, Mapping[str, Any]]]:
        """The suspects that are JSON objects."""
        for i in self.suspects:
            w = self.workers[i]
            if isinstance(w, Mapping):
                yield i, w

    @cached_property
    def identities(self) -> list[tuple[int, tuple[Any, ...]]]:
        """(index, identity) of every worker whose identity can be read, in listing order.
        Judged even when WORKER-2 refused how instance_id is written (1.0): its value still
        places the worker in the order and may repeat another identity."""
        out = []
        for i, w in enumerate(self.workers):
            if isinstance(w, _KNOWN_GOOD):
                out.append((i, _IDENTITY(w)))
            elif isinstance(w, Mapping) and self.names_ok(i):
                instance_id = _integral(w.get("instance_id"))
                if instance_id is not None:
                    out.append((i, (w["namespace"], w["component"], w["endpoint"], instance_id)))
        return out

    @cached_property
    def increasing(self) -> bool:
        """Whether the identities strictly increase (then neither LIST-1 nor LIST-2 is broken)."""
        keys = [key for _, key in self.identities]
        return all(map(operator.lt, keys, islice(keys, 1, None)))

    @cached_property
    def admins(self) -> list[tuple[int, str, str | None, str]]:
        """(index, admin_base_url, host problem or None, endpoint) of every usable admin URL."""
        out: list[tuple[int, str, str | None, str]] = []
        for i, w in enumerate(self.workers):
            if isinstance(w, _KNOWN_GOOD):
                admin = w.admin_base_url
                if admin is not None:  # known good: no host problem
                    canonical = _CANONICAL_ADMINS(admin + "\n") is not None
                    out.append((i, admin, None, admin if canonical else admin_key(admin)))
            elif isinstance(w, Mapping) and self.good(i, "admin_base_url", str):
                admin = w["admin_base_url"]
                if _CANONICAL_ADMINS(admin + "\n") is not None:  # usable, and its own key
                    out.append((i, admin, None, admin))
                else:
                    out.append((i, admin, url_host_problem(admin), admin_key(admin)))
        return out


def _sorted_by_identity(listing: _Listing) -> Iterator[Violation]:
    """LIST-1: workers sorted by (namespace, component, endpoint, instance_id); a repeat is LIST-2's."""
    if listing.increasing:
        return
    seen: set[tuple[Any, ...]] = set()
    previous: tuple[int, tuple[Any, ...]] | None = None
    for i, key in listing.identities:
        if key in seen:
            continue
        seen.add(key)
        if previous is not None and key < previous[1]:
            k = previous[0]
            yield listing.violation(
                "LIST-1",
                i,
                [],
                "workers sorted by (namespace, component, endpoint, instance_id)",
                f"{listing.label(i)} after {listing.label(k)} (/workers/{k})",
            )
        previous = (i, key)


def _unique_identity(listing: _Listing) -> Iterator[Violation]:
    """LIST-2: no (namespace, component, endpoint, instance_id) listed twice."""
    if listing.increasing:
        return
    first: dict[tuple[Any, ...], int] = {}
    for i, key in listing.identities:
        j = first.setdefault(key, i)
        if j != i:
            label = listing.label(i)
            yield listing.violation(
                "LIST-2",
                i,
                [],
                "a unique (namespace, component, endpoint, instance_id)",
                f"the same identity {label} as /workers/{j}",
            )


def _plane(url: str) -> str:
    """LIST-3's expected text for a worker whose request_plane_url is ``url``."""
    return f"{url!r} (dyn://namespace.component.endpoint of this worker)"


_ROUTES_SORTED = "routes sorted ascending by code point"  # LIST-4's expected text


def _step_down(routes: Sequence[str]) -> int:
    """The index of the first route below the one before it (0 when they ascend)."""
    for j in range(1, len(routes)):
        if routes[j] < routes[j - 1]:
            return j
    return 0


def _in_scope(scope: str) -> str:
    """LIST-5's expected text under the body's namespace ``scope``."""
    return f"the body's namespace {scope!r} or a namespace starting with it"


def _request_plane_url_matches(listing: _Listing) -> Iterator[Violation]:
    """LIST-3: request_plane_url is dyn://namespace.component.endpoint of the worker."""
    for i, w in listing.parsed():
        if listing.names_ok(i) and listing.good(i, "request_plane_url", str):
            expected = request_plane_url(w["namespace"], w["component"], w["endpoint"])
            if w["request_plane_url"] != expected:
                yield listing.field_violation("LIST-3", i, "request_plane_url", _plane(expected))


def _routes_sorted(listing: _Listing) -> Iterator[Violation]:
    """LIST-4: routes sorted ascending by code point (the first step down is reported)."""
    for i, w in listing.parsed():
        routes: Any = w.get("routes")
        if listing.good(i, "routes", list) and all(isinstance(r, str) for r in routes):
            j = _step_down(routes)
            if j:
                found = f"{routes[j]!r} after {routes[j - 1]!r}"
                yield listing.violation("LIST-4", i, ["routes", j], _ROUTES_SORTED, found)


def _namespace_in_scope(listing: _Listing) -> Iterator[Violation]:
    """LIST-5: every worker's namespace is the body's namespace or starts with it."""
    scope = listing.scope
    if scope is None:
        return
    for i, w in listing.parsed():
        if listing.good(i, "namespace", str) and not w["namespace"].startswith(scope):
            yield listing.field_violation("LIST-5", i, "namespace", _in_scope(scope))


def _admin_host_usable(listing: _Listing) -> Iterator[Violation]:
    """WORKER-8 (its part the pattern cannot say): an admin_base_url host the admin pool can use."""
    for i, admin, problem, _ in listing.admins:
        if problem is not None:
            yield listing.violation(
                "WORKER-8",
                i,
                ["admin_base_url"],
                "an admin_base_url the admin pool can use",
                f"{clip(admin)!r}: {clip(problem)}",
            )


def _unique_admin_endpoint(listing: _Listing) -> Iterator[Violation]:
    """LIST-6: no two workers advertise the same admin endpoint (compared as the pool calls it)."""
    usable = [(i, a, key) for i, a, problem, key in listing.admins if problem is None]
    if len({endpoint for _, _, endpoint in usable}) == len(usable):
        return
    seen: dict[str, tuple[int, str]] = {}
    for i, admin, endpoint in usable:
        if endpoint not in seen:
            seen[endpoint] = (i, admin)
            continue
        j, other = seen[endpoint]
        same = "" if other == admin else f" as {clip(other)!r}"
        yield listing.violation(
            "LIST-6",
            i,
            ["admin_base_url"],
            "an admin_base_url no other worker advertises",
            f"{clip(admin)!r}, the same endpoint ({clip(endpoint)}){same} advertised by "
            f"{listing.label(j)} (/workers/{j})",
        )


#: The semantic rules, keyed by the requirement each enforces (one function per requirement, as
#: jsonschema has one per keyword). Their violations never share a pointer, so the order of the
#: table does not change a verdict (violations are sorted by pointer).
SEMANTIC_RULES: dict[str, Callable[[_Listing], Iterator[Violation]]] = {
    "LIST-1": _sorted_by_identity,
    "LIST-2": _unique_identity,
    "LIST-3": _request_plane_url_matches,
    "LIST-4": _routes_sorted,
    "LIST-5": _namespace_in_scope,
    "LIST-6": _unique_admin_endpoint,
    "WORKER-8": _admin_host_usable,
}
# _typed_located judges each of these itself (LIST-3, LIST-4, LIST-5 from its columns).
if set(SEMANTIC_RULES) != {"LIST-1", "LIST-2", "LIST-3", "LIST-4", "LIST-5", "LIST-6", "WORKER-8"}:
    raise ImportError("a new semantic rule: _typed_located must run it too")


def _semantic(listing: _Listing) -> list[Violation]:
    return [v for rule in SEMANTIC_RULES.values() for v in rule(listing)]


def _semantic_violations(parsed: object, bad: set[tuple[int, str]]) -> Iterator[Violation]:
    """Every semantic rule over a parsed body; fields the schema already refused are skipped."""
    if not isinstance(parsed, Mapping) or not isinstance(parsed.get("workers"), list):
        return
    workers: list[Any] = parsed["workers"]
    scope = parsed.get("namespace")
    listing = _Listing(
        workers,
        [i for i, w in enumerate(workers) if isinstance(w, Mapping)],
        bad,
        scope if isinstance(scope, str) else None,
    )
    yield from _semantic(listing)


@cache
def _validator() -> Any:
    from jsonschema import Draft202012Validator, FormatChecker, ValidationError, validators

    def is_integer(_checker: object, instance: object) -> bool:
        # JSON Schema: a number with a zero fractional part is an integer (1.0 included).
        if isinstance(instance, bool):
            return False
        if isinstance(instance, int):
            return True
        if isinstance(instance, float):
            return instance.is_integer()
        if isinstance(instance, Decimal):
            return instance.is_finite() and instance == instance.to_integral_value()
        return False

    # format "uint64" (instance_id) asserts an integer literal: 1.0 and 1e0 are integral numbers, but
    # a u64 written as a float is what WORKER-2 forbids (a parser may round it through binary64).
    formats = FormatChecker(formats=())
    formats.checks("uint64")(lambda instance: not isinstance(instance, float | Number))

    def unique_items(validator: Any, unique: Any, instance: Any, _schema: Any) -> Iterator[Any]:
        # jsonschema compares unsortable items pairwise (quadratic); JSON equality keys are linear.
        if unique and validator.is_type(instance, "array") and _repeated(instance):
            yield ValidationError("has repeated items", validator="uniqueItems")

    every_item = Draft202012Validator.VALIDATORS["items"]

    def items(validator: Any, item_schema: Any, instance: Any, schema: Any) -> Iterator[Any]:
        # Every item error of routes is WORKER-5: after _ITEM_ERRORS of them the rest are counted
        # (cheaply) into the last message instead of costing one jsonschema error each.
        errors = every_item(validator, item_schema, instance, schema)
        if schema.get("x-requirement") != "WORKER-5":
            yield from errors
            return
        for n, error in enumerate(errors):
            if n == _ITEM_ERRORS:
                rest = instance[error.path[0] + 1 :] if error.path else []
                error.more_items = sum(1 for r in rest if not isinstance(r, str) or not r)
                yield error
                return
            yield error

    type_checker = Draft202012Validator.TYPE_CHECKER.redefine("integer", is_integer)
    cls = validators.extend(
        Draft202012Validator,
        validators={"uniqueItems": unique_items, "items": items},
        type_checker=type_checker,
    )
    return cls(load_json(SCHEMA_NAME), format_checker=formats)


def _to_snapshot(parsed: Any) -> Snapshot:
    """Build the typed snapshot of a body the exhaustive path accepted (integral numbers as int)."""

    def as_int(value: Any) -> Any:
        if isinstance(value, float | Decimal) and not isinstance(value, bool):
            return int(value)
        return value

    body = dict(parsed)
    body["protocol_version"] = as_int(body["protocol_version"])
    workers = []
    for w in body["workers"]:
        w = dict(w)
        w["instance_id"] = as_int(w["instance_id"])
        if "world_size" in w:
            w["world_size"] = as_int(w["world_size"])
        workers.append(w)
    body["workers"] = workers
    try:
        return msgspec.convert(body, Snapshot)
    except msgspec.ValidationError as exc:  # a disagreement between schema and models is a bug
        raise AssertionError(
            f"schema accepted a body the generated models refuse ({exc}); regenerate _models.py"
        ) from exc


# --------------------------------------------------------------------------------------------
# Helpers


def _integral(value: Any) -> int | None:
    """The value of an integral JSON number (``7``, ``7.0``, ``7e0``), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    # adjusted() bounds the work: 1e999999 is integral, but no identity needs its million digits.
    finite = isinstance(value, Decimal) and value.is_finite() and value.adjusted() < 40
    return int(value) if finite and value == value.to_integral_value() else None


def _label_at(parsed: Any, path: list[Any]) -> str | None:
    """The label of the worker ``path`` lies in."""
    if len(path) >= 2 and path[0] == "workers" and isinstance(parsed, Mapping):
        workers = parsed.get("workers")
        i = path[1]
        if isinstance(workers, list) and isinstance(i, int) and i < len(workers):
            return entry_label(workers[i])
    return None


_JSON_TEXT = json.JSONEncoder(ensure_ascii=False, default=str).encode  # json.dumps's, built once


def _render(value: Any, keyword: str) -> str:
    if type(value) is int:  # what json.dumps writes, without its call
        return clip(str(value))
    if type(value) is str:  # the most frequent (a URL, a name): no number or list to tell apart
        return clip(_JSON_TEXT(value))
    if value is None:
        return "null"
    if isinstance(value, Number | BigInt):
        return clip(value.text)
    if isinstance(value, Decimal):
        return clip(str(value))
    text = clip(_JSON_TEXT(value))
    if keyword == "uniqueItems" and isinstance(value, list):
        dupes = _repeated(value)
        shown = ", ".join(clip(json.dumps(v, default=str), 60) for v in dupes[:5])
        more = f" and {len(dupes) - 5} more" if len(dupes) > 5 else ""
        return f"{text} (repeated: {shown}{more})"
    return text


def _json_key(value: Any) -> Any:
    """A hashable key equal for equal JSON values: 1, 1.0 and 1e0 alike, true unlike 1 (Python's
    numeric hashes agree across int, float and Decimal). Depth is bounded by MAX_DEPTH."""
    if isinstance(value, bool) or value is None:
        return (0, value)
    if isinstance(value, int | float | Decimal):
        return (1, value)
    if isinstance(value, str):
        return (2, value)
    if isinstance(value, list | tuple):
        return (3, tuple(map(_json_key, value)))
    if isinstance(value, Mapping):
        return (4, frozenset((k, _json_key(v)) for k, v in value.items()))
    return (5, id(value))


def _repeated(items: list[Any]) -> list[Any]:
    """The items that occur more than once (first occurrence each, in order); linear time."""
    counts: dict[Any, int] = {}
    first: dict[Any, Any] = {}
    for item in items:
        key = _json_key(item)
        counts[key] = counts.get(key, 0) + 1
        first.setdefault(key, item)
    return [first[k] for k, n in counts.items() if n > 1]


def _pointer_sort_key(pointer: str) -> list[tuple[int, Any]]:
    return [(0, int(p)) if p.isdigit() else (1, p) for p in pointer.split("/")[1:]]
