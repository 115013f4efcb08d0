"""Shared HTTP plumbing of the client and the admin pool.

Building an SSL context loads the CA bundle (about 50 ms); one is built once and shared, so an
admin pool of a thousand engines does not spend most of a minute on it.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from functools import cache
from typing import Any

import httpx

__all__ = ["origin_text", "redact_url", "scrub", "secret_values", "tls_context"]


@cache
def tls_context() -> ssl.SSLContext:
    """The verifying TLS context every client of this package uses (built on first use)."""
    return httpx.create_ssl_context()


def redact_url(url: str) -> str:
    """The URL without user info, for labels and messages (secrets never reach a log)."""
    if "@" not in url:
        return url
    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    if "@" not in authority:
        return url
    return f"{scheme}{sep}***@{authority.rsplit('@', 1)[-1]}{slash}{path}"


def origin_text(url: httpx.URL) -> str:
    """``scheme://host[:port]`` as it is written: IPv6 in brackets, an explicit port kept (even 0)."""
    host = f"[{url.host}]" if ":" in url.host else url.host
    port = f":{url.port}" if url.port is not None else ""
    return f"{url.scheme}://{host}{port}"


def secret_values(headers: Mapping[str, str]) -> tuple[str, ...]:
    """The credential values of a header set (a Bearer key both whole and bare), longest first."""
    values: set[str] = set()
    for value in headers.values():
        if len(value) >= 4:
            values.add(value)
        scheme, _, token = value.partition(" ")
        if scheme.lower() == "bearer" and len(token) >= 4:
            values.add(token)
    return tuple(sorted(values, key=len, reverse=True))


def scrub(value: Any, secrets: tuple[str, ...]) -> Any:
    """``value`` (text, or JSON made of dicts, lists and text) with every secret replaced by ***."""
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, "***")
        return value
    if isinstance(value, dict):
        return {scrub(k, secrets): scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v, secrets) for v in value]
    return value
