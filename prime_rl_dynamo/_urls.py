"""The URL rules of the contract that a pattern cannot say: whether an admin_base_url's host is
usable (WORKER-8: valid punycode, a real IPv6 address) and when two admin URLs are the same
endpoint (LIST-6). Pure; shared by the validator, the discovery client and the admin pool."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from prime_rl_dynamo.errors import ConfigError

if TYPE_CHECKING:
    import httpx

__all__ = ["admin_key", "check_authority", "host_problem", "url_host", "url_host_problem"]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_TRIPLET = re.compile(r"%([0-9A-Fa-f]{2})")
_AUTHORITY = re.compile(r"(?P<host>\[[^\]/]*\]|[^:/\[\]]*)(?::(?P<port>[0-9]*))?")


def _split(url: str) -> tuple[str, str, str, str] | None:
    """(scheme, host, port, path) of ``scheme://host[:port][/path]``, None for another shape."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return None
    authority, slash, path = rest.partition("/")
    m = _AUTHORITY.fullmatch(authority)
    if m is None:
        return None
    return scheme.lower(), m["host"], m["port"] or "", slash + path


def host_problem(host: str) -> str | None:
    """Why ``host`` (as written in a URL, IPv6 in brackets) cannot be connected to, or None.

    The checks a pattern cannot make: every ``xn--`` label must be valid punycode (httpx raises
    ``idna.IDNAError`` when it reads such a host) and a bracketed host must be an IPv6 address.
    """
    if host.startswith("["):
        import ipaddress

        try:
            ipaddress.IPv6Address(host[1:-1] if host.endswith("]") else host[1:])
        except ValueError:
            return f"{host} is not an IPv6 address"
        return None if host.endswith("]") else f"{host} lacks its closing bracket"
    if "xn--" not in host.lower():
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
    """:func:`host_problem` of the host of ``scheme://host[:port][/path]`` (None for another shape)."""
    parts = _split(url)
    return None if parts is None else host_problem(parts[1])


def admin_key(url: str) -> str:
    """What LIST-6 compares: the endpoint the admin pool calls for ``url``.

    The scheme and host lower-cased (one trailing dot of a name dropped, IPv6 compressed), the
    port explicit (80 and 443 by default, leading zeros dropped), percent-encoded unreserved
    characters decoded and other triplets upper-cased, and trailing slashes removed from the path
    (the pool calls ``{path}/pause`` either way). Never raises: a URL of another shape is its own key.
    """
    parts = _split(url)
    if parts is None:
        return url
    scheme, host, port, path = parts
    host = host.lower()
    if host.startswith("[") and host_problem(host) is None:
        import ipaddress

        host = f"[{ipaddress.IPv6Address(host[1:-1]).compressed}]"
    elif host.endswith(".") and not host.endswith(".."):
        host = host[:-1]
    number = int(port) if port else _DEFAULT_PORTS.get(scheme, 0)
    if "%" in path or not path.isascii():
        path = _TRIPLET.sub(_normal_triplet, path)
        path = "".join(
            c if c.isascii() else "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass"))
            for c in path
        )
    return f"{scheme}://{host}:{number}{path.rstrip('/')}"


def _normal_triplet(m: re.Match[str]) -> str:
    char = chr(int(m.group(1), 16))
    return char if char in _UNRESERVED else f"%{m.group(1).upper()}"
