"""Shared HTTP plumbing of the client and the admin pool.

Building an SSL context loads the CA bundle (about 50 ms); one is built once and shared, so an
admin pool of a thousand engines does not spend most of a minute on it.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import httpx

from prime_rl_dynamo._urls import url_host
from prime_rl_dynamo.errors import ConfigError

__all__ = [
    "REDACTED",
    "origin_text",
    "parse_header",
    "redact_url",
    "redacted_headers",
    "scrub",
    "secret_values",
    "shown_url",
    "tls_context",
]


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


def verify_setting(cacert: str | None, insecure: bool) -> bool | str:
    """httpx's ``verify`` for a CA bundle path or an insecure run (ConfigError for a CA file that
    is missing or not a PEM bundle)."""
    if insecure:
        return False
    if cacert:
        if not Path(cacert).is_file():
            raise ConfigError(f"--cacert {cacert}: no such file")
        try:
            tls_context(cacert)
        except (ssl.SSLError, OSError) as exc:
            raise ConfigError(f"--cacert {cacert}: not a PEM CA bundle ({exc})") from None
        return cacert
    return True


def parse_header(text: str) -> tuple[str, str]:
    """``"Name: value"`` (curl's ``-H`` form) as ``(name, value)``, or ConfigError saying why.

    A malformed header is never quoted back: ``-H 'Authorization Bearer TOKEN'`` (no colon) is
    all value, and the message must not carry the token.
    """
    from prime_rl_dynamo.errors import ConfigError

    name, sep, value = str(text).partition(":")
    name = name.strip()
    hidden = "(the text is not shown: it may hold a credential)"
    if not sep or not name:
        found = "no ':'" if not sep else "an empty name"
        raise ConfigError(
            "header: expected NAME: VALUE, e.g. 'Authorization: Bearer ...'; "
            f"found {found} {hidden}"
        )
    if any(c.isspace() or c in '()<>@,;:\\"/[]?={}' or ord(c) < 33 for c in name):
        raise ConfigError(
            "header: the name before ':' is not a valid HTTP field name (letters, digits and "
            f"!#$%&'*+-.^_`|~ only) {hidden}"
        )
    value = value.strip()
    if "\r" in value or "\n" in value:
        raise ConfigError(f"header {name!r}: the value must not contain a line break")
    return name, value


def redacted_headers(headers: Iterable[tuple[str, str]]) -> list[str]:
    """``"Name: <redacted>"`` for each header, for messages and reports: never the value."""
    return [f"{name}: {REDACTED}" for name, _ in headers]


def redact_url(url: str) -> str:
    """The URL without user info, for labels and messages (secrets never reach a log)."""
    if "@" not in url:
        return url
    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    if "@" not in authority:
        return url
    return f"{scheme}{sep}***@{authority.rsplit('@', 1)[-1]}{slash}{path}"


def shown_url(url: str) -> str:
    """The URL as a message may quote it: no user info, and no query or fragment (``...``), which
    may carry a token (``?api_key=...``)."""
    cut = min((i for i in (url.find("?"), url.find("#")) if i >= 0), default=len(url))
    return redact_url(url[:cut]) + ("..." if cut < len(url) else "")


def origin(url: httpx.URL | str) -> tuple[str, str, int | None]:
    """The origin (RFC 6454) of ``url``: scheme, lower-case host, port (the scheme's default when
    none is written). The host is read in its A-label form, which never raises where ``url.host``
    decodes punycode and may; the one comparison of origins for redirects and header scoping."""
    url = httpx.URL(url)
    default = {"http": 80, "https": 443}.get(url.scheme)
    return (url.scheme, url.raw_host.decode("ascii", "replace").lower(), url.port or default)


def origin_text(url: httpx.URL) -> str:
    """``scheme://host[:port]`` as it is written: IPv6 in brackets, an explicit port kept (even 0)."""
    host = url_host(url.host)
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
    """``value`` (text, or JSON-like data of dicts, lists, tuples and text) with every secret
    replaced by REDACTED, as every command shows a header value."""
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, dict):
        return {scrub(k, secrets): scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(scrub(v, secrets) for v in value)
    return value
