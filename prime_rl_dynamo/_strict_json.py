"""The strict JSON text parser of the exhaustive path: what the JSON data model cannot carry.

``parse`` reads a body the way RFC 8259 and SPEC.md section 4 read it: UTF-8 only (no byte order
mark), no lone surrogate, nesting at most MAX_DEPTH, numbers of any length kept exactly, and the
member names an object repeats remembered (BODY-6). Linear in the size of the text; no I/O.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from prime_rl_dynamo.text import clip
from prime_rl_dynamo.violation import Violation

__all__ = ["MAX_DEPTH", "TOO_DEEP", "BigInt", "Number", "Object", "depth", "parse"]

#: Deepest nesting of arrays and objects a body may have (the body object is level 1): BODY-1.
MAX_DEPTH = 128
TOO_DEEP = Violation(
    "BODY-1",
    "",
    expected=f"arrays and objects nested at most {MAX_DEPTH} deep",
    found=f"nesting deeper than {MAX_DEPTH}",
)
# Python's int() refuses longer digit strings (CVE-2020-10735); such integers stay Decimal.
_INT_DIGITS = 4000
# An escape sequence, read left to right so that an escaped backslash is consumed whole: a
# surrogate pair, a lone surrogate (the group), or any other.
_ESCAPE = re.compile(
    r"\\(?:u[Dd][89ABab][0-9A-Fa-f]{2}\\u[Dd][C-Fc-f][0-9A-Fa-f]{2}"
    r"|(u[Dd][89A-Fa-f][0-9A-Fa-f]{2})|.)",
    re.DOTALL,
)
_SURROGATE = re.compile("[\ud800-\udfff]")


def _nan(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


class _Exact(Decimal):
    """A JSON number kept exactly, remembering its text."""

    text: str

    def __new__(cls, text: str) -> Any:
        number = super().__new__(cls, text)
        number.text = text
        return number


class Number(_Exact):
    """A number written with a fraction or an exponent (``1.0e19`` is integral, yet not an
    integer literal: WORKER-2 says how it must be written)."""


class BigInt(_Exact):
    """An integer literal longer than int() takes."""


class Object(dict[str, Any]):
    """A parsed JSON object whose text repeated member names (the last value kept, as json does)."""

    repeated: dict[str, int]


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    repeated = Object(obj)
    repeated.repeated = {n: c for n, c in Counter(n for n, _ in pairs).items() if c > 1}
    return repeated


def _int(text: str) -> int | Decimal:
    return int(text) if len(text) <= _INT_DIGITS else BigInt(text)


def _parse_error(found: str) -> Violation:
    return Violation("BODY-1", "", expected="a JSON document in UTF-8 (RFC 8259)", found=found)


def parse(raw: bytes | str, *, shallow: bool = False) -> Any:
    """The parsed body, or the one BODY-1 violation that stops it: not UTF-8 (RFC 8259 section
    8.1), a lone surrogate, nesting deeper than MAX_DEPTH, or text that does not parse.
    ``shallow``: the caller has proven the nesting within MAX_DEPTH (no walk to measure it)."""
    if isinstance(raw, bytes):
        if raw[:3] == b"\xef\xbb\xbf":
            return _parse_error("a UTF-8 byte order mark at byte offset 0 (not allowed)")
        if raw[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in raw[:4]:
            return _parse_error(
                "UTF-16 or UTF-32 text (a zero byte or byte order mark at the start)"
            )
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad = raw[exc.start : exc.start + 3].hex(" ")
            return _parse_error(f"bytes {bad} at byte offset {exc.start}, which are not UTF-8")
    else:
        text = raw
        if (lone := _SURROGATE.search(text)) is not None:
            return _parse_error(
                f"a lone surrogate U+{ord(lone.group()):04X} at character offset {lone.start()}"
            )
    if "\\u" in text and (problem := _lone_escape(text)) is not None:
        return _parse_error(problem)
    try:
        parsed = json.loads(
            text, object_pairs_hook=_object, parse_float=Number, parse_int=_int, parse_constant=_nan
        )
    except RecursionError:
        return TOO_DEEP
    except ValueError as exc:
        found = f"text that does not parse ({clip(str(exc))}): {text[:60]!r}"
        return Violation("BODY-1", "", expected="a JSON document", found=found)
    # Fewer openers than the limit cannot nest deeper (the common case: one count, no walk).
    if shallow:
        return parsed
    if text.count("[") + text.count("{") > MAX_DEPTH and depth(parsed) > MAX_DEPTH:
        return TOO_DEEP
    return parsed


def _lone_escape(text: str) -> str | None:
    """Where ``text`` escapes a lone surrogate (one not in a high-low pair), if it does."""
    lone = next((m for m in _ESCAPE.finditer(text) if m.group(1)), None)
    if lone is None:
        return None
    offset = len(text[: lone.start()].encode("utf-8", "surrogatepass"))
    return f"an escaped lone surrogate {lone.group()} at byte offset {offset}"


def depth(parsed: Any) -> int:
    """How deep arrays and objects nest in ``parsed`` (iterative: deep input cannot recurse)."""
    deepest = 0
    stack = [(parsed, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, dict):
            children: Iterable[Any] = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in children if isinstance(child, dict | list))
    return deepest
