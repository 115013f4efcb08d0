"""The project's one redaction home: which values are credentials, and the scrubber that keeps them
(and the user info of every URL) out of every message, log line, report and terminal.

Every surface calls ``scrub``: the suite's results and reports, the client's and the admin pool's
errors, ``discover``'s stderr. Pure: no I/O, standard library only.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

__all__ = [
    "REDACTED",
    "map_text",
    "redact_url",
    "redacted_headers",
    "scrub",
    "scrub_error",
    "secret_values",
    "shown_url",
]

#: What a header value is replaced with wherever a command prints or records it.
REDACTED = "<redacted>"

#: A value shorter than this is not scrubbed (``-H 'X-A: 1'`` would blank every digit 1).
MIN_SECRET = 4

# scheme://user:password@ -> scheme://***@ ; a password may hold "/" (``user:S3/x@host``), so the
# user info runs to the last "@" before white space or a quote: redacting too much is the safe way.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s@\"'<>]*@")
# Nesting deeper than this is not walked (a hostile body parsed into details): it is replaced.
_MAX_DEPTH = 64


def secret_values(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> tuple[str, ...]:
    """The credential values of a header set, longest first: each whole value, the credential
    after an auth scheme (``Bearer TOKEN``, ``Basic B64``: the bare token a target may echo), and
    the forms a message writes them in (JSON- or repr-escaped). Values under 4 characters are
    not secrets worth blanking everywhere."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    values: set[str] = set()
    for _, raw in pairs:
        value = str(raw).strip()
        candidates = [value]
        scheme, _, token = value.partition(" ")
        if token and scheme.isalnum():
            candidates.append(token.strip())
        for candidate in candidates:
            if len(candidate) >= MIN_SECRET:
                values |= {candidate, json.dumps(candidate)[1:-1], repr(candidate)[1:-1]}
    return tuple(sorted(values, key=len, reverse=True))


def _redact_userinfo(text: str) -> str:
    return _USERINFO.sub(r"\1***@", text) if "@" in text else text


def scrub(value: Any, secrets: Iterable[str] = ()) -> Any:
    """``value`` (text, or JSON-like data of dicts, lists, tuples and text) with every secret
    replaced by REDACTED and the user info of every URL by ``***``; keys are scrubbed too."""
    hidden = tuple(secrets)

    def fix(text: str) -> str:
        for secret in hidden:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return _redact_userinfo(text)

    return map_text(value, fix)


def map_text(value: Any, fix: Callable[[str], str]) -> Any:
    """JSON-like data with ``fix`` applied to every string, keys included (tuples stay tuples);
    the one walker of report data: nesting past 64 levels is replaced, not walked."""
    return _walk(value, fix, 0)


def _walk(value: Any, fix: Callable[[str], str], depth: int) -> Any:
    if isinstance(value, str):
        return fix(value)
    if depth >= _MAX_DEPTH and isinstance(value, (dict, list, tuple)):
        return f"<nested deeper than {_MAX_DEPTH} levels: not shown>"
    if isinstance(value, dict):
        return {_walk(k, fix, depth): _walk(v, fix, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_walk(v, fix, depth + 1) for v in value)
    return value


_E = TypeVar("_E", bound=BaseException)


def scrub_error(exc: _E, secrets: Iterable[str]) -> _E:
    """``exc`` with its message and its records (``violations``, ``reasons``: frozen dataclasses
    of text) scrubbed in place, so what a caller logs or prints carries no credential."""
    hidden = tuple(secrets)
    exc.args = tuple(scrub(a, hidden) if isinstance(a, str) else a for a in exc.args)
    for name in ("violations", "reasons"):
        records = getattr(exc, name, None)
        if isinstance(records, list | tuple):
            setattr(exc, name, type(records)(_scrub_record(r, hidden) for r in records))
    return exc


def _scrub_record(record: Any, secrets: tuple[str, ...]) -> Any:
    if not dataclasses.is_dataclass(record) or isinstance(record, type):
        return record
    texts = {
        f.name: scrub(getattr(record, f.name), secrets)
        for f in dataclasses.fields(record)
        if isinstance(getattr(record, f.name), str)
    }
    return dataclasses.replace(record, **texts)


def redacted_headers(headers: Iterable[tuple[str, str] | str]) -> list[str]:
    """``"Name: <redacted>"`` for each header, for messages and reports: never the value (an item
    that is already text, as a report holds it, is kept)."""
    return [h if isinstance(h, str) else f"{h[0]}: {REDACTED}" for h in headers]


def redact_url(url: str) -> str:
    """The URL without user info, for labels and messages (secrets never reach a log)."""
    if "@" not in url:
        return url
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    end = min((i for i in (rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
    at = rest.rfind("@", 0, end)  # a password may hold "/": the user info ends at the last "@"
    if at < 0:
        return url
    return f"{scheme}{sep}***@{rest[at + 1 :]}"


def shown_url(url: str) -> str:
    """The URL as a message may quote it: no user info, and no query or fragment (``...``), which
    may carry a token (``?api_key=...``)."""
    cut = min((i for i in (url.find("?"), url.find("#")) if i >= 0), default=len(url))
    return redact_url(url[:cut]) + ("..." if cut < len(url) else "")
