"""The URL rules of the contract that a pattern cannot say: whether an admin_base_url's host is
usable (WORKER-8: valid punycode, a real IPv6 address) and when two admin URLs are the same
endpoint (LIST-6). URLs are read by ``urllib.parse``; hosts are compared by one normaliser
(``host_key``), for LIST-6 and the admin host allow-list alike. Pure; shared by the validator,
the discovery client, the credentials and the admin pool."""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import urlsplit

from prime_rl_dynamo.errors import ConfigError

if TYPE_CHECKING:
    import httpx

__all__ = [
    "admin_key",
    "ascii_name",
    "check_authority",
    "host_key",
    "host_problem",
    "url_host",
    "url_host_problem",
]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_TRIPLET = re.compile(r"%([0-9A-Fa-f]{2})")


class _Parts(NamedTuple):
    scheme: str  # lower case
    userinfo: str  # as written, "" when none
    host: str  # lower case, an IPv6 literal (or any bracketed host) in its brackets
    port: int | None  # -1: not a number up to 65535
    rest: str  # everything after the authority, as written: path, query, fragment


def _split(url: str) -> _Parts | None:
    """``url`` as ``urllib.parse.urlsplit`` reads it; None when it has no ``scheme://`` authority
    or ``urlsplit`` refuses it (an unclosed bracket, a bracketed host that is not an address)."""
    if "://" not in url or any(c in url for c in "\t\r\n"):
        return None  # no authority; or characters urlsplit would silently drop
    try:
        parts = urlsplit(url)
    except ValueError:  # a bracketed host that is not an IP address, an unclosed bracket
        return None
    try:
        port: int | None = parts.port
    except ValueError:  # a port that is not a number up to 65535
        port = -1
    if not parts.scheme or url[len(parts.scheme) : len(parts.scheme) + 3] != "://":
        return None  # urlsplit dropped leading white space, or read no scheme
    userinfo, _, hostport = parts.netloc.rpartition("@")
    host = parts.hostname or ""
    rest = url[len(parts.scheme) + 3 + len(parts.netloc) :]
    return _Parts(parts.scheme, userinfo, f"[{host}]" if hostport[:1] == "[" else host, port, rest)


def host_problem(host: str) -> str | None:
    """Why ``host`` (as written in a URL, IPv6 in brackets) cannot be connected to, or None.

    The checks a pattern cannot make: a name with a punycode label (one that starts with
    ``xn--``, in any case) must be valid IDNA (httpx raises ``idna.IDNAError`` when it reads such
    a host) and a bracketed host must be an IPv6 address. ``xn--`` inside a label (``a_xn--b``)
    does not make it punycode: one endpoint, however spelt, gets one verdict.
    """
    if host.startswith("["):
        try:
            ipaddress.IPv6Address(host[1:-1] if host.endswith("]") else host[1:])
        except ValueError:
            return f"{host} is not an IPv6 address"
        return None if host.endswith("]") else f"{host} lacks its closing bracket"
    if not any(label.startswith("xn--") for label in host.lower().split(".")):
        return None
    import idna

    try:
        idna.decode(host.rstrip(".") if host.endswith(".") and not host.endswith("..") else host)
    except (idna.IDNAError, UnicodeError, ValueError) as exc:
        return f"host {host!r} is not valid punycode ({exc})"
    return None


def url_host(host: str) -> str:
    """``host`` as a URL writes it: an IPv6 literal in brackets, any other host as it is."""
    return f"[{host}]" if ":" in host else host


def check_authority(url: httpx.URL, where: str, *, requirement: str | None = None) -> None:
    """Refuse (ConfigError) a parsed URL carrying user info (CRED-1) or an unusable host
    (:func:`host_problem`); ``where`` names the URL in the message (never its credentials),
    ``requirement`` is the one the host check answers to (None: a configuration rule)."""
    if url.userinfo:
        # Never echo the credentials back into logs.
        raise ConfigError(
            f"CRED-1: {where} carries user info (user:password@); credentials never travel in "
            "URLs: pass them as headers instead",
            requirement="CRED-1",
        )
    problem = host_problem(url.raw_host.decode("ascii", "replace"))
    if problem is not None:  # reading url.host would raise idna.IDNAError
        prefix = f"{requirement}: " if requirement else ""
        raise ConfigError(
            f"{prefix}{where} has an unusable host: {problem}", requirement=requirement
        )


def url_host_problem(url: str) -> str | None:
    """:func:`host_problem` of the host of ``scheme://host[:port][/path]`` (None for another
    shape, and for an IPv6 literal that lacks its closing bracket: the pattern refuses that)."""
    parts = _split(url)
    if parts is not None or "://" not in url:
        return None if parts is None else host_problem(parts.host)
    # urlsplit refuses a bracketed host that is not an IP address without naming it: the host is
    # then read as RFC 3986 delimits the authority (up to the first "/", "?" or "#").
    authority = re.split(r"[/?#]", url.split("://", 1)[1], maxsplit=1)[0]
    host = authority.rpartition("@")[2]
    if host.startswith("[") and "]" in host:
        return host_problem(host[: host.index("]") + 1])
    return None


def host_key(host: str) -> str:
    """A host as it is compared, by LIST-6 (:func:`admin_key`) and the admin host allow-list
    alike: lower case, an IPv6 address compressed and without brackets, one trailing dot of a name
    dropped (``name.`` is the same DNS name as ``name``; ``name..`` is not), and a Unicode name in
    its ASCII (punycode) form, as httpx sends it. Never raises: what is none of these is itself."""
    name = host.lower()
    if name.startswith("[") or ":" in name:
        try:
            return ipaddress.IPv6Address(name.removeprefix("[").removesuffix("]")).compressed
        except ValueError:
            return name
    if name.endswith(".") and not name.endswith(".."):
        name = name[:-1]
    if not name.isascii():
        name = ascii_name(name) or name
    return name


def ascii_name(name: str) -> str | None:
    """The punycode form of a Unicode host name as httpx encodes it (None: not a valid name)."""
    import httpx

    try:
        return httpx.URL(scheme="http", host=name).raw_host.decode("ascii")
    except (httpx.InvalidURL, UnicodeError, ValueError):
        return None


def admin_key(url: str) -> str:
    """What LIST-6 compares: the endpoint the admin pool calls for ``url``.

    The scheme lower-cased, the host as :func:`host_key` compares it, the port explicit (80 and
    443 by default), percent-encoded unreserved characters decoded and other triplets upper-cased,
    and trailing slashes removed from the path (the pool calls ``{path}/pause`` either way); user
    info stays (such a URL is refused anyway: CRED-1). Never raises: a URL ``urllib.parse`` cannot
    split into scheme, authority and path, or whose port is not a number up to 65535, is its own
    key.
    """
    parts = _split(url)
    if parts is None or parts.port == -1:
        return url
    number = parts.port if parts.port is not None else _DEFAULT_PORTS.get(parts.scheme, 0)
    path = parts.rest
    if "%" in path or not path.isascii():
        path = _TRIPLET.sub(_normal_triplet, path)
        path = "".join(
            c if c.isascii() else "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass"))
            for c in path
        )
    userinfo = f"{parts.userinfo}@" if parts.userinfo else ""
    host = url_host(host_key(parts.host))
    return f"{parts.scheme}://{userinfo}{host}:{number}{path.rstrip('/')}"


def _normal_triplet(m: re.Match[str]) -> str:
    char = chr(int(m.group(1), 16))
    return char if char in _UNRESERVED else f"%{m.group(1).upper()}"
