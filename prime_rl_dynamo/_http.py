"""Shared HTTP plumbing of the client and the admin pool.

Building an SSL context loads the CA bundle (about 50 ms); one is built once and shared, so an
admin pool of a thousand engines does not spend most of a minute on it.
"""

from __future__ import annotations

import ssl
from functools import cache

import httpx


@cache
def tls_context() -> ssl.SSLContext:
    """The verifying TLS context every client of this package uses (built on first use)."""
    return httpx.create_ssl_context()
