"""The discovery-body validator: bytes or parsed JSON -> a typed Snapshot, or every violation.

One table, read by the accept path and the refusal path alike: the schema's keywords on each worker
member (``_CHECKS``, read from the schema; msgspec carries some as it decodes), ``SEMANTIC_RULES``
(one function per requirement ID) and ``_for_jsonschema`` (the rules across a worker's members,
which jsonschema names). A body is accepted when msgspec decodes it, every rule holds over the
decoded columns and the text holds no string the snapshot lacks; a refused one gets every
violation (ID, JSON pointer, worker). What the text could hide goes to the exhaustive reference:
the strict parser (``_strict_json``), jsonschema on the whole body and the same semantic rules.
"""

from __future__ import annotations

import contextlib
import json
import operator
import re
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from decimal import Decimal
from functools import cache, cached_property
from itertools import islice
from typing import Any, NamedTuple

import msgspec

from prime_rl_dynamo._models import PATTERNS, Snapshot, Worker
from prime_rl_dynamo._strict_json import MAX_DEPTH, TOO_DEEP, BigInt, Number, Object, depth, parse
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
from prime_rl_dynamo.violation import Violation
from prime_rl_dynamo.wire import WORKER_FIELDS, entry_label, request_plane_url

__all__ = [
    "PATTERNS",
    "SCHEMA_NAME",
    "SEMANTIC_RULES",
    "Snapshot",
    "Worker",
    "check_body",
    "check_body_exhaustive",
    "detect_dialect",
    "json_pointer",
    "validate_body",
]

SCHEMA_NAME = "rl-workers.v1.schema.json"
_ITEM_ERRORS = 20  # item errors of one routes array listed; the rest are counted in the last


def validate_body(data: bytes | bytearray | memoryview | str | Mapping[str, Any]) -> Snapshot:
    """A discovery body's typed snapshot; a ProtocolError (DialectError) lists every violation."""
    violations, snapshot = _verdict(data)
    if snapshot is not None:
        return snapshot
    body = bytes(data) if isinstance(data, bytes | bytearray | memoryview) else None
    ids = ", ".join(dict.fromkeys(v.requirement for v in violations))
    more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
    message = f"discovery body breaks {ids}: {violations[0]}{more}"
    if any(v.requirement == "DIALECT-1" for v in violations):
        raise DialectError(message, violations=violations, body=body, requirement="DIALECT-1")
    raise ProtocolError(message, violations=violations, body=body)


def check_body(data: object) -> list[Violation]:
    """Every contract violation in ``data`` (empty when valid); never raises for content."""
    return _verdict(data)[0]


def check_body_exhaustive(data: object) -> list[Violation]:
    """``check_body`` by the exhaustive reference alone (slow; the same verdict)."""
    return _exhaustive(bytes(data) if isinstance(data, bytearray | memoryview) else data)[0]


def json_pointer(parts: Iterable[str | int]) -> str:
    """RFC 6901 pointer of a path (``~`` and ``/`` escaped); ``""`` is the whole document."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _unconstrained(kind: Any) -> Any:
    """``kind`` without its msgspec.Meta constraints (at any depth): the JSON types alone."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is typing.Annotated:
        return _unconstrained(args[0])
    if origin is tuple:
        return tuple.__class_getitem__((_unconstrained(args[0]), ...))
    if origin is typing.Union or type(kind).__name__ == "UnionType":
        return typing.Union[tuple(map(_unconstrained, args))]  # noqa: UP007
    return kind


def _typed_model(cls: Any, name: str) -> Any:
    """``cls`` with the same fields in the same order, each of its JSON type whatever its value."""
    fields = [
        (f.name, _unconstrained(f.type), *(() if f.required else (f.default,)))
        for f in msgspec.structs.fields(cls)
    ]
    return msgspec.defstruct(name, fields, kw_only=True, frozen=True, gc=False)


_TypedWorker = _typed_model(Worker, "TypedWorker")
_DECODER = msgspec.json.Decoder(Snapshot)
_TOP = msgspec.json.Decoder(dict[str, msgspec.Raw])
_ENTRIES = msgspec.json.Decoder(list[msgspec.Raw])
_ENTRY = msgspec.json.Decoder(_TypedWorker)
_WORKERS = msgspec.json.Decoder(tuple.__class_getitem__((_TypedWorker, ...)))
_NULL = re.compile(rb"[:\[,][ \t\r\n]*null")  # a null value: a variant's mark, or WORKER-6
_DECODE_ERRORS = (msgspec.ValidationError, msgspec.DecodeError, RecursionError)
_FIELDS = {f.name: f for f in msgspec.structs.fields(_TypedWorker)}
_OPTIONAL = {name for name, f in _FIELDS.items() if not f.required}
_ROW = msgspec.structs.astuple
_COUNT_NONE = operator.methodcaller("count", None)


def _columns(workers: Sequence[Any]) -> dict[str, Sequence[Any]]:
    """The typed workers' members by name (None where absent; a transport as a tuple)."""
    rows = zip(*map(_ROW, workers), strict=True) if workers else [()] * len(_FIELDS)
    columns: dict[str, Sequence[Any]] = dict(zip(_FIELDS, rows, strict=True))
    columns["transport"] = tuple(map(_ROW, columns["transport"]))
    return columns


def _strings(columns: Mapping[str, Sequence[Any]]) -> int:
    """How many JSON strings (member names included) the typed workers were read from."""
    total = 0
    for name, column in columns.items():
        kind = _FIELDS[name].type
        present = len(column) - (name in _OPTIONAL and column.count(None))
        total += present  # the names
        if typing.get_origin(kind) is tuple:
            total += sum(map(len, column))
        elif name == "transport":
            total += 2 * (sum(map(len, column)) - sum(map(_COUNT_NONE, column)))
        elif str in (kind, *typing.get_args(kind)):
            total += present
    return total


class _Check(NamedTuple):
    """One assertion keyword of a member's subschema, on a value of the subschema's JSON type."""

    keyword: str
    fails: Callable[[Any], bool]
    holds_all: Callable[[Sequence[Any]], bool]  # whether many values all hold it
    requirement: str
    expected: str
    carried: bool  # msgspec checks it as it decodes a Snapshot


def _pattern(pattern: str) -> tuple[Callable[[Any], bool], Callable[[Sequence[Any]], bool]]:
    """A schema pattern's check on one value, and on many at once, joined by newlines in one match
    (the schema's patterns are anchored and no class of theirs takes a newline)."""
    search = re.compile(pattern).search
    end = r"(?![\s\S])"
    body = pattern.removeprefix("^").removesuffix(end)
    negated = re.findall(r"\[\^[^\]]*\]", body)  # each must leave out the control characters
    if (
        not pattern.startswith("^")
        or re.search(r"\\[sSDW]", body)
        or any("\\u0000-\\u0020" not in c for c in negated)
    ):
        raise ImportError(f"validate.py cannot join values to match {pattern!r}: adapt _pattern")
    tail = "" if pattern.endswith(end) else r"[^\n]*"
    body = re.sub(r"(?<!\\)\((?!\?)", "(?:", body)  # no capturing group in a possessive repeat
    many = re.compile(f"(?:{body}{tail}\n)*+\\Z").match

    def holds_all(values: Sequence[Any]) -> bool:
        joined = "\n".join(values) + "\n"
        if joined.count("\n") != len(values):  # a newline in a value: judged one by one
            return all(map(search, values))
        return many(joined) is not None

    return (lambda v: not search(v)), holds_all


def _bound(fails: Callable[[Any], bool], extreme: Callable[..., Any], **key: Any) -> Any:
    """A bound's check: of many values, only the extreme one can fail it."""
    return fails, lambda values: not fails(extreme(values, **key))


def _each(fails: Callable[[Any], bool]) -> Any:
    return fails, lambda values: not any(map(fails, set(values)))


#: The assertion keywords the table judges, each the builder of its check from the keyword's
#: value, with the msgspec.Meta constraint that carries it (None: msgspec cannot). ``type`` is
#: the decode's; ``format`` asserts only uint64 (an integer literal, as decoded).
_KEYWORDS: dict[str, tuple[Callable[[Any], Any], str | None]] = {
    "minLength": (lambda m: _bound(lambda v: len(v) < m, min, key=len), "min_length"),
    "maxItems": (lambda m: _bound(lambda v: len(v) > m, max, key=len), "max_length"),
    "minimum": (lambda m: _bound(lambda v: v < m, min), "ge"),
    "maximum": (lambda m: _bound(lambda v: v > m, max), "le"),
    "pattern": (_pattern, "pattern"),
    "uniqueItems": (lambda u: _each(lambda v: u and len(set(v)) != len(v)), None),  # strings
}
_ANNOTATIONS = {"title", "description", "$comment", "x-requirement", "x-python-name", "type"}


def _target(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """The subschema a present, non-null member is judged by."""
    defs = load_json(SCHEMA_NAME)["$defs"]
    while "$ref" in schema or "else" in schema:
        schema = defs[schema["$ref"][8:]] if "$ref" in schema else schema["else"]
    return schema


def _checks(schema: Mapping[str, Any], kind: Any) -> list[_Check]:
    """A subschema's checks, each saying whether msgspec carries it on a value of ``kind``."""
    unknown = set(schema) - _ANNOTATIONS - set(_KEYWORDS) - {"items", "format"}
    if unknown or schema.get("format", "uint64") not in ("uint64", "uint32"):
        raise ImportError(f"validate.py does not judge {sorted(unknown)}: adapt _KEYWORDS")
    args = () if typing.get_origin(kind) is tuple else (kind, *typing.get_args(kind))
    metas = [m for a in args if typing.get_origin(a) is typing.Annotated for m in a.__metadata__]
    checks = []
    for keyword, value in schema.items():
        if keyword in _KEYWORDS:
            build, attr = _KEYWORDS[keyword]
            carried = attr is not None and any(getattr(m, attr) is not None for m in metas)
            requirement, expected = schema.get("x-requirement", ""), schema.get("description", "")
            fails, holds_all = build(value)
            checks.append(_Check(keyword, fails, holds_all, requirement, expected, carried))
    return checks


def _member_checks() -> dict[str, tuple[list[_Check], list[_Check]]]:
    """Each member's checks, and its items' (the transport's oneOf is _for_jsonschema's)."""
    kinds = {f.name: f.type for f in msgspec.structs.fields(Worker)}
    table = {}
    for name, sub in load_json(SCHEMA_NAME)["$defs"]["worker"]["properties"].items():
        if name != "transport":
            target, kind = _target(sub), kinds[name]
            item = typing.get_args(kind)[0] if typing.get_origin(kind) is tuple else None
            table[name] = (_checks(target, kind), _checks(_target(target.get("items", {})), item))
    return table


_CHECKS = _member_checks()
#: The checks msgspec does not carry, by member: what the accept path judges on the columns.
_UNCARRIED = {
    name: ([c for c in checks if not c.carried], [c for c in items if not c.carried])
    for name, (checks, items) in _CHECKS.items()
    if not all(c.carried for c in (*checks, *items))
}
_Judged = tuple[str, str, str, str]  # requirement, pointer tail, expected, found


def _judged(name: str, value: Any) -> list[_Judged]:
    """A value's violations: its first failing check, then each item's (at most _ITEM_ERRORS)."""
    checks, items = _CHECKS[name]
    as_json = list(value) if type(value) is tuple else value
    found = []
    for j, item in [(-1, as_json), *enumerate(value if items else ())]:
        failing = next((c for c in (checks if j < 0 else items) if c.fails(item)), None)
        if failing is not None:
            tail = "" if j < 0 else f"/{j}"
            found.append(
                (failing.requirement, tail, failing.expected, _render(item, failing.keyword))
            )
    if sum(1 for f in found if f[1]) > _ITEM_ERRORS:
        raise _Fallback
    return found


_MAX_PART = 2**70  # integers beyond: the strict parser's text renders them (it may be huge)


def _for_jsonschema(w: Any) -> bool:
    """Whether a typed worker is jsonschema's to judge: a transport without exactly one key
    (WORKER-3), an error worker with routes, URLs or world_size (WORKER-11), admin_base_url without
    world_size (WORKER-10), or an integer too large to render here."""
    size, admin = w.world_size, w.admin_base_url
    if _ROW(w.transport).count(None) != 2 or not -_MAX_PART < w.instance_id < _MAX_PART:
        return True
    if size is not None and not -_MAX_PART < size < _MAX_PART:
        return True
    if w.error is not None:
        return bool(w.routes) or (w.system_url, admin, size) != (None, None, None)
    return admin is not None and size is None


def _holds(checks: Sequence[_Check], items: Sequence[_Check], column: Sequence[Any]) -> bool:
    """Whether every value of a column (None: absent) holds ``checks``, and each item ``items``."""
    values = list(set(column) - {None})
    every_item = list({item for value in values for item in value}) if items else []
    return all(c.holds_all(values) for c in checks if values) and all(
        c.holds_all(every_item) for c in items if every_item
    )


# Admin URLs in the form LIST-6 compares (lower case, explicit port, no %, no trailing slash, no
# punycode label, an IPv4 address or a name) and within the schema's pattern: Dynamo writes these,
# and such a URL is its own key and has a usable host. One match over all of them, joined.
_OCTET = r"(?:[1-9]?[0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5])"
_CANONICAL_ADMIN = (
    rf"https?://(?:(?:{_OCTET}\.){{3}}{_OCTET}"
    r"|(?:(?!xn--)[a-z0-9_-]+\.)*(?!xn--)[0-9]*[a-z_-][a-z0-9_-]*)"
    r":(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
    r"(?:/[\x21\x22\x24\x26-\x3e\x40-\x7e]*[\x21\x22\x24\x26-\x2e\x30-\x3e\x40-\x7e])?"
)
_CANONICAL_ADMINS = re.compile(r"(?:" + _CANONICAL_ADMIN + r"\n)*+\Z").match
#: The members the semantic rules read (a _Listing's columns), a worker's identity first.
_IDENTITY = ("namespace", "component", "endpoint", "instance_id")
_RULE_MEMBERS = (*_IDENTITY, "request_plane_url", "routes", "admin_base_url")
_RULE_ROW = operator.attrgetter(*_RULE_MEMBERS)


def _label(worker: Any) -> str | None:
    """A worker's label (typed, or a parsed JSON value), as far as it can be named."""
    if isinstance(worker, msgspec.Struct):
        return "{}.{}.{}#{}".format(*_RULE_ROW(worker)[:4])
    return entry_label(worker)


class _Fallback(Exception):
    """The refusal path cannot vouch for this body: the exhaustive path decides."""


class _Listing:
    """The workers as the semantic rules read them: each member's usable value by column."""

    def __init__(self, columns: Mapping[str, Sequence[Any]], scope: Any, workers: Sequence[Any]):
        self.columns, self.workers = columns, workers
        self.scope = scope if isinstance(scope, str) else None

    def label(self, i: int) -> str | None:
        return _label(self.workers[i])

    def violation(self, req: str, i: int, tail: str, expected: str, found: str) -> Violation:
        pointer = f"/workers/{i}{tail}"
        return Violation(req, pointer, expected=expected, found=found, worker=self.label(i))

    @cached_property
    def keys(self) -> list[tuple[Any, ...]]:
        """Each worker's identity, None for a part that cannot be read."""
        return list(zip(*(self.columns[name] for name in _IDENTITY), strict=True))

    @cached_property
    def identities(self) -> list[tuple[int, tuple[Any, ...]]]:
        """(index, identity) of every worker whose identity can be read, in listing order."""
        return [(i, k) for i, k in enumerate(self.keys) if None not in k]

    @cached_property
    def increasing(self) -> bool:
        """Whether the identities strictly increase: then LIST-1 and LIST-2 hold, unwalked."""
        with contextlib.suppress(TypeError):  # None against a part: the rules walk them
            return all(map(operator.lt, self.keys, islice(self.keys, 1, None)))
        return False

    @cached_property
    def present(self) -> list[tuple[int, str]]:
        """(index, admin_base_url) of every usable admin URL."""
        return [(i, a) for i, a in enumerate(self.columns["admin_base_url"]) if a is not None]

    @cached_property
    def canonical(self) -> bool:
        """Whether every usable admin URL is in LIST-6's form (one match over them all)."""
        joined = "\n".join(a for _, a in self.present) + "\n"
        return joined.count("\n") == len(self.present) and _CANONICAL_ADMINS(joined) is not None

    @cached_property
    def admins(self) -> list[tuple[int, str, str | None, str]]:
        """(index, admin_base_url, host problem or None, the endpoint LIST-6 compares)."""
        canonical = self.canonical
        return [
            (i, a, None, a)
            if canonical or _CANONICAL_ADMINS(a + "\n")
            else (i, a, url_host_problem(a), admin_key(a))
            for i, a in self.present
        ]


def _sorted_by_identity(listing: _Listing) -> Iterator[Violation]:
    """LIST-1: workers sorted by identity (a repeated identity is LIST-2's)."""
    if listing.increasing:
        return
    seen: set[tuple[Any, ...]] = set()
    previous: tuple[int, tuple[Any, ...]] | None = None
    for i, key in listing.identities:
        if key not in seen:
            seen.add(key)
            if previous is not None and key < previous[1]:
                k = previous[0]
                what = "workers sorted by (namespace, component, endpoint, instance_id)"
                found = f"{listing.label(i)} after {listing.label(k)} (/workers/{k})"
                yield listing.violation("LIST-1", i, "", what, found)
            previous = (i, key)


def _unique_identity(listing: _Listing) -> Iterator[Violation]:
    """LIST-2: no (namespace, component, endpoint, instance_id) listed twice."""
    first: dict[tuple[Any, ...], int] = {}
    for i, key in [] if listing.increasing else listing.identities:
        j = first.setdefault(key, i)
        if j != i:
            what = "a unique (namespace, component, endpoint, instance_id)"
            found = f"the same identity {listing.label(i)} as /workers/{j}"
            yield listing.violation("LIST-2", i, "", what, found)


def _request_plane_url_matches(listing: _Listing) -> Iterator[Violation]:
    """LIST-3: request_plane_url is dyn://namespace.component.endpoint of the worker."""
    c = listing.columns
    expected = list(map(request_plane_url, c["namespace"], c["component"], c["endpoint"]))
    for i, (want, url) in enumerate(zip(expected, c["request_plane_url"], strict=True)):
        if url is not None and want != url and None not in listing.keys[i][:3]:
            what = f"{want!r} (dyn://namespace.component.endpoint of this worker)"
            yield listing.violation("LIST-3", i, "/request_plane_url", what, repr(url))


def _routes_sorted(listing: _Listing) -> Iterator[Violation]:
    """LIST-4: routes sorted ascending by code point (the first step down is reported)."""
    steps = {
        r: next((j for j in range(1, len(r)) if r[j] < r[j - 1]), 0)
        for r in set(listing.columns["routes"])
        if r is not None
    }
    for i, routes in enumerate(listing.columns["routes"] if any(steps.values()) else ()):
        j = steps.get(routes, 0)
        if j:
            found = f"{routes[j]!r} after {routes[j - 1]!r}"
            what = "routes sorted ascending by code point"
            yield listing.violation("LIST-4", i, f"/routes/{j}", what, found)


def _namespace_in_scope(listing: _Listing) -> Iterator[Violation]:
    """LIST-5: every worker's namespace is the body's namespace or starts with it."""
    scope, names = listing.scope, listing.columns["namespace"]
    outside = (
        set() if scope is None else {n for n in set(names) - {None} if not n.startswith(scope)}
    )
    for i, name in enumerate(names if outside else ()):
        if name in outside:
            what = f"the body's namespace {scope!r} or a namespace starting with it"
            yield listing.violation("LIST-5", i, "/namespace", what, repr(name))


def _unique_admin_endpoint(listing: _Listing) -> Iterator[Violation]:
    """LIST-6: no two workers advertise the same admin endpoint (compared as the pool calls it)."""
    if listing.canonical and len({a for _, a in listing.present}) == len(listing.present):
        return
    seen: dict[str, tuple[int, str]] = {}
    for i, admin, problem, key in listing.admins:
        if problem is None and seen.setdefault(key, (i, admin))[0] != i:
            j, other = seen[key]
            same = "" if other == admin else f" as {clip(other)!r}"
            found = f"{clip(admin)!r}, the same endpoint ({clip(key)}){same} advertised by "
            found += f"{listing.label(j)} (/workers/{j})"
            what = "an admin_base_url no other worker advertises"
            yield listing.violation("LIST-6", i, "/admin_base_url", what, found)


def _admin_host_usable(listing: _Listing) -> Iterator[Violation]:
    """WORKER-8 (its part the pattern cannot say): an admin_base_url host the admin pool can use."""
    for i, admin, problem, _ in [] if listing.canonical else listing.admins:
        if problem is not None:
            found = f"{clip(admin)!r}: {clip(problem)}"
            what = "an admin_base_url the admin pool can use"
            yield listing.violation("WORKER-8", i, "/admin_base_url", what, found)


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


def _semantic(workers: Sequence[Any], bad: set[tuple[int, str]], scope: Any) -> list[Violation]:
    """Every semantic rule over the workers, skipping members the schema refused (``bad``)."""
    rows = []
    for w in workers:
        if isinstance(w, msgspec.Struct):
            row = list(_RULE_ROW(w))
        elif isinstance(w, Mapping):
            row = [v if type(v) is str else None for v in map(w.get, _RULE_MEMBERS)]
            row[3] = _integral(w.get("instance_id"))
            routes: Any = w.get("routes")
            strings = type(routes) is list and all(type(r) is str for r in routes)
            row[5] = tuple(routes) if strings else None
        else:
            row = [None] * len(_RULE_MEMBERS)
        rows.append(row)
    for i, name in bad:
        if name in _RULE_MEMBERS and name != "instance_id":
            rows[i][_RULE_MEMBERS.index(name)] = None
    columns = dict(zip(_RULE_MEMBERS, zip(*rows, strict=True) if rows else [()] * 7, strict=True))
    listing = _Listing(columns, scope, workers)
    return [v for rule in SEMANTIC_RULES.values() for v in rule(listing)]


def _verdict(data: object) -> tuple[list[Violation], Snapshot | None]:
    try:  # a lone surrogate, or values that are not JSON's: only the exhaustive path can say more
        if isinstance(data, bytes | bytearray | memoryview | str):
            raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        elif isinstance(data, Mapping):
            raw = json.dumps(data, allow_nan=False).encode()
        else:
            return _exhaustive(data)
    except (TypeError, ValueError):  # UnicodeEncodeError is a ValueError
        return _exhaustive(data)
    try:
        snapshot = _DECODER.decode(raw)
    except _DECODE_ERRORS:
        return _refused(raw)
    columns = _columns(snapshot.workers)
    listing = _Listing(columns, snapshot.namespace, snapshot.workers)
    if (
        any(map(_for_jsonschema, snapshot.workers))
        or not all(
            _holds(*checks, columns[name])
            for name, checks in _UNCARRIED.items()
            if not (listing.canonical and name == "admin_base_url")  # within the pattern
        )
        or any(True for rule in SEMANTIC_RULES.values() for _ in rule(listing))
    ):
        return _refused(raw)
    # Every string of the text is one the snapshot holds (the body's 3 names and its namespace,
    # then the workers'): no unknown, repeated or null member, no variant's marker.
    if raw.count(b'"') == 2 * (4 + _strings(columns)) or (
        _text_holds_only(raw) and not may_be_variant(raw)
    ):
        return [], snapshot
    return _exhaustive(raw)


def _text_holds_only(raw: bytes) -> bool:
    """Whether the text parses strictly, repeats no defined member and has no null in one."""
    parsed = parse(raw)
    if isinstance(parsed, Violation) or next(_repeated_members(parsed), None) is not None:
        return False
    return not any(
        any(w.get(k, 0) is None for k in WORKER_FIELDS)
        or any(w["transport"].get(k, 0) is None for k in _TRANSPORT_KEYS)
        for w in parsed["workers"]
    )


def _holds_top(body: dict[str, Any]) -> bool:
    """Whether the body's members but workers hold the model (then the schema too)."""
    try:
        return bool(msgspec.convert({**body, "workers": ()}, Snapshot))
    except msgspec.ValidationError:
        return False


def _decoded(entry: msgspec.Raw) -> Any:
    try:
        return _ENTRY.decode(entry)
    except _DECODE_ERRORS:
        return None


def _fragments(texts: list[bytes]) -> list[Any]:
    """Some values of the body parsed strictly, in one parse (as an array of them), or _Fallback."""
    if any(text.count(b"[") + text.count(b"{") > MAX_DEPTH - 3 for text in texts):
        raise _Fallback  # depth is judged on the body
    parsed = parse(b"[" + b",".join(texts) + b"]", shallow=True)
    if isinstance(parsed, Violation):  # its offsets are the fragments', not the body's
        raise _Fallback
    return typing.cast(list[Any], parsed)


def _refused(raw: bytes) -> tuple[list[Violation], Snapshot | None]:
    """Every violation of a body the models or the table refuse: the workers msgspec types by the
    table, the others (and those jsonschema's to judge) parsed and judged by jsonschema; what the
    text could hide (unknown, repeated or null members, variants, text errors) exhaustively."""
    try:
        if (
            b"system_routes" in raw
            or b"weight_transfer_backend" in raw
            or (b"null" in raw and _NULL.search(raw))
        ):
            raise _Fallback  # a variant's markers (VERSION-1), a null: judged on the whole body
        top = _TOP.decode(raw)
        workers_text = top.pop("workers")
        others = [bytes(value) for value in top.values()]
        body = dict(zip(top, _fragments(others), strict=True))
        try:  # every entry at once, else one by one (those msgspec cannot type are None)
            workers: list[Any] = list(_WORKERS.decode(workers_text))
            entries: list[msgspec.Raw] | None = None
        except _DECODE_ERRORS:
            entries = _ENTRIES.decode(workers_text)
            workers = [_decoded(entry) for entry in entries]
        # A worker msgspec cannot type, or one jsonschema's to judge, is parsed and judged by it.
        typed = [i for i, w in enumerate(workers) if w is not None and not _for_jsonschema(w)]
        columns = _columns([workers[i] for i in typed])
        suspects = sorted(set(range(len(workers))) - set(typed))
        entries = entries if entries is not None or not suspects else _ENTRIES.decode(workers_text)
        texts = [bytes(entries[i]) for i in suspects] if entries is not None else []
        for i, value in zip(suspects, _fragments(texts), strict=True):
            workers[i] = value
        quotes = 2 * (len(top) + 1) + sum(t.count(b'"') for t in [*others, *texts])
        if "namespace" not in body or quotes + 2 * _strings(columns) != raw.count(b'"'):
            raise _Fallback  # a string the typed entries do not account for: unknown or repeated
        listed = {**body, "workers": workers}
        top_errors = [] if _holds_top(body) else _validator().iter_errors({**body, "workers": []})
        found, bad = _schema_violations(listed, top_errors)
        for name, (checks, items) in _CHECKS.items():
            if _holds(checks, items, columns[name]):
                continue
            values = set(columns[name]) - {None}
            failing = values if items else {v for c in checks for v in filter(c.fails, values)}
            memo = {value: _judged(name, value) for value in failing}
            for i, value in zip(typed, columns[name], strict=True):
                for requirement, tail, expected, text in memo.get(value, ()):
                    bad.add((i, name))
                    where, label = f"/workers/{i}/{name}{tail}", _label(workers[i])
                    found.append(
                        Violation(requirement, where, expected=expected, found=text, worker=label)
                    )
        for i in suspects:
            errors = _entry_validator().iter_errors(workers[i])
            entry_found, entry_bad = _schema_violations(workers[i], errors, head=["workers", i])
            found += entry_found
            bad |= entry_bad
        found += _semantic(workers, bad, body["namespace"])
        found += _repeated_members(listed, suspects)
        if not found:
            raise _Fallback  # nothing the table names: the reference decides
        return sorted(found, key=lambda v: _pointer_sort_key(v.pointer)), None
    except (_Fallback, KeyError, *_DECODE_ERRORS):
        return _exhaustive(raw)


def _exhaustive(data: object) -> tuple[list[Violation], Snapshot | None]:
    """The reference verdict: the strict parser (on text), jsonschema and the semantic rules."""
    parsed = parse(data) if isinstance(data, bytes | str) else data
    if isinstance(parsed, Violation):
        return [parsed], None
    if depth(parsed) > MAX_DEPTH:
        return [TOO_DEEP], None
    dialect = dialect_violations(parsed)  # another protocol: refused as a whole, DIALECT-1 first
    if dialect:
        return dialect, None
    variants = version_violations(parsed)  # known v1 variants by name first (VERSION-1)
    violations, bad = _schema_violations(parsed, _validator().iter_errors(parsed))
    violations += _semantic_violations(parsed, bad)
    violations += _repeated_members(parsed)
    if violations or variants:
        violations.sort(key=lambda v: _pointer_sort_key(v.pointer))
        return [*variants, *violations], None
    return [], _to_snapshot(parsed)


def _semantic_violations(parsed: object, bad: set[tuple[int, str]]) -> list[Violation]:
    """Every semantic rule over a parsed body; members the schema already refused are skipped."""
    if not isinstance(parsed, Mapping) or not isinstance(parsed.get("workers"), list):
        return []
    return _semantic(parsed["workers"], bad, parsed.get("namespace"))


_TRANSPORT_KEYS = ("tcp", "nats_tcp", "http")


def _repeated_members(parsed: Any, entries: Iterable[int] | None = None) -> Iterator[Violation]:
    """BODY-6: a defined member written twice in the body, a worker or a transport (``entries``:
    only these workers'); names inside unknown members are not judged (BODY-5), as serde does."""
    workers = parsed.get("workers") if isinstance(parsed, dict) else None
    workers = workers if isinstance(workers, list) else []
    top = ("protocol_version", "namespace", "workers")
    objects: list[tuple[Any, Sequence[str], list[Any]]] = [(parsed, top, [])]
    for i in range(len(workers)) if entries is None else entries:
        transport = workers[i].get("transport") if isinstance(workers[i], dict) else None
        objects.append((workers[i], WORKER_FIELDS, ["workers", i]))
        objects.append((transport, _TRANSPORT_KEYS, ["workers", i, "transport"]))
    for obj, defined, path in objects:
        repeated = obj.repeated if isinstance(obj, Object) else {}
        names = sorted((n, c) for n, c in repeated.items() if n in defined)
        if names:
            listed = ", ".join(f"{n!r} {c} times" for n, c in names)
            found = f"{clip(listed)} (a parser keeps one value silently: which one differs between"
            found += " parsers)"
            label, what = entry_label(obj) if path else None, "each member name once per object"
            yield Violation("BODY-6", json_pointer(path), expected=what, found=found, worker=label)


def _schema_violations(
    parsed: object, errors: Iterable[Any], head: Sequence[str | int] = ()
) -> tuple[list[Violation], set[tuple[int, str]]]:
    """jsonschema's ``errors`` about ``parsed`` (at ``head``) as violations, and the members they
    refuse (worker index, member name)."""
    out: list[Violation] = []
    seen: set[tuple[str, str]] = set()
    bad: set[tuple[int, str]] = set()
    for error in errors:
        schema = error.schema if isinstance(error.schema, dict) else {}
        requirement = schema.get("x-requirement") or "BODY-1"
        description = schema.get("description", "a value the schema allows")
        path = [*head, *error.absolute_path]
        if error.validator == "required":  # one violation per missing member
            instance = error.instance if isinstance(error.instance, Mapping) else {}
            missing = [p for p in error.validator_value if p not in instance]
            items = [([*path, p], f"property {p!r} ({description})", "it missing") for p in missing]
        else:
            more = getattr(error, "more_items", 0)
            rest = f" (and {more} more such items after it, not listed)" if more else ""
            items = [(path, description, _render(error.instance, error.validator) + rest)]
        for where, expected, what in items:
            pointer = json_pointer(where)
            if (requirement, pointer) in seen:
                continue  # e.g. transport "x": both "type" and "oneOf" fail; one defect, one entry
            seen.add((requirement, pointer))
            if len(where) >= 2 and where[0] == "workers" and isinstance(where[1], int):
                bad.add((where[1], str(where[2]) if len(where) > 2 else ""))
            label = entry_label(parsed) if head else _label_at(parsed, where)
            out.append(Violation(requirement, pointer, expected=expected, found=what, worker=label))
    return out, bad


@cache
def _entry_validator() -> Any:
    """The validator of one entry of ``workers``: the root's items subschema beside its $defs."""
    root = _validator().schema
    schema = {**root["properties"]["workers"]["items"], "$defs": root["$defs"]}
    return type(_validator())(schema, format_checker=_validator().format_checker)


@cache
def _validator() -> Any:
    from jsonschema import Draft202012Validator, FormatChecker, ValidationError, validators

    def is_integer(_checker: object, value: object) -> bool:  # a zero fraction (1.0) too
        if isinstance(value, float):
            return value.is_integer()
        if isinstance(value, Decimal):
            return value.is_finite() and value == value.to_integral_value()
        return isinstance(value, int) and not isinstance(value, bool)

    # format "uint64" (instance_id) asserts an integer literal: 1.0 and 1e0 are integral, but a
    # u64 written as a float is what WORKER-2 forbids (a parser may round it through binary64).
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
        capped = schema.get("x-requirement") == "WORKER-5"
        for n, error in enumerate(every_item(validator, item_schema, instance, schema)):
            if capped and n == _ITEM_ERRORS:
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
    """The typed snapshot of a body the exhaustive path accepted (integral numbers as int)."""

    def ints(obj: Mapping[str, Any], *names: str) -> dict[str, Any]:
        return {**obj, **{n: int(obj[n]) for n in names if isinstance(obj.get(n), float | Decimal)}}

    workers = [ints(w, "instance_id", "world_size") for w in parsed["workers"]]
    return msgspec.convert({**ints(parsed, "protocol_version"), "workers": workers}, Snapshot)


def _integral(value: Any) -> int | None:
    """The value of an integral JSON number (``7``, ``7.0``, ``7e0``), else None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    # adjusted() bounds the work: 1e999999 is integral, but no identity needs its million digits.
    finite = isinstance(value, Decimal) and value.is_finite() and value.adjusted() < 40
    return int(value) if finite and value == value.to_integral_value() else None


def _label_at(parsed: Any, path: Sequence[Any]) -> str | None:
    """The label of the worker ``path`` lies in."""
    workers = (
        parsed.get("workers") if isinstance(parsed, Mapping) and path[:1] == ["workers"] else None
    )
    i = path[1] if len(path) > 1 else None
    ok = isinstance(workers, list) and isinstance(i, int) and i < len(workers)
    return entry_label(workers[i]) if ok else None  # type: ignore[index]


_JSON_TEXT = json.JSONEncoder(ensure_ascii=False, default=str).encode  # json.dumps's, built once


def _render(value: Any, keyword: str) -> str:
    if isinstance(value, Number | BigInt) or value is None:
        return "null" if value is None else clip(value.text)
    number = isinstance(value, int | Decimal) and not isinstance(value, bool)
    text = clip(str(value) if number else _JSON_TEXT(value))
    if keyword == "uniqueItems" and isinstance(value, list):
        dupes = _repeated(value)
        shown = ", ".join(clip(json.dumps(v, default=str), 60) for v in dupes[:5])
        more = f" and {len(dupes) - 5} more" if len(dupes) > 5 else ""
        return f"{text} (repeated: {shown}{more})"
    return text


def _json_key(value: Any) -> Any:
    """A hashable key equal for equal JSON values (1, 1.0 and 1e0 alike; true unlike 1)."""
    if isinstance(value, list | tuple):
        return (3, tuple(map(_json_key, value)))
    if isinstance(value, Mapping):
        return (4, frozenset((k, _json_key(v)) for k, v in value.items()))
    kinds = ((bool | None, 0), (int | float | Decimal, 1), (str, 2))
    return next(((k, value) for t, k in kinds if isinstance(value, t)), (5, id(value)))


def _repeated(items: list[Any]) -> list[Any]:
    """The items that occur more than once (first occurrence each, in order); linear time."""
    first: dict[Any, list[Any]] = {}
    for item in items:
        first.setdefault(_json_key(item), []).append(item)
    return [same[0] for same in first.values() if len(same) > 1]


def _pointer_sort_key(pointer: str) -> list[tuple[int, Any]]:
    return [(0, int(p)) if p.isdigit() else (1, p) for p in pointer.split("/")[1:]]
