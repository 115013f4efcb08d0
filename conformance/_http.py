"""Small HTTP helpers shared by the profiles: one bounded httpx client and response snapshots.

The suite talks to targets with redirects off, no proxy environment and a timeout on every call.
Every exchange is bounded twice, as the discovery client bounds its own: a body size cap and a
deadline for the whole exchange (httpx's timeouts bound each read, not a body dribbled forever).
"""

from __future__ import annotations

import json
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

from prime_rl_dynamo.defaults import MAX_BODY_BYTES
from prime_rl_dynamo.http import origin as origin_of

if TYPE_CHECKING:
    from conformance.options import Options

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "ExchangeBound",
    "OriginHeaders",
    "RawReply",
    "Reply",
    "is_http_url",
    "json_media",
    "make_client",
    "raw_exchange",
    "raw_request",
    "request",
    "same_origin",
    "target_client",
    "unreachable",
]

#: The discovery client's cap, the suite's default (one value: ``prime_rl_dynamo.defaults``).
DEFAULT_MAX_BODY_BYTES = MAX_BODY_BYTES


class ExchangeBound(httpx.TransportError):
    """The target's reply broke one of the suite's bounds (its body size cap or its deadline)."""


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


class OriginHeaders(httpx.Auth):
    """Adds the operator's headers (``-H``) to requests for the target's origin and no other:
    a gateway's token must not travel to the workers' system or admin hosts."""

    def __init__(self, origin: str | None, headers: Sequence[tuple[str, str]]) -> None:
        self._origin = origin_of(origin) if origin else None
        self._headers = tuple(headers)

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        if self._headers and self._origin is not None and origin_of(request.url) == self._origin:
            for name, value in self._headers:
                request.headers[name] = value
        yield request


def same_origin(first: str | httpx.URL, second: str | httpx.URL) -> bool:
    """Whether two absolute URLs share scheme, host and port (the default port filled in)."""
    from prime_rl_dynamo.http import origin

    return origin(first) == origin(second)


def make_client(
    timeout: float,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    *,
    origin: str | None = None,
    headers: Sequence[tuple[str, str]] = (),
    verify: bool | str = True,
) -> httpx.Client:
    """A client that follows no redirect and ignores proxy settings from the environment;
    ``headers`` go to ``origin`` only, ``verify`` is httpx's (a CA bundle path or False).

    ``request`` bounds each exchange with ``timeout`` (whole exchange) and ``max_body_bytes``.
    """
    from prime_rl_dynamo.http import tls_context

    client = BoundedClient(
        timeout=timeout,
        follow_redirects=False,
        trust_env=False,
        verify=tls_context(verify),
        auth=OriginHeaders(origin, headers),
        headers={"accept-encoding": "identity", "user-agent": "prime-rl-dynamo-conformance"},
    )
    client.deadline, client.max_body_bytes = timeout, max_body_bytes
    client.verify_setting = verify
    return client


def target_client(
    options: Options, origin: str | None, *, timeout: float | None = None
) -> httpx.Client:
    """A client bounded by a run's options, sending its headers to ``origin`` (the target) only
    and verifying TLS as the options say: every profile builds its client here (``timeout``: a
    longer deadline for a profile whose requests wait on purpose)."""
    return make_client(
        options.timeout if timeout is None else timeout,
        options.max_body_bytes,
        origin=origin,
        headers=options.headers,
        verify=options.verify,
    )


class BoundedClient(httpx.Client):
    """An httpx client that carries the suite's bounds for ``request``."""

    deadline: float = 10.0  # seconds for a whole exchange
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    verify_setting: bool | str = True  # what the run gave (--cacert FILE, --insecure: False)


def unreachable(method: str, url: str, exc: BaseException, client: httpx.Client) -> str:
    """Why a request never got an answer, for a CheckError: a TLS certificate that did not
    verify says what to do about it (--cacert, or why --cacert cannot help)."""
    from prime_rl_dynamo.http import tls_hint

    verify = client.verify_setting if isinstance(client, BoundedClient) else True
    hint = tls_hint(exc, verify)
    return f"{method} {url}: {hint}" if hint else f"{method} {url}: nothing answers: {exc}"


def bounds(client: httpx.Client) -> tuple[float, int]:
    """(deadline in seconds, body cap in bytes) of a client (a BoundedClient's own, else defaults)."""
    if isinstance(client, BoundedClient):
        return client.deadline, client.max_body_bytes
    return client.timeout.read or 10.0, DEFAULT_MAX_BODY_BYTES


def check_bounds(
    method: str, url: str, size: int, started: float, deadline: float, cap: int
) -> None:
    """Raise ExchangeBound when a body grew past ``cap`` or the exchange ran past ``deadline``."""
    if size > cap:
        raise ExchangeBound(
            f"{method} {url}: the body exceeded the suite's size cap of {cap} bytes "
            f"(--max-body-bytes) and was cut off there"
        )
    spent = time.perf_counter() - started
    if spent > deadline:
        raise ExchangeBound(
            f"{method} {url}: the exchange was not complete after {spent:.1f} s, past the "
            f"suite's per-exchange deadline of {deadline:g} s (--timeout); {size} body bytes "
            "had arrived"
        )


def request(client: httpx.Client, method: str, url: str, **kwargs: Any) -> Reply:
    """Send one request; JSON is parsed whatever the content type says (so both can be judged).

    The exchange is bounded (deadline and body cap of the client, see ``make_client``): past
    either, ExchangeBound (an httpx.TransportError) says which bound and the figure.
    """
    deadline, cap = bounds(client)
    started = time.perf_counter()
    chunks: list[bytes] = []
    size = 0
    with client.stream(method, url, **kwargs) as response:
        check_bounds(method, url, size, started, deadline, cap)
        for chunk in response.iter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            check_bounds(method, url, size, started, deadline, cap)
    elapsed = time.perf_counter() - started
    content = b"".join(chunks)
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


@dataclass(frozen=True)
class RawReply:
    """One exchange read off the socket: what an HTTP client library would not show.

    httpx (h11) knows that a ``HEAD`` answer and a ``304`` have no body and never reads bytes a
    server sends after their headers; ``trailing`` holds exactly those bytes.
    """

    status: int
    headers: dict[str, str]  # lower-cased names (a repeated name: the last value)
    trailing: bytes  # every byte after the header block, until the server closed or went quiet

    @property
    def content_type(self) -> str:
        """The Content-Type header ('' when missing)."""
        return self.headers.get("content-type", "")


#: How long a raw exchange waits for more bytes after the header block before it concludes that
#: the server sent none (a server that honours ``Connection: close`` closes at once).
RAW_QUIET_S = 0.5


def raw_exchange(
    url: str,
    method: str,
    headers: Sequence[tuple[str, str]] = (),
    *,
    timeout: float = 10.0,
    verify: bool | str = True,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> RawReply:
    """Send one HTTP/1.1 request with ``Connection: close`` over a plain (or TLS) socket and read
    the answer as bytes: the status line, the headers and whatever follows them.

    ``headers`` go to this URL only (the caller passes the target's own). A broken exchange
    (refused, reset, no header block within ``timeout``) raises ``httpx.TransportError``, a
    body past ``max_body_bytes`` ExchangeBound, as ``request`` does.
    """
    import socket

    from prime_rl_dynamo.http import authority, tls_context

    target = httpx.URL(url)
    port = target.port or (443 if target.scheme == "https" else 80)
    host_header = authority(target)
    path = target.raw_path.decode("ascii") or "/"
    lines = [
        f"{method} {path} HTTP/1.1",
        f"Host: {host_header}",
        "Connection: close",
        "Accept-Encoding: identity",
        "User-Agent: prime-rl-dynamo-conformance",
        *(f"{name}: {value}" for name, value in headers),
    ]
    started = time.perf_counter()
    try:
        sock = socket.create_connection((target.host, port), timeout=timeout)
    except ConnectionRefusedError as exc:
        raise httpx.ConnectError(f"{method} {url}: connection refused") from exc
    except OSError as exc:
        raise httpx.ConnectError(f"{method} {url}: {exc.strerror or exc}") from exc
    try:
        if target.scheme == "https":
            sock = tls_context(verify).wrap_socket(sock, server_hostname=target.host)
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        received = b""
        while b"\r\n\r\n" not in received:
            left = timeout - (time.perf_counter() - started)
            if left <= 0:
                raise httpx.ReadTimeout(
                    f"{method} {url}: no complete header block in {timeout:g} s"
                )
            sock.settimeout(left)
            chunk = sock.recv(65536)
            if not chunk:
                raise httpx.RemoteProtocolError(
                    f"{method} {url}: the server closed the connection before its headers ended"
                )
            received += chunk
            check_bounds(method, url, len(received), started, timeout, max_body_bytes)
        head, _, trailing = received.partition(b"\r\n\r\n")
        sock.settimeout(RAW_QUIET_S)
        while len(trailing) <= max_body_bytes:
            try:
                chunk = sock.recv(65536)
            except (TimeoutError, ConnectionResetError):
                break
            if not chunk:
                break
            trailing += chunk
        check_bounds(method, url, len(trailing), started, float("inf"), max_body_bytes)
    except OSError as exc:  # reset, TLS failure, ... while sending or before the headers ended
        raise httpx.ReadError(f"{method} {url}: {type(exc).__name__}: {exc}") from exc
    finally:
        sock.close()
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise httpx.RemoteProtocolError(
            f"{method} {url}: not an HTTP status line: {status_line!r:.80}"
        )
    fields: dict[str, str] = {}
    for line in header_lines:
        name, sep, value = line.partition(":")
        if sep:
            fields[name.strip().lower()] = value.strip()
    return RawReply(status=int(parts[1]), headers=fields, trailing=trailing)


def raw_request(
    options: Options, url: str, method: str, headers: Sequence[tuple[str, str]] = ()
) -> RawReply:
    """``raw_exchange`` of a check, bounded by the run's options and carrying its ``-H`` headers
    (``url`` is the target's own): nobody listening is the harness's problem (CheckError), a
    broken-off exchange fails the check that asked (Failed)."""
    from conformance.registry import CheckError, Failed

    try:
        return raw_exchange(
            url,
            method,
            (*options.headers, *headers),
            timeout=options.timeout,
            verify=options.verify,
            max_body_bytes=options.max_body_bytes,
        )
    except httpx.ConnectError as exc:
        raise CheckError(f"{method} {url}: nothing answers: {exc}") from exc
    except httpx.HTTPError as exc:
        raise Failed(f"{method} {url}: expected a complete HTTP response, found {exc}") from exc
