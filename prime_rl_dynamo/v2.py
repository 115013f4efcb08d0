"""Protocol version 2 (draft, schema/SPEC-v2.md): negotiation, the listing's fingerprint, the body check.

v2 is v1's listing plus a strong validator (``fingerprint`` and the ``ETag`` that quotes it),
conditional GETs (``If-None-Match`` -> ``304``), a change feed (``?wait=SECONDS``), and per worker
``health``, ``parallel`` (TP/PP/DP) and ``weight_version``. A client asks for it with the
``Dynamo-RL-Protocol`` request header; a v1 server ignores the header and answers v1. Pure.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from functools import cache
from typing import Any

from prime_rl_dynamo.violation import Violation

__all__ = [
    "MAX_WAIT",
    "PROTOCOL_HEADER",
    "SCHEMA_NAME",
    "accepted_versions",
    "check_body_v2",
    "etag_of",
    "fingerprint",
    "parse_v2",
]

#: The request header that asks for versions (``2, 1``) and the response header that names one.
PROTOCOL_HEADER = "Dynamo-RL-Protocol"
#: The longest ``?wait=`` a server holds a request (V2-5); longer waits are capped to it.
MAX_WAIT = 30.0
SCHEMA_NAME = "rl-workers.v2.schema.json"


def accepted_versions(header: str | None) -> set[int]:
    """Versions named by a ``Dynamo-RL-Protocol: 2, 1`` request header (empty when absent)."""
    out: set[int] = set()
    for token in (header or "").split(","):
        token = token.strip()
        if token.isdigit():
            out.add(int(token))
    return out


def fingerprint(namespace: str, workers: list[Any]) -> str:
    """The listing's fingerprint: 32 hex digits of SHA-256 over its compact JSON (V2-3).

    Membership and every field a client plans from are in ``workers``; the recipe is the
    reference's, a server may use any other as long as V2-3 holds.
    """
    data = json.dumps(
        {"namespace": namespace, "workers": workers}, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:32]


def etag_of(fp: str) -> str:
    """The strong ETag of a fingerprint (RFC 9110 section 8.8.3: quoted, no W/)."""
    return f'"{fp}"'


@cache
def _validator() -> Any:
    from jsonschema import Draft202012Validator

    from prime_rl_dynamo.resources import load_json

    return Draft202012Validator(load_json(SCHEMA_NAME))


def parse_v2(data: bytes | str) -> tuple[Any, list[Violation]]:
    """A v2 body's text judged as v1 judges a body's text, then parsed: (the document, or None,
    and the violations). v1's validator reads the bytes (UTF-8, nesting, numbers, surrogates,
    repeated v1 members: BODY-1..6; its protocol_version rule aside), and a member name written
    twice in any object is BODY-6 here too: ``json.loads`` would keep one value silently."""
    from prime_rl_dynamo.validate import check_body

    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    text_rules = [v for v in check_body(raw) if v.pointer != "/protocol_version"]
    if any(v.requirement.startswith("BODY-") for v in text_rules):
        return None, text_rules
    repeated: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(items)
        if len(out) != len(items):
            seen: set[str] = set()
            repeated.extend(k for k, _ in items if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        return out

    try:
        parsed = json.loads(raw, object_pairs_hook=pairs)
    except (ValueError, RecursionError) as exc:
        return None, [Violation("BODY-1", "", f"expected a JSON document, found ({exc})")]
    if repeated:
        names = ", ".join(repr(n) for n in dict.fromkeys(repeated))
        return None, [
            Violation(
                "BODY-6",
                "",
                f"expected each member name once per object, found {names} more than once (a "
                "parser keeps one value silently: which one differs between parsers)",
            )
        ]
    return parsed, text_rules


def check_body_v2(data: bytes | str | Mapping[str, Any]) -> list[Violation]:
    """Every violation of the v2 listing rules in ``data``: v1's text rules on the bytes (see
    ``parse_v2``), the v2 schema, V2-6, and v1's LIST-1..6 (one validator judges both versions)."""
    from prime_rl_dynamo.validate import _label_at, _semantic_violations, json_pointer

    if isinstance(data, bytes | str):
        parsed, text_rules = parse_v2(data)
        if parsed is None:
            return text_rules
    else:
        parsed = data
    out: list[Violation] = []
    bad: set[tuple[int, str]] = set()
    for error in _validator().iter_errors(parsed):
        path = list(error.absolute_path)
        schema = error.schema if isinstance(error.schema, dict) else {}
        requirement = schema.get("x-requirement", "V2-2")
        description = schema.get("description", "a value the schema allows")
        found = json.dumps(error.instance, default=str)[:120]
        if len(path) >= 2 and path[0] == "workers" and isinstance(path[1], int):
            bad.add((path[1], str(path[2]) if len(path) > 2 else ""))
        out.append(
            Violation(
                requirement,
                json_pointer(path),
                f"expected {description}, found {found}",
                worker=_label_at(parsed, path),
            )
        )
    out.extend(_semantic_violations(parsed, bad))
    out.extend(_layout_violations(parsed, bad))
    return out


def _layout_violations(parsed: Any, bad: set[tuple[int, str]]) -> list[Violation]:
    """V2-6: tensor * pipeline * data (* context) equals world_size (RANK-7 made checkable)."""
    from prime_rl_dynamo.validate import json_pointer
    from prime_rl_dynamo.wire import entry_label

    out: list[Violation] = []
    workers = parsed.get("workers") if isinstance(parsed, Mapping) else None
    for i, w in enumerate(workers if isinstance(workers, list) else []):
        if not isinstance(w, Mapping) or (i, "parallel") in bad or (i, "world_size") in bad:
            continue
        layout, size = w.get("parallel"), w.get("world_size")
        if not isinstance(layout, Mapping) or not isinstance(size, int):
            continue
        parts = [layout.get(k, 1) for k in ("tensor", "pipeline", "data", "context")]
        if not all(isinstance(p, int) and not isinstance(p, bool) for p in parts):
            continue
        product = parts[0] * parts[1] * parts[2] * parts[3]
        if product != size:
            out.append(
                Violation(
                    "V2-6",
                    json_pointer(["workers", i, "parallel"]),
                    f"expected tensor * pipeline * data * context = world_size {size}, found "
                    f"{' * '.join(map(str, parts))} = {product}",
                    worker=entry_label(w),
                )
            )
    return out
