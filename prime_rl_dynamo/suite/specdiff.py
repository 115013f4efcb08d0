"""Compare two versions of the contract: every difference, additive or breaking, for each party.

A JSON Schema of a response describes what a server sends and a client reads. A change that lets
the server send something the old schema refused (a loosened constraint, a new null, a removed or
renamed member, a wider type) breaks old **clients**; a change that refuses something the old
schema accepted (a tightened constraint, a new required member) breaks old **servers**. Either one
means ``protocol_version`` must change (SPEC.md section 6, VERSION-1). Constraints are compared by
witnesses: probe values, including each schema's own bounds and constants, run through both
subschemas, so a rule is classified by what it accepts, however it is spelled. OpenAPI documents
add their paths, operations, parameters and status codes. Pure: documents in, a report out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from prime_rl_dynamo.text import clip

__all__ = [
    "Change",
    "DiffReport",
    "diff_documents",
    "diff_paths",
    "load_acceptances",
    "protocol_version_of",
]

Effect = Literal["additive", "breaking"]
ADDITIVE: Effect = "additive"
BREAKING: Effect = "breaking"

# Keywords that only annotate: changing them changes no accepted value.
_ANNOTATIONS = frozenset(
    {"title", "description", "$comment", "examples", "example", "default", "$schema", "$id"}
)
# Keywords handled structurally (members, items, composition), not by witnesses.
_STRUCTURE = frozenset({"properties", "required", "items", "allOf", "$defs", "definitions"})


@dataclass(frozen=True, slots=True)
class Change:
    """One difference between OLD and NEW, and whom it breaks."""

    document: str
    location: str  # instance location: /workers/*/routes (``*``: every array item)
    kind: str  # e.g. "member removed", "constraint loosened", "operation added"
    detail: str
    clients: Effect
    servers: Effect

    @property
    def breaking(self) -> bool:
        """Whether the change breaks either party."""
        return BREAKING in (self.clients, self.servers)

    def __str__(self) -> str:
        return (
            f"{self.document} {self.location or '/'}: {self.kind}: {self.detail} "
            f"(clients: {self.clients}, servers: {self.servers})"
        )


@dataclass
class DiffReport:
    """Every change between two versions of the contract, and what it means for the version."""

    old_version: int | None
    new_version: int | None
    changes: list[Change] = field(default_factory=list)
    # Breaking changes the project accepted under the same protocol_version, with the reason
    # (``--accept FILE``), and acceptances that matched no change (stale: they fail the gate).
    accepted: list[tuple[Change, str]] = field(default_factory=list)
    unused_acceptances: list[dict[str, str]] = field(default_factory=list)

    @property
    def breaking(self) -> list[Change]:
        """The changes that break clients or servers, less the accepted ones."""
        taken = {id(c) for c, _ in self.accepted}
        return [c for c in self.changes if c.breaking and id(c) not in taken]

    def accept(self, entries: Sequence[Mapping[str, str]]) -> None:
        """Mark the breaking changes each entry names (document, location, kind) as accepted.

        An entry is a deliberate decision written down with its ``reason``, like oasdiff's
        ignore file: for a clarification of the same protocol version that no conformant peer can
        notice (e.g. refusing URLs no client could ever call). Every entry must match a change.
        """
        for entry in entries:
            hits = [
                c
                for c in self.changes
                if c.breaking
                and c.document == entry.get("document")
                and c.location == entry.get("location")
                and c.kind == entry.get("kind")
            ]
            if not hits:
                self.unused_acceptances.append(dict(entry))
            self.accepted.extend((c, str(entry.get("reason", ""))) for c in hits)

    @property
    def version_must_change(self) -> bool:
        """Whether protocol_version must change (any change breaks a party)."""
        return bool(self.breaking)

    @property
    def ok(self) -> bool:
        """False when a breaking change keeps the same protocol_version (VERSION-1)."""
        if self.unused_acceptances:
            return False
        return not (self.version_must_change and self.old_version == self.new_version)

    def verdict(self) -> str:
        """One line: whether protocol_version must change, and whether NEW did."""
        n = len(self.breaking)
        if self.unused_acceptances:
            return (
                f"{len(self.unused_acceptances)} acceptance(s) match no change: remove them "
                "(a stale acceptance could hide a later break)"
            )
        if not self.changes:
            return "no differences: protocol_version stays"
        if not n:
            taken = len(self.accepted)
            also = f" and {taken} accepted breaking change(s)" if taken else ""
            return (
                f"{len(self.changes) - taken} additive change(s){also}: protocol_version may "
                f"stay at {self.old_version}"
            )
        if self.old_version == self.new_version:
            return (
                f"{n} breaking change(s) but protocol_version stays at {self.new_version}: it must "
                "change (VERSION-1)"
            )
        return (
            f"{n} breaking change(s); protocol_version changes from {self.old_version} to "
            f"{self.new_version}, as it must"
        )

    def to_json(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        accepted = {id(c): reason for c, reason in self.accepted}
        return {
            "old_version": self.old_version,
            "new_version": self.new_version,
            "version_must_change": self.version_must_change,
            "ok": self.ok,
            "verdict": self.verdict(),
            "changes": [
                {
                    "document": c.document,
                    "location": c.location,
                    "kind": c.kind,
                    "detail": c.detail,
                    "clients": c.clients,
                    "servers": c.servers,
                    "accepted": accepted.get(id(c)),
                }
                for c in self.changes
            ],
            "unused_acceptances": self.unused_acceptances,
        }


# --------------------------------------------------------------------------------------------
# Public API


def protocol_version_of(document: Mapping[str, Any]) -> int | None:
    """The ``protocol_version`` const of a listing schema or of an OpenAPI document's listing."""
    for schema in _listing_schemas(document):
        properties = schema.get("properties")
        version = properties.get("protocol_version") if isinstance(properties, dict) else None
        if not isinstance(version, dict):
            continue
        if isinstance(version.get("const"), int):
            return int(version["const"])
        enum = version.get("enum")
        if isinstance(enum, list) and enum and all(isinstance(v, int) for v in enum):
            return int(max(enum))
    return None


def diff_documents(name: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    """Every change between two versions of one document (a JSON Schema or an OpenAPI 3.1 one)."""
    if "openapi" in old or "openapi" in new:
        return list(_diff_openapi(name, old, new))
    return list(_SchemaDiff(name, old, new).run())


def load_acceptances(path: Path) -> list[dict[str, str]]:
    """Read an acceptance file: ``{"accepted": [{document, location, kind, reason}, ...]}``."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeError, ValueError) as exc:
        raise ValueError(f"{path}: cannot read the acceptance file: {exc}") from None
    except RecursionError:
        raise ValueError(f"{path}: expected an acceptance file (JSON); nested too deep") from None
    entries = data.get("accepted") if isinstance(data, dict) else None
    fields = ("document", "location", "kind", "reason")
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and all(isinstance(e.get(f), str) for f in fields) for e in entries
    ):
        raise ValueError(
            f'{path}: expected {{"accepted": [{{document, location, kind, reason}}, ...]}} '
            "with every field a string"
        )
    return entries


def diff_paths(old: Path, new: Path) -> DiffReport:
    """Compare two contract files, or two directories holding them (paired by relative path).

    In a directory the contract is ``rl-*.schema.json`` and ``openapi/*.openapi.json``; a file
    only in NEW is an added document, a file only in OLD a removed one.
    """
    pairs: list[tuple[str, Path | None, Path | None]]
    if old.is_dir() or new.is_dir():
        if not (old.is_dir() and new.is_dir()):
            raise ValueError(f"compare a directory with a directory: {old} and {new}")
        olds, news = _contract_files(old), _contract_files(new)
        pairs = [(n, olds.get(n), news.get(n)) for n in sorted(olds.keys() | news.keys())]
    else:
        pairs = [(new.name, old, new)]
    changes: list[Change] = []
    old_version = new_version = None
    for name, old_path, new_path in pairs:
        old_doc = _load(old_path) if old_path else None
        new_doc = _load(new_path) if new_path else None
        for path, doc in ((old_path, old_doc), (new_path, new_doc)):
            if doc is not None:
                check_document(str(path), doc)
        if old_doc is not None:
            old_version = old_version or protocol_version_of(old_doc)
        if new_doc is not None:
            new_version = new_version or protocol_version_of(new_doc)
        if old_doc is None:
            changes.append(Change(name, "", "document added", name, ADDITIVE, ADDITIVE))
        elif new_doc is None:
            changes.append(Change(name, "", "document removed", name, BREAKING, BREAKING))
        else:
            _same_kind(old_path, old_doc, new_path, new_doc)
            try:
                changes.extend(diff_documents(name, old_doc, new_doc))
            except RecursionError:
                raise ValueError(
                    f"{old_path} and {new_path}: expected schemas whose references and nesting "
                    f"end within {_MAX_DEPTH} levels; found a reference cycle or deeper nesting"
                ) from None
    return DiffReport(old_version, new_version, changes)


def _kind(document: Any) -> str:
    return (
        "an OpenAPI document"
        if isinstance(document, Mapping) and "openapi" in document
        else ("a JSON Schema")
    )


def _same_kind(old_path: Any, old: Any, new_path: Any, new: Any) -> None:
    """ValueError (a usage error) when one side is an OpenAPI document and the other a JSON
    Schema: their differences would read as operations added or removed, not as changes."""
    if _kind(old) != _kind(new):
        raise ValueError(
            f"{old_path} is {_kind(old)} and {new_path} is {_kind(new)}: compare two JSON "
            "Schemas or two OpenAPI documents (or two contract directories)"
        )


def _swapped(detail: str) -> str:
    """A response's detail said of a request, where the client writes and the server reads."""
    return re.sub(
        r"\b(client|server)(s?)\b",
        lambda m: ("server" if m[1] == "client" else "client") + m[2],
        detail,
    )


# --------------------------------------------------------------------------------------------
# Input checks: a document the comparison cannot read is a usage error with a pointer


_MAX_DEPTH = 64


def _ref_of(node: Any) -> str:
    ref = node.get("$ref") if isinstance(node, dict) else None
    return ref if isinstance(ref, str) else ""


def pointer_target(root: Any, ref: str) -> Any:
    """What a local ``$ref`` (``#/a/0/b``) points to in ``root``, or ValueError saying which step
    of the pointer finds nothing."""
    target: Any = root
    walked = "#"
    for raw in ref[1:].split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(target, list):
            if not (part.isascii() and part.isdigit()) or int(part) >= len(target):
                raise ValueError(
                    f"$ref {ref!r}: expected an index 0..{len(target) - 1} into the array at "
                    f"{walked}, found {part!r}"
                )
            target = target[int(part)]
        elif isinstance(target, dict):
            if part not in target:
                raise ValueError(f"$ref {ref!r}: expected a member {part!r} at {walked}; none")
            target = target[part]
        else:
            raise ValueError(
                f"$ref {ref!r}: expected an object or array at {walked}, found "
                f"{type(target).__name__}"
            )
        walked += "/" + raw
    return target


def _validator_class() -> Any:
    """Draft 2020-12 with an ``enum`` that looks a value up in a set: linear in the enum's size
    over every witness, where jsonschema compares each value with each member."""
    from jsonschema import Draft202012Validator, validators
    from jsonschema.exceptions import ValidationError

    sets: dict[int, tuple[Any, frozenset[str]]] = {}

    def enum(validator: Any, enums: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if not isinstance(enums, list):
            yield from Draft202012Validator.VALIDATORS["enum"](validator, enums, instance, schema)
            return
        entry = sets.get(id(enums))
        if entry is None or entry[0] is not enums:
            entry = (enums, frozenset(_json_key(v) for v in enums))
            sets[id(enums)] = entry
        if _json_key(instance) not in entry[1]:
            yield ValidationError(f"{json.dumps(instance)[:40]} is not one of the enum's values")

    return validators.extend(Draft202012Validator, {"enum": enum})


def _json_key(value: Any) -> str:
    """Equal JSON values give equal keys (1 and 1.0 alike, true and 1 not), as JSON Schema's
    equality has it."""

    if isinstance(value, str):  # the common case, and no JSON text starts with NUL
        return "\x00" + value

    def norm(v: Any) -> Any:
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, dict):
            return {str(k): norm(x) for k, x in v.items()}
        if isinstance(v, list):
            return [norm(x) for x in v]
        return v

    return json.dumps(norm(value), sort_keys=True, default=str)


def check_document(name: str, document: Mapping[str, Any]) -> None:
    """ValueError unless ``document`` is one the comparison can read: a valid draft 2020-12 JSON
    Schema, or an OpenAPI document whose paths, operations, parameters, responses and schemas
    have their shapes; every local ``$ref`` must point somewhere. The message has a pointer."""
    try:
        _refs_resolve(name, document, document, "", 0)
        if "openapi" in document:
            _check_openapi(name, document)
        else:
            _check_schema(name, document, "")
    except RecursionError:
        raise ValueError(
            f"{name}: expected a document nested at most {_MAX_DEPTH} levels deep"
        ) from None


_TYPES = frozenset({"null", "boolean", "object", "array", "number", "string", "integer"})
_COUNTS = (
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minContains",
    "maxContains",
)
_NUMBERS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_ONE = (
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
)


def _check_schema(name: str, schema: Any, where: str, depth: int = 0) -> None:
    """The keywords the comparison reads have the shapes draft 2020-12 gives them (a linear walk:
    the meta-schema's own validation costs milliseconds per member)."""

    def refuse(at: str, expected: str, value: Any) -> ValueError:
        found = clip(json.dumps(value, default=str), 60)
        return ValueError(
            f"{name}: at {at or '/'}: expected {expected} (a JSON Schema, draft 2020-12), "
            f"found {found}"
        )

    if isinstance(schema, bool):
        return
    if not isinstance(schema, dict):
        raise refuse(where, "a schema (an object or a boolean)", schema)
    if depth > _MAX_DEPTH:
        raise ValueError(f"{name}: at {where}: expected schemas nested at most {_MAX_DEPTH} deep")
    kind = schema.get("type")
    if "type" in schema:
        kinds = kind if isinstance(kind, list) else [kind]
        if not kinds or any(not isinstance(k, str) or k not in _TYPES for k in kinds):
            raise refuse(f"{where}/type", f"one of {', '.join(sorted(_TYPES))}", kind)
    required = schema.get("required")
    if "required" in schema and not (
        isinstance(required, list) and all(isinstance(r, str) for r in required)
    ):
        raise refuse(f"{where}/required", "an array of member names", required)
    for key in ("enum",):
        if key in schema and not isinstance(schema[key], list):
            raise refuse(f"{where}/{key}", "an array of values", schema[key])
    for key in _COUNTS:
        value = schema.get(key, 0)
        if key in schema and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise refuse(f"{where}/{key}", "a whole number >= 0", value)
    for key in _NUMBERS:
        value = schema.get(key, 0)
        if key in schema and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise refuse(f"{where}/{key}", "a number", value)
    for key in ("pattern", "format"):
        if key in schema and not isinstance(schema[key], str):
            raise refuse(f"{where}/{key}", "a string", schema[key])
    if isinstance(schema.get("pattern"), str):
        try:
            re.compile(schema["pattern"])
        except re.error as exc:
            raise refuse(
                f"{where}/pattern", f"a regular expression ({exc})", schema["pattern"]
            ) from None
    if "uniqueItems" in schema and not isinstance(schema["uniqueItems"], bool):
        raise refuse(f"{where}/uniqueItems", "true or false", schema["uniqueItems"])
    if "$ref" in schema and not isinstance(schema["$ref"], str):
        raise refuse(f"{where}/$ref", "a URI reference (a string)", schema["$ref"])
    for key in _SCHEMA_MAPS:
        if key in schema:
            members = schema[key]
            if not isinstance(members, dict):
                raise refuse(f"{where}/{key}", "an object of schemas", members)
            for member, sub in members.items():
                _check_schema(name, sub, f"{where}/{key}/{member}", depth + 1)
    for key in _SCHEMA_LISTS:
        if key in schema:
            parts = schema[key]
            if not isinstance(parts, list) or (key != "prefixItems" and not parts):
                raise refuse(f"{where}/{key}", "a non-empty array of schemas", parts)
            for i, sub in enumerate(parts):
                _check_schema(name, sub, f"{where}/{key}/{i}", depth + 1)
    for key in _SCHEMA_ONE:
        if key in schema:
            _check_schema(name, schema[key], f"{where}/{key}", depth + 1)


def _refs_resolve(name: str, root: Any, node: Any, where: str, depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise ValueError(
            f"{name}: at {where}: expected a document nested at most {_MAX_DEPTH} levels deep"
        )
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#"):
            try:
                pointer_target(root, ref)
            except ValueError as exc:
                raise ValueError(f"{name}: at {where or '/'}: {exc}") from None
        for key, value in node.items():
            _refs_resolve(name, root, value, f"{where}/{key}", depth + 1)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _refs_resolve(name, root, value, f"{where}/{i}", depth + 1)


def _check_openapi(name: str, doc: Mapping[str, Any]) -> None:
    def expect(value: Any, kind: type, where: str, what: str) -> Any:
        if not isinstance(value, kind):
            found = "null" if value is None else type(value).__name__
            raise ValueError(f"{name}: at {where}: expected {what}, found {found}")
        return value

    def resolved(value: Any) -> Any:
        return _SchemaDiff._resolve(value, doc)

    def _check_content(holder: Mapping[str, Any], where: str) -> None:
        content = expect(
            holder.get("content", {}), dict, f"{where}/content", "an object of media types"
        )
        for media, entry in content.items():
            entry = expect(entry, dict, f"{where}/content/{media}", "a media type object")
            if "schema" in entry:
                _check_schema(name, entry["schema"], f"{where}/content/{media}/schema")

    paths = expect(doc.get("paths", {}), dict, "/paths", "an object of path items")
    for path, item in paths.items():
        at = f"/paths/{path}"
        item = expect(resolved(item), dict, at, "a path item object")
        for method in _METHODS:
            if method not in item:
                continue
            op = expect(item[method], dict, f"{at}/{method}", "an operation object")
            params = expect(op.get("parameters", []), list, f"{at}/{method}/parameters", "an array")
            for i, param in enumerate(params):
                param = expect(
                    resolved(param), dict, f"{at}/{method}/parameters/{i}", "a parameter object"
                )
                if "schema" in param:
                    _check_schema(name, param["schema"], f"{at}/{method}/parameters/{i}/schema")
            body = op.get("requestBody")
            if body is not None:
                body = expect(
                    resolved(body), dict, f"{at}/{method}/requestBody", "a request body object"
                )
                _check_content(body, f"{at}/{method}/requestBody")
            responses = expect(
                op.get("responses", {}), dict, f"{at}/{method}/responses", "an object of responses"
            )
            for status, response in responses.items():
                where = f"{at}/{method}/responses/{status}"
                response = expect(resolved(response), dict, where, "a response object")
                _check_content(response, where)
                expect(
                    response.get("headers", {}), dict, f"{where}/headers", "an object of headers"
                )
    components = expect(doc.get("components", {}), dict, "/components", "an object")
    schemas = expect(
        components.get("schemas", {}), dict, "/components/schemas", "an object of schemas"
    )
    for key, schema in schemas.items():
        _check_schema(name, schema, f"/components/schemas/{key}")


# --------------------------------------------------------------------------------------------
# JSON Schema


def _canonical(node: Any) -> str:
    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: strip(v)
                for k, v in value.items()
                if k not in _ANNOTATIONS and not str(k).startswith("x-")
            }
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return json.dumps(strip(node), sort_keys=True)


#: A member required (old, new) -> the change: kind, detail, clients' and servers' verdicts.
_REQUIRED_FLIPS = {
    (True, False): (
        "member made optional",
        "{!r} is no longer always sent: clients that rely on it break",
        BREAKING,
        ADDITIVE,
    ),
    (False, True): (
        "member made required",
        "{!r} must now always be sent: old servers may omit it",
        ADDITIVE,
        BREAKING,
    ),
}


class _SchemaDiff:
    """One JSON Schema (or the schemas of one OpenAPI response) compared, member by member."""

    def __init__(
        self,
        name: str,
        old_root: Mapping[str, Any],
        new_root: Mapping[str, Any],
        old: Any = None,
        new: Any = None,
    ) -> None:
        self.name = name
        self.old_root, self.new_root = old_root, new_root
        self.old = old_root if old is None else old
        self.new = new_root if new is None else new
        validator = _validator_class()
        self._old_validator = validator(dict(old_root))
        self._new_validator = validator(dict(new_root))
        # (old $ref, new $ref) pairs being compared: a recursive schema is compared once.
        self._active: set[tuple[str, str]] = set()

    def run(self) -> Iterator[Change]:
        yield from self._node(self.old, self.new, "")

    # -- resolution ----------------------------------------------------------------------------

    @staticmethod
    def _resolve(node: Any, root: Mapping[str, Any]) -> Any:
        """Follow local ``$ref`` chains, keeping sibling keywords."""
        seen = 0
        while isinstance(node, dict) and isinstance(node.get("$ref"), str) and seen < 32:
            ref = node["$ref"]
            if not ref.startswith("#"):
                break
            target = pointer_target(root, ref)
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            node = {**target, **siblings} if isinstance(target, dict) else target
            seen += 1
        return node

    def _members(self, node: Any, root: Mapping[str, Any]) -> tuple[dict[str, Any], set[str]]:
        """Declared members and unconditionally required names (node plus its allOf)."""
        node = self._resolve(node, root)
        if not isinstance(node, dict):
            return {}, set()
        members: dict[str, Any] = {}
        required: set[str] = set()
        for part in [node, *node.get("allOf", [])]:
            part = self._resolve(part, root)
            if not isinstance(part, dict):
                continue
            for key, sub in part.get("properties", {}).items():
                members.setdefault(key, sub)
            required.update(r for r in part.get("required", []) if isinstance(r, str))
        return members, required

    # -- comparison ----------------------------------------------------------------------------

    def _change(
        self, where: str, kind: str, detail: str, clients: Effect, servers: Effect
    ) -> Change:
        return Change(self.name, where, kind, detail, clients, servers)

    def _node(self, old: Any, new: Any, where: str) -> Iterator[Change]:
        refs = (_ref_of(old), _ref_of(new))
        if refs != ("", "") and refs in self._active:
            return  # a recursive schema: this pair is being compared further up already
        if where.count("/") > _MAX_DEPTH:
            raise ValueError(
                f"{self.name}: at {where}: expected a schema nested at most "
                f"{_MAX_DEPTH} levels deep"
            )
        self._active.add(refs)
        try:
            yield from self._node_body(old, new, where)
        finally:
            self._active.discard(refs)

    def _node_body(self, old: Any, new: Any, where: str) -> Iterator[Change]:
        old = self._resolve(old, self.old_root)
        new = self._resolve(new, self.new_root)
        old_members, old_required = self._members(old, self.old_root)
        new_members, new_required = self._members(new, self.new_root)
        yield from self._compare_members(
            old_members, new_members, old_required, new_required, where
        )
        old_items = old.get("items") if isinstance(old, dict) else None
        new_items = new.get("items") if isinstance(new, dict) else None
        if old_items is not None and new_items is not None:
            yield from self._node(old_items, new_items, f"{where}/*")
        elif old_items is not None or new_items is not None:
            gone = new_items is None
            yield self._change(
                where,
                "items rule removed" if gone else "items rule added",
                "array items are no longer constrained" if gone else "array items now constrained",
                BREAKING if gone else ADDITIVE,
                ADDITIVE if gone else BREAKING,
            )
        yield from self._constraints(old, new, where)

    def _compare_members(
        self,
        old: dict[str, Any],
        new: dict[str, Any],
        old_required: set[str],
        new_required: set[str],
        where: str,
    ) -> Iterator[Change]:
        removed = [k for k in old if k not in new]
        added = [k for k in new if k not in old]
        renamed: dict[str, str] = {}
        # Linear: added members by shape, each taken by the first removed one of that shape.
        by_shape: dict[str, list[str]] = {}
        for come in added:
            by_shape.setdefault(_canonical(self._resolve(new[come], self.new_root)), []).append(
                come
            )
        for shape_of in by_shape.values():
            shape_of.reverse()
        for gone in removed:
            candidates = by_shape.get(_canonical(self._resolve(old[gone], self.old_root)))
            if candidates:
                renamed[gone] = candidates.pop()
        for gone, come in renamed.items():
            yield self._change(
                f"{where}/{gone}",
                "member renamed",
                f"{gone!r} renamed to {come!r}: old clients miss {gone!r}, old servers miss "
                f"{come!r}",
                BREAKING,
                BREAKING,
            )
        for gone in removed:
            if gone in renamed:
                continue
            was = "required" if gone in old_required else "optional"
            yield self._change(
                f"{where}/{gone}",
                "member removed",
                f"{was} member {gone!r} removed: clients that read it lose it",
                BREAKING,
                ADDITIVE,
            )
        taken = set(renamed.values())
        for come in added:
            if come in taken:
                continue
            if come in new_required:
                yield self._change(
                    f"{where}/{come}",
                    "required member added",
                    f"new required member {come!r}: old servers do not send it",
                    ADDITIVE,
                    BREAKING,
                )
            else:
                yield self._change(
                    f"{where}/{come}",
                    "optional member added",
                    f"new optional member {come!r} (old clients ignore it, BODY-5)",
                    ADDITIVE,
                    ADDITIVE,
                )
        for key in old:
            if key not in new:
                continue
            flip = _REQUIRED_FLIPS.get((key in old_required, key in new_required))
            if flip is not None:
                kind, detail, clients, servers = flip
                yield self._change(f"{where}/{key}", kind, detail.format(key), clients, servers)
            yield from self._node(old[key], new[key], f"{where}/{key}")

    def _deep(self, node: Any, root: Mapping[str, Any], depth: int = 0) -> Any:
        """``node`` with every local reference replaced by its target (for comparison only)."""
        node = self._resolve(node, root)
        if depth > 16:
            return node
        if isinstance(node, dict):
            return {k: self._deep(v, root, depth + 1) for k, v in node.items()}
        if isinstance(node, list):
            return [self._deep(v, root, depth + 1) for v in node]
        return node

    def _constraints(self, old: Any, new: Any, where: str) -> Iterator[Change]:
        """Everything but members and items, classified by what each side accepts."""
        old_rest = self._deep(_rest(old), self.old_root)
        new_rest = self._deep(_rest(new), self.new_root)
        if _canonical(old_rest) == _canonical(new_rest):
            return
        old_check = self._old_validator.evolve(schema=_constraint_schema(old, self.old_root, self))
        new_check = self._new_validator.evolve(schema=_constraint_schema(new, self.new_root, self))
        loosened: list[Any] = []
        tightened: list[Any] = []
        for value in _witnesses(old, new, self):
            try:
                was, now = old_check.is_valid(value), new_check.is_valid(value)
            except (TypeError, ValueError, LookupError, AttributeError) as exc:  # odd keywords
                raise ValueError(
                    f"{self.name}: at {where or '/'}: expected a schema a validator can apply; "
                    f"applying it failed ({type(exc).__name__}: {str(exc)[:120]})"
                ) from None
            if now and not was:
                loosened.append(value)
            elif was and not now:
                tightened.append(value)
        changed = _changed_keywords(old_rest, new_rest)
        paths = list(dict.fromkeys(path for path, _, _ in changed))
        more = f" and {len(paths) - 5} more" if len(paths) > 5 else ""
        what = ", ".join(paths[:5]) + more or "constraints"
        if loosened and tightened:
            yield self._change(
                where,
                "constraint changed",
                f"{what}: now accepts {_show(loosened)} and refuses {_show(tightened)}",
                BREAKING,
                BREAKING,
            )
        elif loosened:
            yield self._change(
                where,
                "constraint loosened",
                f"{what}: now accepts {_show(loosened)}, which old clients refuse",
                BREAKING,
                ADDITIVE,
            )
        elif tightened:
            yield self._change(
                where,
                "constraint tightened",
                f"{what}: now refuses {_show(tightened)}, which old servers may send",
                ADDITIVE,
                BREAKING,
            )
        else:
            # No witness told them apart: say so, and count it as breaking to be safe.
            yield self._change(
                where,
                "constraint changed (unclassified)",
                f"{_show_changed(changed) or what} (no probe value tells how it changes what is "
                "accepted; treated as breaking)",
                BREAKING,
                BREAKING,
            )


def _strip_keys(node: Mapping[str, Any]) -> list[str]:
    return [k for k in node if k not in _ANNOTATIONS and not str(k).startswith("x-")]


_MISSING = object()


def _changed_keywords(old: Any, new: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """The innermost keywords that differ (``else/pattern``), each with its old and new value."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[tuple[str, Any, Any]] = []
        for key in sorted(set(_strip_keys(old)) | set(_strip_keys(new)), key=str):
            a, b = old.get(key, _MISSING), new.get(key, _MISSING)
            if a is _MISSING or b is _MISSING or _canonical(a) != _canonical(b):
                out += _changed_keywords(a, b, f"{path}/{key}" if path else str(key))
        return out
    if (
        isinstance(old, list)
        and isinstance(new, list)
        and len(old) == len(new)
        and any(isinstance(v, dict) for v in (*old, *new))
    ):  # subschemas (allOf, prefixItems) by position; an enum or a required list is one keyword
        out = []
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            if _canonical(a) != _canonical(b):
                out += _changed_keywords(a, b, f"{path}/{i}")
        return out
    return [(path.removesuffix("/$value"), old, new)]


def _show_changed(changed: list[tuple[str, Any, Any]]) -> str:
    def one(value: Any) -> str:
        if value is _MISSING:
            return "(absent)"
        text = json.dumps(value, ensure_ascii=False)
        return clip(text, 80)

    shown = [f"{path} {one(a)} -> {one(b)}" for path, a, b in changed[:3]]
    more = f"; and {len(changed) - 3} more" if len(changed) > 3 else ""
    return "; ".join(shown) + more


def _rest(node: Any) -> dict[str, Any]:
    if not isinstance(node, dict):
        return {"$value": node}
    rest = {k: v for k, v in node.items() if k not in _STRUCTURE}
    parts = [p for p in node.get("allOf", []) if isinstance(p, dict)]
    conditional = [
        {k: v for k, v in p.items() if k not in ("properties", "required")} for p in parts
    ]
    if any(_strip_keys(c) for c in conditional):
        rest["allOf"] = conditional
    return rest


def _constraint_schema(node: Any, root: Mapping[str, Any], diff: _SchemaDiff) -> Any:
    """The node without its members' own rules (those are compared member by member)."""
    if not isinstance(node, dict):
        return node
    out = {k: v for k, v in node.items() if k not in ("properties", "required", "items", "$defs")}
    if "allOf" in out:
        out["allOf"] = [
            {k: v for k, v in diff._resolve(p, root).items() if k not in ("properties", "required")}
            if isinstance(diff._resolve(p, root), dict)
            else p
            for p in out["allOf"]
        ]
    return out


def _collect(
    node: Any, root: Mapping[str, Any], diff: _SchemaDiff, out: dict[str, list[Any]]
) -> None:
    """Constants and bounds anywhere under ``node`` (refs followed once), for witnesses."""
    seen: set[int] = set()

    def walk(value: Any, depth: int) -> None:
        if depth > 12 or id(value) in seen:
            return
        seen.add(id(value))
        value = diff._resolve(value, root)
        if isinstance(value, dict):
            for key, sub in value.items():
                if key in ("const",):
                    out["values"].append(sub)
                elif key == "enum" and isinstance(sub, list):
                    out["values"].extend(sub)
                elif key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
                    if isinstance(sub, int | float) and not isinstance(sub, bool):
                        out["numbers"].append(sub)
                elif key in ("minLength", "maxLength") and isinstance(sub, int):
                    out["lengths"].append(sub)
                elif key in ("minItems", "maxItems") and isinstance(sub, int):
                    out["counts"].append(sub)
                elif key == "properties" and isinstance(sub, dict):
                    out["names"].extend(sub)
                if key != "properties":
                    walk(sub, depth + 1)
                elif isinstance(sub, dict):
                    for inner in sub.values():
                        walk(inner, depth + 1)
        elif isinstance(value, list):
            for item in value:
                walk(item, depth + 1)

    walk(node, 0)


_BASE_WITNESSES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -1,
    2,
    1.5,
    "",
    "x",
    "nccl",
    "http://h",
    # URLs a tightened URL rule may refuse (WORKER-8: host, port, IPv6 brackets, punycode).
    "http://h:8000/",
    "http://h:abc/",
    "http://h:8000:9000/",
    "http://[::1/",
    "http://999.1.1.1/",
    "http://xn--/",
    "http://h/",
    "http://h:8000/admin",
    "https://h/",
    "http://u@h/",
    "http://h/?q=1",
    "http://h/#f",
    "ftp://h/",
    "dyn://a.b.c",
    "10.0.0.1:1",
    [],
    ["a"],
    ["b", "a"],
    ["a", "a"],
    [""],
    [1],
    {},
    {"tcp": "x"},
    {"tcp": "x", "http": "y"},
    {"nats_tcp": "x"},
    {"http": "x"},
    {"tcp": 1},
    {"x": 1},
]


def _witnesses(old: Any, new: Any, diff: _SchemaDiff) -> list[Any]:
    found: dict[str, list[Any]] = {
        "values": [],
        "numbers": [],
        "lengths": [],
        "counts": [],
        "names": [],
    }
    _collect(old, diff.old_root, diff, found)
    _collect(new, diff.new_root, diff, found)
    values = list(_BASE_WITNESSES) + found["values"]
    for n in found["numbers"]:
        values.extend([n - 1, n, n + 1])
        if isinstance(n, int):
            values.extend([n - 1.5, n + 0.5])
    for n in found["lengths"]:
        values.extend("a" * k for k in (max(n - 1, 0), n, n + 1))
        # The same lengths as URLs, so a length cap on a URL rule is told apart too.
        values.extend("http://h/" + "a" * (k - 9) for k in (n - 1, n, n + 1) if k >= 9)
    for n in found["counts"]:
        values.extend([[f"r{i}" for i in range(k)] for k in (max(n - 1, 0), n, n + 1)])
    # Objects carrying the members seen, each with a few kinds of value (conditional rules).
    kinds: tuple[Any, ...] = (None, "x", 1, [], "http://h/")
    for name in dict.fromkeys(found["names"]):
        values.extend({name: value} for value in kinds)
    # Each distinct value once (an enum of n members holds n - 1 of the other side's).
    return list({_json_key(v): v for v in values}.values())


def _show(values: list[Any]) -> str:
    values = list({json.dumps(v): v for v in values}.values())
    shown = [json.dumps(v)[:40] for v in values[:3]]
    more = f" and {len(values) - 3} more" if len(values) > 3 else ""
    return ", ".join(shown) + more


# --------------------------------------------------------------------------------------------
# OpenAPI


_METHODS = ("get", "head", "post", "put", "delete", "patch", "options")


@dataclass(frozen=True)
class _Operation:
    """One operation in both versions: the document's name, ``METHOD /path``, both documents
    (to resolve ``$ref``) and both operation objects."""

    name: str
    where: str
    old: Mapping[str, Any]
    new: Mapping[str, Any]
    op_old: Mapping[str, Any]
    op_new: Mapping[str, Any]


def _diff_openapi(name: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> Iterator[Change]:
    old_paths: Mapping[str, Any] = old.get("paths", {})
    new_paths: Mapping[str, Any] = new.get("paths", {})
    for path in sorted(old_paths.keys() | new_paths.keys()):
        before, after = old_paths.get(path, {}), new_paths.get(path, {})
        for method in _METHODS:
            op_old, op_new = before.get(method), after.get(method)
            where = f"{method.upper()} {path}"
            if op_old is None and op_new is None:
                continue
            if op_new is None:
                yield Change(name, where, "operation removed", where, BREAKING, ADDITIVE)
                continue
            if op_old is None:
                yield Change(
                    name, where, "operation added", f"{where}: old servers do not serve it",
                    ADDITIVE, BREAKING,
                )  # fmt: skip
                continue
            operation = _Operation(name, where, old, new, op_old, op_new)
            yield from _diff_parameters(operation)
            yield from _diff_request_body(operation)
            yield from _diff_responses(operation)


def _parameters(doc: Mapping[str, Any], op: Mapping[str, Any]) -> dict[tuple[str, str], Any]:
    out = {}
    for p in op.get("parameters", []):
        p = _SchemaDiff._resolve(p, doc)
        if isinstance(p, dict) and "name" in p:
            out[(str(p.get("in")), str(p["name"]))] = p
    return out


def _diff_parameters(op: _Operation) -> Iterator[Change]:
    before, after = _parameters(op.old, op.op_old), _parameters(op.new, op.op_new)
    for key in sorted(before.keys() | after.keys()):
        label = f"{op.where} {key[0]} parameter {key[1]!r}"
        p_old, p_new = before.get(key), after.get(key)
        if p_old is None:
            assert p_new is not None
            if p_new.get("required"):
                yield Change(op.name, label, "required parameter added", label, BREAKING, BREAKING)
            else:
                # Servers that do not know it ignore it; clients need not send it.
                yield Change(op.name, label, "optional parameter added", label, ADDITIVE, ADDITIVE)
            continue
        if p_new is None:
            yield Change(op.name, label, "parameter removed", label, BREAKING, ADDITIVE)
            continue
        if bool(p_new.get("required")) and not p_old.get("required"):
            yield Change(op.name, label, "parameter made required", label, BREAKING, ADDITIVE)
        # A parameter is sent by the client: the roles of the two parties swap.
        for change in _SchemaDiff(
            op.name, op.old, op.new, p_old.get("schema", {}), p_new.get("schema", {})
        ).run():
            yield Change(
                op.name, f"{label}{change.location}", change.kind, _swapped(change.detail),
                change.servers, change.clients,
            )  # fmt: skip


def _diff_request_body(op: _Operation) -> Iterator[Change]:
    """A request body is written by the client and read by the server: the roles swap."""
    b_old = _SchemaDiff._resolve(op.op_old.get("requestBody"), op.old)
    b_new = _SchemaDiff._resolve(op.op_new.get("requestBody"), op.new)
    label = f"{op.where} request body"
    if not isinstance(b_old, dict) and not isinstance(b_new, dict):
        return
    if not isinstance(b_old, dict):
        required = bool(b_new.get("required"))
        yield Change(
            op.name, label, "request body added", label,
            BREAKING if required else ADDITIVE, BREAKING,
        )  # fmt: skip
        return
    if not isinstance(b_new, dict):
        yield Change(op.name, label, "request body removed", label, BREAKING, ADDITIVE)
        return
    yield from _diff_content(op, label, b_old, b_new, request=True)


def _diff_responses(op: _Operation) -> Iterator[Change]:
    before: Mapping[str, Any] = op.op_old.get("responses", {})
    after: Mapping[str, Any] = op.op_new.get("responses", {})
    for status in sorted(before.keys() | after.keys()):
        label = f"{op.where} {status}"
        r_old, r_new = before.get(status), after.get(status)
        if r_old is None:
            if status == "304":  # only ever sent to a client that asked with If-None-Match
                yield Change(
                    op.name, label, "conditional response added",
                    f"{label}: sent only to clients that send a validator", ADDITIVE, ADDITIVE,
                )  # fmt: skip
                continue
            yield Change(
                op.name, label, "response status added",
                f"{label}: old clients do not expect it", BREAKING, ADDITIVE,
            )  # fmt: skip
            continue
        if r_new is None:
            yield Change(
                op.name, label, "response status removed",
                f"{label}: old servers may still answer it", ADDITIVE, BREAKING,
            )  # fmt: skip
            continue
        r_old, r_new = _SchemaDiff._resolve(r_old, op.old), _SchemaDiff._resolve(r_new, op.new)
        yield from _diff_content(op, label, r_old, r_new, request=False)
        for header in sorted(r_old.get("headers", {}).keys() | r_new.get("headers", {}).keys()):
            h_old = r_old.get("headers", {}).get(header)
            h_new = r_new.get("headers", {}).get(header)
            if h_old is None:
                yield Change(
                    op.name, f"{label} header {header}", "response header added", header,
                    ADDITIVE, ADDITIVE if not (h_new or {}).get("required") else BREAKING,
                )  # fmt: skip
            elif h_new is None:
                yield Change(
                    op.name, f"{label} header {header}", "response header removed", header,
                    BREAKING if h_old.get("required") else ADDITIVE, ADDITIVE,
                )  # fmt: skip


def _diff_content(
    op: _Operation,
    label: str,
    body_old: Mapping[str, Any],
    body_new: Mapping[str, Any],
    *,
    request: bool,
) -> Iterator[Change]:
    """The media types of a request body (``request``) or a response and their schemas.

    A request body is written by the client, a response by the server: the servers' and
    clients' verdicts swap between the two, and a response's schema changes are located
    without the media type.
    """
    media_old: Mapping[str, Any] = body_old.get("content", {})
    media_new: Mapping[str, Any] = body_new.get("content", {})
    noun = "request media type" if request else "media type"
    for media in sorted(media_old.keys() | media_new.keys()):
        m_old, m_new = media_old.get(media), media_new.get(media)
        if m_old is None or m_new is None:
            gone = m_new is None
            verdicts = (BREAKING, ADDITIVE) if gone else (ADDITIVE, BREAKING)  # as a request's
            yield Change(
                op.name, f"{label} {media}", f"{noun} removed" if gone else f"{noun} added",
                f"{label} {media}", *(verdicts if request else verdicts[::-1]),
            )  # fmt: skip
            continue
        diff = _SchemaDiff(
            op.name, op.old, op.new, m_old.get("schema", {}), m_new.get("schema", {})
        )
        where = f"{label} {media}" if request else label
        for change in diff.run():
            yield Change(
                op.name, f"{where} {change.location or '/'}", change.kind,
                _swapped(change.detail) if request else change.detail,
                *((change.servers, change.clients) if request else (change.clients, change.servers)),
            )  # fmt: skip


def _listing_schemas(document: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    if "openapi" in document:
        for schema in document.get("components", {}).get("schemas", {}).values():
            if isinstance(schema, dict) and "protocol_version" in schema.get("properties", {}):
                yield schema
    elif "protocol_version" in document.get("properties", {}):
        yield document


def _contract_files(root: Path) -> dict[str, Path]:
    files = {p.name: p for p in root.glob("rl-*.schema.json")}
    files.update({f"openapi/{p.name}": p for p in (root / "openapi").glob("*.openapi.json")})
    return files


def _load(path: Path) -> Mapping[str, Any]:
    try:
        document = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: expected a JSON document ({exc})") from None
    except RecursionError:
        raise ValueError(f"{path}: expected a JSON document nested less deep") from None
    if not isinstance(document, dict):
        raise ValueError(f"{path}: expected a JSON object, found {type(document).__name__}")
    return document
