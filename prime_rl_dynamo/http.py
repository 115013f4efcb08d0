"""Shared HTTP plumbing of the client and the admin pool: one TLS context, the CA-bundle setting,
header parsing (redaction lives in ``prime_rl_dynamo.redaction``).

Building an SSL context loads the CA bundle (about 50 ms); one is built once and shared, so an
admin pool of a thousand engines does not spend most of a minute on it.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

import httpx

from prime_rl_dynamo._urls import url_host
from prime_rl_dynamo.errors import ConfigError
from prime_rl_dynamo.variants import SMG_ERROR_HEADER

__all__ = [
    "authority",
    "origin_text",
    "parse_header",
    "parse_headers",
    "status_hint",
    "tls_context",
    "verify_setting",
]


@cache
def tls_context(verify: str | bool | ssl.SSLContext = True) -> ssl.SSLContext:
    """The TLS context for httpx's ``verify`` value, built once per value: True is the system CA
    bundle every client of this package shares, a path a CA bundle (``--cacert``), False no
    certificate check at all (``--insecure``)."""
    if isinstance(verify, ssl.SSLContext):
        return verify
    return httpx.create_ssl_context(verify=verify)


def tls_hint(failure: BaseException | None, verify: bool | str | ssl.SSLContext = True) -> str:
    """What to do about a TLS certificate that did not verify ('' when ``failure``'s chain holds
    no ``ssl.SSLCertVerificationError``): pass the CA with --cacert, or, when the certificate
    expired or a CA bundle was given already, what --cacert cannot fix."""
    seen: set[int] = set()
    cert: ssl.SSLCertVerificationError | None = None
    while failure is not None and id(failure) not in seen:
        if isinstance(failure, ssl.SSLCertVerificationError):
            cert = failure
            break
        seen.add(id(failure))
        failure = failure.__cause__ or failure.__context__
    if cert is None:
        return ""
    reason = cert.verify_message or cert.reason or "certificate verify failed"
    if cert.verify_code == 10:  # X509_V_ERR_CERT_HAS_EXPIRED: no CA bundle makes it valid
        return (
            f"the target's TLS certificate has expired ({reason}): renew it; --cacert cannot "
            "help (--insecure skips the check, for test setups only)"
        )
    if isinstance(verify, str):
        return (
            f"the target's TLS certificate does not verify against --cacert {verify} ({reason}): "
            "give the bundle of the CA that signed it (--insecure for a test setup)"
        )
    return (
        f"the target's TLS certificate is not trusted ({reason}): pass its CA bundle with "
        "--cacert FILE (or --insecure for a test setup)"
    )


def status_hint(status: int, headers: Mapping[str, str]) -> str:
    """What to do about a refused listing status, from the status and the response's headers
    (lower-cased names; '' when they say nothing more): the SMG gateway's 404 (its
    ``x-smg-error-code`` header) when its RL routes are off, and a 401 that asks for a bearer
    token (``www-authenticate: Bearer``)."""
    if status == 404 and SMG_ERROR_HEADER in headers:
        return (
            f"this 404 comes from the SMG gateway ({SMG_ERROR_HEADER}: "
            f"{headers[SMG_ERROR_HEADER][:40]}): started with --enable-rl it serves "
            "/v1/rl/workers on this port, in its own dialect, not Dynamo's (DIALECT-1); a "
            "Dynamo fleet is listed on Dynamo's RL listener (DYN_RL_PORT)"
        )
    scheme = headers.get("www-authenticate", "").split(" ", 1)[0]
    if status == 401 and scheme.lower() == "bearer":
        return (
            "the target asks for a bearer token (www-authenticate: Bearer): pass "
            "-H 'Authorization: Bearer ...'"
        )
    return ""


def verify_setting(cacert: str | None, insecure: bool) -> bool | str:
    """httpx's ``verify`` for a CA bundle path or an insecure run (ConfigError for a CA file that
    is missing or not a PEM bundle)."""
    if insecure:
        return False
    if cacert:
        path = Path(cacert)
        expected = "expected a CA bundle file (PEM certificates)"
        if path.is_dir():
            raise ConfigError(f"--cacert {cacert}: {expected}; found a directory")
        if not path.exists():
            raise ConfigError(f"--cacert {cacert}: {expected}; no such file")
        if not path.is_file():
            raise ConfigError(f"--cacert {cacert}: {expected}; found a device or special file")
        try:
            tls_context(cacert)
        except (ssl.SSLError, OSError, ValueError) as exc:
            found = "an empty file" if path.stat().st_size == 0 else f"no certificate ({exc})"
            raise ConfigError(f"--cacert {cacert}: {expected}; found {found}") from None
        return cacert
    return True


_TOKEN_CHARS = frozenset(
    "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)
_HIDDEN = "(the text is not shown: it may hold a credential)"


def _char_kind(char: str) -> str:
    if char in "\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029":
        return "a line break"
    if not char.isascii():
        return "a non-ASCII character"
    return "a control character (DEL)" if char == "\x7f" else "a control character"


def _name_char(char: str) -> str:
    # A visible ASCII character may be quoted; anything else is named by its kind.
    return repr(char) if "!" <= char <= "~" or char == " " else _char_kind(char)


def parse_header(text: str | tuple[str, str]) -> tuple[str, str]:
    """``"Name: value"`` (curl's ``-H`` form) or a ``(name, value)`` pair, checked as HTTP carries
    it, or ConfigError saying why.

    The name is an RFC 9110 token; the value visible ASCII, spaces and tabs only (a vertical tab,
    a form feed, DEL, U+0085 or U+2028 would reach the wire or break the HTTP library, and the
    escaped form of the value would defeat the scrubber). A malformed header is never quoted
    back: ``-H 'Authorization Bearer TOKEN'`` (no colon) is all value.
    """
    if isinstance(text, tuple):
        name, sep, value = str(text[0]), ":", str(text[1])
    else:
        name, sep, value = str(text).partition(":")
    name = name.strip(" \t")
    if not sep or not name:
        found = "no ':'" if not sep else "an empty name"
        raise ConfigError(
            "header: expected NAME: VALUE, e.g. 'Authorization: Bearer ...'; "
            f"found {found} {_HIDDEN}"
        )
    bad_name = next((i for i, c in enumerate(name) if c not in _TOKEN_CHARS), None)
    if bad_name is not None:
        raise ConfigError(
            "header: expected a name before ':' made of letters, digits and !#$%&'*+-.^_`|~ "
            f"(an HTTP field name); found {_name_char(name[bad_name])} at position {bad_name} of "
            f"the name {_HIDDEN}"
        )
    value = value.strip(" \t")
    bad = next((i for i, c in enumerate(value) if not (" " <= c <= "~" or c == "\t")), None)
    if bad is not None:
        raise ConfigError(
            f"header {name}: expected a value of visible ASCII characters, spaces and tabs; "
            f"found {_char_kind(value[bad])} at position {bad} (the value is not shown)"
        )
    return name, value


def parse_headers(texts: Iterable[str | tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """Every ``-H`` checked by ``parse_header``; a name given twice (in any case) is refused, since
    one value would be silently dropped."""
    out = tuple(parse_header(text) for text in texts)
    seen: set[str] = set()
    for name, _ in out:
        if name.lower() in seen:
            raise ConfigError(
                f"header {name}: given twice; expected each header name once (HTTP would keep "
                "one value and drop the other)"
            )
        seen.add(name.lower())
    return out


def origin(url: httpx.URL | str) -> tuple[str, str, int | None]:
    """The origin (RFC 6454) of ``url``: scheme, lower-case host, port (the scheme's default when
    none is written). The host is read in its A-label form, which never raises where ``url.host``
    decodes punycode and may; the one comparison of origins for redirects and header scoping."""
    url = httpx.URL(url)
    default = {"http": 80, "https": 443}.get(url.scheme)
    return (url.scheme, url.raw_host.decode("ascii", "replace").lower(), url.port or default)


def authority(url: httpx.URL) -> str:
    """``host[:port]`` as a URL and a Host header write it: IPv6 in brackets, an explicit port
    kept (even 0)."""
    port = f":{url.port}" if url.port is not None else ""
    return f"{url_host(url.host)}{port}"


def origin_text(url: httpx.URL) -> str:
    """``scheme://host[:port]`` as it is written (see :func:`authority`)."""
    return f"{url.scheme}://{authority(url)}"
