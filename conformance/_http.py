"""Small HTTP helpers shared by the profiles: one bounded httpx client and response snapshots.

The suite talks to targets with redirects off, no proxy environment and a timeout on every call.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import httpx

__all__ = ["Reply", "is_http_url", "json_media", "make_client", "request"]


@dataclass(frozen=True)
class Reply:
    """What one HTTP exchange produced (parsed JSON, or why it did not parse)."""

    method: str
    url: str
    status: int
    headers: dict[str, str]  # lower-cased names
    content: bytes
    elapsed: float  # seconds
    parsed: Any = None
    parse_error: str | None = None  # None when the body parsed as JSON (or was empty on HEAD)

    @property
    def content_type(self) -> str:
        """The Content-Type header ('' when missing)."""
        return self.headers.get("content-type", "")

    def describe(self) -> str:
        """One line for failure messages: request, status, content type, start of the body."""
        body = self.content[:160].decode("utf-8", "replace")
        more = "..." if len(self.content) > 160 else ""
        return f"{self.method} {self.url} -> {self.status} [{self.content_type or 'no content-type'}] {body}{more}"


def make_client(timeout: float) -> httpx.Client:
    """A client that follows no redirect and ignores proxy settings from the environment."""
    return httpx.Client(
        timeout=timeout,
        follow_redirects=False,
        trust_env=False,
        headers={"accept-encoding": "identity", "user-agent": "prime-rl-dynamo-conformance"},
    )


def request(client: httpx.Client, method: str, url: str, **kwargs: Any) -> Reply:
    """Send one request; JSON is parsed whatever the content type says (so both can be judged)."""
    started = time.perf_counter()
    response = client.request(method, url, **kwargs)
    elapsed = time.perf_counter() - started
    content = response.content
    parsed: Any = None
    error: str | None = None
    if content:
        try:
            parsed = json.loads(content)
        except ValueError as exc:
            error = f"not JSON: {exc}"
        except RecursionError:  # nested too deep to parse here: the validator names it (BODY-1)
            parsed = None
    elif method != "HEAD":
        error = "empty body"
    return Reply(
        method=method,
        url=url,
        status=response.status_code,
        headers={k.lower(): v for k, v in response.headers.items()},
        content=content,
        elapsed=elapsed,
        parsed=parsed,
        parse_error=error,
    )


def json_media(content_type: str) -> bool:
    """Whether a Content-Type names application/json (parameters such as charset allowed)."""
    return content_type.split(";", 1)[0].strip().lower() == "application/json"


def is_http_url(value: object) -> bool:
    """Whether a value is an absolute http(s) URL with a host (worth probing)."""
    if not isinstance(value, str):
        return False
    try:
        url = httpx.URL(value)
    except Exception:
        return False
    return url.scheme in ("http", "https") and bool(url.host)
