"""Bounded HTTP: the one capped reader of the discovery client and the admin pool.

A body is capped on what it decodes to, decoded from the bytes read off the wire in bounded
steps, so neither a long body nor a gzip bomb can grow memory past the cap (POLL-3). The whole
exchange (connect, redirects, head and body) ends within one budget, since httpx's timeouts bound
each read and a server dribbling a byte a second would otherwise keep a request alive for as long
as it likes. Redirects are never followed by httpx: the discovery client follows same-origin ones
itself without the caller's headers (POLL-4, CRED-4), the admin pool none. Every message is
scrubbed of the credential values the client sends.
"""

from __future__ import annotations

import asyncio
import ssl
import zlib
from collections.abc import AsyncIterator, Awaitable, Mapping
from dataclasses import dataclass
from typing import Any, Self, TypeVar

import httpx

from prime_rl_dynamo._urls import host_problem
from prime_rl_dynamo.errors import PolicyError, TransportError
from prime_rl_dynamo.http import origin, origin_text, tls_context
from prime_rl_dynamo.redaction import redact_url, scrub, secret_values

__all__ = ["AsyncClosing", "BodyTooLarge", "BoundedDecoder", "BoundedHttp", "Reply", "within"]

_T = TypeVar("_T")

#: Redirect statuses; the discovery client follows at most this many, on the same origin only.
REDIRECTS = (301, 302, 303, 307, 308)
MAX_REDIRECTS = 5


@dataclass(frozen=True, slots=True)
class Reply:
    """One HTTP answer, its body read whole under the cap (or a preview of an error body)."""

    url: str
    status: int
    headers: httpx.Headers
    body: bytes


class BodyTooLarge(PolicyError):
    """A body over the cap: refused, never truncated (POLL-3)."""

    def __init__(self, message: str, *, cap: int, url: str, status_code: int) -> None:
        super().__init__(message, requirement="POLL-3", url=url, status_code=status_code)
        self.cap = cap


class BoundedDecoder:
    """Content decoding that never produces more than asked for, so a gzip bomb hits the cap.

    gzip per RFC 1952: a body is one or more members, each whole (its CRC-32 and ISIZE checked);
    a body cut short, a bad trailer or bytes after the last member are one error, a retried
    POLL-1 failure (what a broken transfer looks like). ``deflate`` is RFC 1950 zlib, alike.
    """

    def __init__(self, encoding: str, url: str) -> None:
        encoding = encoding.strip().lower()
        self._url = url
        self._name = encoding
        self._wbits = 0
        self._zlib: Any = None
        self._fed = False  # the current member has received bytes
        if encoding in ("", "identity"):
            pass
        elif encoding in ("gzip", "x-gzip"):
            self._wbits = 16 + zlib.MAX_WBITS
        elif encoding == "deflate":
            self._wbits = zlib.MAX_WBITS
        else:
            raise PolicyError(
                f"POLL-3: {url} answered with Content-Encoding {encoding!r}, which this client does "
                "not decode under its size cap (it asks for identity)",
                requirement="POLL-3",
                url=url,
            )
        if self._wbits:
            self._zlib = zlib.decompressobj(self._wbits)

    def _broken(self, detail: str) -> TransportError:
        return TransportError(
            f"POLL-1: the {self._name} body from {self._url} did not arrive intact ({detail}); "
            "retried as a broken transfer",
            requirement="POLL-1",
            url=self._url,
        )

    def feed(self, chunk: bytes, room: int) -> bytes:
        """Decode ``chunk``, stopping once ``room`` bytes are out (the caller then refuses)."""
        if self._zlib is None:
            return chunk
        out = bytearray()
        data = chunk
        try:
            while data and len(out) < room:
                if self._zlib.eof:  # a member ended: what follows must be another whole member
                    if self._wbits == zlib.MAX_WBITS or not data.startswith(
                        b"\x1f\x8b"[: len(data)]
                    ):
                        raise self._broken(
                            f"{len(data)}+ bytes after the end of the compressed data"
                        )
                    self._zlib = zlib.decompressobj(self._wbits)
                self._fed = True
                out += self._zlib.decompress(data, max(1, room - len(out)))
                data = self._zlib.unused_data if self._zlib.eof else self._zlib.unconsumed_tail
        except zlib.error as exc:
            text = str(exc)
            detail = (
                "a CRC-32 that does not match" if "data check" in text
                else "an ISIZE that does not match the length" if "length check" in text
                else text
            )  # fmt: skip
            raise self._broken(detail) from None
        return bytes(out)

    def finish(self) -> None:
        """Refuse a body whose last member is incomplete (no trailer, or cut anywhere)."""
        if self._zlib is not None and self._fed and not self._zlib.eof:
            raise self._broken("cut short: the compressed data or its trailer is missing")


async def _raw_chunks(response: httpx.Response) -> AsyncIterator[bytes]:
    """The undecoded body, chunk by chunk (responses built in memory are already read)."""
    if response.is_stream_consumed:
        yield response.content
        return
    async for chunk in response.aiter_raw():
        yield chunk


async def read_capped(response: httpx.Response, cap: int, url: str) -> bytes:
    """The decoded body, or BodyTooLarge once it passes ``cap`` bytes (decoded or received)."""

    def too_big(detail: str) -> BodyTooLarge:
        return BodyTooLarge(
            f"POLL-3: body from {url} exceeds the {cap}-byte cap ({detail}); refused, not truncated",
            cap=cap,
            url=url,
            status_code=response.status_code,
        )

    length = response.headers.get("content-length", "").strip()
    encoding = response.headers.get("content-encoding", "identity")
    if response.is_stream_consumed:
        encoding = "identity"  # an in-memory response (e.g. a mock transport) is already decoded
    if length.isdigit() and int(length) > cap and encoding.strip().lower() in ("", "identity"):
        raise too_big(f"Content-Length {length}")
    decoder = BoundedDecoder(encoding, url)
    out = bytearray()
    async for chunk in _raw_chunks(response):
        out += decoder.feed(chunk, cap - len(out) + 1)
        if len(out) > cap:
            raise too_big(
                f"more than {cap} bytes {'decoded' if encoding != 'identity' else 'received'}"
            )
    decoder.finish()
    return bytes(out)


async def read_preview(response: httpx.Response, limit: int) -> bytes:
    """At most ``limit`` undecoded bytes: for an error message, never parsed."""
    out = bytearray()
    async for chunk in _raw_chunks(response):
        out += chunk
        if len(out) >= limit:
            break
    return bytes(out[:limit])


async def within(budget: float, work: Awaitable[_T]) -> _T:
    """``work`` bounded to ``budget`` seconds as a whole (asyncio.TimeoutError past it)."""
    return await asyncio.wait_for(work, timeout=max(budget, 0.001))


class AsyncClosing:
    """Closed by ``async with``: ``__aexit__`` awaits :meth:`aclose`."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Release what the object holds."""
        raise NotImplementedError


class BoundedHttp(AsyncClosing):
    """An ``httpx.AsyncClient`` that never follows a redirect by itself, reads every body under
    ``max_body_bytes`` and scrubs the credential values of ``headers`` from its messages.

    ``headers`` go with every request except across a redirect (CRED-4); the client always asks
    for an identity encoding, whatever ``headers`` say, so a caller's ``gzip`` cannot reopen the
    bomb. ``session_headers``: ``headers`` are also ``client``'s defaults, for callers that use
    it directly (only for a client whose caller follows no redirect). ``preview_bytes``: how much
    of a body the caller does not want whole is kept.
    """

    def __init__(
        self,
        *,
        max_body_bytes: int,
        timeout: float,
        headers: Mapping[str, str] | None = None,
        base_url: str = "",
        verify: bool | str | ssl.SSLContext = True,
        trust_env: bool = False,
        transport: httpx.AsyncBaseTransport | None = None,
        session_headers: bool = False,
        preview_bytes: int = 2048,
    ) -> None:
        self.max_body_bytes = max_body_bytes
        self.preview_bytes = preview_bytes
        #: What every request carries whatever the caller asked (and all a redirect carries).
        self.own_headers = {"Accept": "application/json", "Accept-Encoding": "identity"}
        # A server echoing a credential back (a 401 quoting it) must not put it in a message.
        self.secrets = secret_values(headers or {})
        self.headers = {
            **{k: v for k, v in (headers or {}).items() if k.lower() != "accept-encoding"},
            **self.own_headers,
        }
        self.client = httpx.AsyncClient(
            base_url=base_url,
            headers=dict(headers or {}) if session_headers else None,
            verify=tls_context() if verify is True else tls_context(verify),
            follow_redirects=False,
            trust_env=trust_env,
            transport=transport,
            timeout=timeout,
        )

    def scrub(self, text: str) -> str:
        """``text`` without any credential value this client sends."""
        return str(scrub(text, self.secrets))

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self.client.aclose()

    async def _read(self, response: httpx.Response, url: str, whole: bool) -> Reply:
        if whole:
            body = await read_capped(response, self.max_body_bytes, url)
        else:
            body = await read_preview(response, self.preview_bytes)
        return Reply(url, response.status_code, response.headers, body)

    async def send(
        self,
        method: str,
        url: str,
        *,
        budget: float,
        json: Any = None,
        params: Mapping[str, str] | None = None,
    ) -> Reply:
        """One request (no redirect followed), its body read whole under the cap; httpx's
        errors pass through (the caller words them), as do BodyTooLarge and asyncio.TimeoutError
        past ``budget``."""

        async def exchange() -> Reply:
            request = self.client.build_request(
                method, url, headers=self.headers, json=json, params=params, timeout=budget
            )
            response = await self.client.send(request, stream=True)
            try:
                return await self._read(response, str(request.url), True)
            finally:
                await response.aclose()

        return await within(budget, exchange())

    async def get_same_origin(
        self,
        url: str,
        *,
        budget: float,
        headers: Mapping[str, str],
        redirect_headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
    ) -> Reply:
        """GET ``url`` following at most MAX_REDIRECTS same-origin redirects (POLL-4), the whole
        exchange within ``budget`` (TransportError POLL-1 past it). A 200 body is read whole under
        the cap; any other status keeps a preview. ``headers`` (the caller's, on top of the
        client's) go to ``url`` only: a redirect carries ``redirect_headers`` (default the client's own
        headers alone, CRED-4).
        """
        after = self.own_headers if redirect_headers is None else redirect_headers
        try:
            return await within(budget, self._follow(url, budget, headers, after, params))
        except asyncio.TimeoutError:
            raise TransportError(
                f"POLL-1: GET {url} did not finish within {max(budget, 0.001):.1f} s (connect, "
                "headers and body together); given up",
                requirement="POLL-1",
                url=url,
            ) from None

    async def _follow(
        self,
        start: str,
        budget: float,
        headers: Mapping[str, str],
        redirect_headers: Mapping[str, str],
        params: Mapping[str, str] | None,
    ) -> Reply:
        url = httpx.URL(start)
        for _ in range(MAX_REDIRECTS + 1):
            request = self.client.build_request(
                "GET", url, headers=headers, params=params, timeout=budget
            )
            try:
                response = await self.client.send(request, stream=True)
            except httpx.TransportError as exc:
                raise self._failed(f"GET {url} failed", exc, url) from exc
            except UnicodeError as exc:  # httpx reads a redirect's Location host even unfollowed
                raise PolicyError(
                    f"POLL-4: {url} redirects to a Location whose host is not valid punycode "
                    f"({exc}); not followed",
                    requirement="POLL-4",
                    url=str(url),
                ) from None
            try:
                if response.status_code in REDIRECTS and "location" in response.headers:
                    url = self._redirect_target(url, response)
                    # CRED-4: the caller's headers (credentials among them) never cross a
                    # redirect, not even to the same origin; only the client's own go along.
                    headers = redirect_headers
                    continue
                return await self._read(response, str(url), response.status_code == 200)
            except httpx.TransportError as exc:
                raise self._failed(f"reading {url} failed", exc, url) from exc
            finally:
                await response.aclose()
        raise PolicyError(
            f"POLL-4: more than {MAX_REDIRECTS} redirects from {start}",
            requirement="POLL-4",
            url=start,
        )

    def _failed(self, what: str, exc: Exception, url: httpx.URL) -> TransportError:
        return TransportError(
            self.scrub(f"POLL-1: {what}: {type(exc).__name__}: {exc}"),
            requirement="POLL-1",
            url=str(url),
        )

    def _redirect_target(self, url: httpx.URL, response: httpx.Response) -> httpx.URL:
        """Where a redirect leads, or PolicyError (POLL-4) when it leaves the origin."""
        location = response.headers["location"]
        try:
            target: httpx.URL | None = url.join(location)
        except httpx.InvalidURL:
            target = None
        unusable = (
            host_problem(target.raw_host.decode("ascii", "replace")) if target is not None else None
        )
        if (
            target is not None
            and unusable is None
            and origin(target) == origin(url)
            and not target.userinfo
        ):
            return target
        if target is None:
            why = "which is not a URL"
        elif unusable is not None:  # origin_text would read an invalid host
            why = f"whose host is unusable ({unusable})"
        elif target.userinfo:
            why = "which carries user info (CRED-1)"
        else:
            why = f"on another origin {origin_text(target)}"
        raise PolicyError(
            self.scrub(
                f"POLL-4: {url} answered {response.status_code} with Location "
                f"{redact_url(location)!r}, {why}; not followed"
            ),
            requirement="POLL-4",
            url=str(url),
            status_code=response.status_code,
        )
