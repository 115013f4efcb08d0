"""Shared HTTP plumbing of the client and the admin pool.

Building an SSL context loads the CA bundle (about 50 ms); one is built once and shared, so an
admin pool of a thousand engines does not spend most of a minute on it.
"""

from __future__ import annotations

import ssl
from functools import cache

import httpx

__all__ = ["origin_text", "redact_url", "tls_context"]


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
