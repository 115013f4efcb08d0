"""Shared HTTP plumbing of the client and the admin pool.

Building an SSL context loads the CA bundle (about 50 ms); one is built once and shared, so an
admin pool of a thousand engines does not spend most of a minute on it.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable
from functools import cache

import httpx


@cache
def tls_context(verify: str | bool | ssl.SSLContext = True) -> ssl.SSLContext:
    """The TLS context for httpx's ``verify`` value, built once per value: True is the system CA
    bundle every client of this package shares, a path a CA bundle (``--cacert``), False no
    certificate check at all (``--insecure``)."""
    if isinstance(verify, ssl.SSLContext):
        return verify
    return httpx.create_ssl_context(verify=verify)


#: What a header value is replaced with wherever a command prints or records it.
REDACTED = "<redacted>"


def parse_header(text: str) -> tuple[str, str]:
    """``"Name: value"`` (curl's ``-H`` form) as ``(name, value)``, or ConfigError saying why."""
    from prime_rl_dynamo.errors import ConfigError

    name, sep, value = str(text).partition(":")
    name = name.strip()
    if not sep or not name:
        raise ConfigError(
            f"header {name or '(empty)'!r}: expected NAME: VALUE, e.g. 'Authorization: Bearer ...'"
        )
    if any(c.isspace() or c in '()<>@,;:\\"/[]?={}' or ord(c) < 33 for c in name):
        raise ConfigError(f"header name {name!r} is not a valid HTTP field name")
    value = value.strip()
    if "\r" in value or "\n" in value:
        raise ConfigError(f"header {name!r}: the value must not contain a line break")
    return name, value


def redacted_headers(headers: Iterable[tuple[str, str]]) -> list[str]:
    """``"Name: <redacted>"`` for each header, for messages and reports: never the value."""
    return [f"{name}: {REDACTED}" for name, _ in headers]
