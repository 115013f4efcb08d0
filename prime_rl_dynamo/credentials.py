"""The credential policy of admin calls: what they carry and which hosts may receive it.

Credentials (API key as Bearer, static headers, headers from named environment variables) go with
every admin call (CRED-2), only to hosts an allow-list permits when one is set (CRED-3). A value
no HTTP header can carry is refused without being shown.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from prime_rl_dynamo._urls import ascii_name, host_key
from prime_rl_dynamo.defaults import API_KEY_VAR, NO_API_KEY
from prime_rl_dynamo.errors import ConfigError

__all__ = ["Credentials", "check_allow_list", "host_allowed"]


def _host_key(text: str) -> str:
    """A host or an allow-list entry as the allow-list compares it: :func:`_urls.host_key` of it
    without surrounding white space (the host normaliser LIST-6 uses too)."""
    return host_key(text.strip())


def host_allowed(host: str, patterns: Sequence[str]) -> bool:
    """Whether ``host`` matches an allow-list entry: exact name, ``*.suffix`` wildcard, or CIDR.

    Names are compared case-insensitively, with one trailing dot ignored and Unicode names in
    their punycode form, and never resolved: a DNS answer must not widen the list.
    ``*.example.com`` matches ``a.example.com`` and ``a.b.example.com`` but not ``example.com``.
    """
    name = _host_key(host)
    try:
        addr: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(name)
    except ValueError:
        addr = None
    for raw in patterns:
        pattern = raw.strip()
        if "/" in pattern:
            try:
                network = ipaddress.ip_network(pattern.strip("[]"), strict=False)
            except ValueError:
                continue
            if addr is not None and addr.version == network.version and addr in network:
                return True
            continue
        if pattern.startswith("*."):
            suffix = "." + _host_key(pattern[2:])
            if addr is None and name.endswith(suffix) and len(name) > len(suffix):
                return True
            continue
        pattern = _host_key(pattern)
        if not pattern:
            continue
        if pattern == "*":
            return True
        if addr is not None:
            try:
                if ipaddress.ip_address(pattern) == addr:
                    return True
            except ValueError:
                continue
        elif name == pattern:
            return True
    return False


def check_allow_list(patterns: Sequence[str]) -> None:
    """Refuse entries that are malformed or can never match a host (a port, a scheme, user info)."""

    def refuse(raw: str, why: str) -> ConfigError:
        return ConfigError(f"CRED-3: allow-list entry {raw!r} {why}", requirement="CRED-3")

    for raw in patterns:
        pattern = raw.strip()
        if "/" in pattern and "://" not in pattern:
            try:
                ipaddress.ip_network(pattern.strip("[]"), strict=False)
            except ValueError as exc:
                raise refuse(raw, f"is not a CIDR: {exc}") from None
            continue
        shape = "must be a host name, '*.suffix', an IP address or a CIDR"
        if not pattern or (
            "*" in pattern
            and pattern != "*"
            and not (pattern.startswith("*.") and "*" not in pattern[2:])
        ):
            raise refuse(raw, shape)
        if "://" in pattern or "@" in pattern or "/" in pattern:
            raise refuse(raw, f"{shape}, not a URL: it is compared with the host alone")
        bare = pattern[1:-1] if pattern.startswith("[") and pattern.endswith("]") else pattern
        if ":" in bare or pattern.startswith("["):
            try:
                ipaddress.ip_address(bare)
            except ValueError:
                raise refuse(
                    raw,
                    f"{shape}; it names a port, which never matches: entries are compared with "
                    "the host alone",
                ) from None
            continue
        if any(c.isspace() or c in "?#%\\" for c in pattern):
            raise refuse(raw, shape)
        if pattern != "*" and "" in _host_key(pattern.removeprefix("*.")).split("."):
            raise refuse(raw, "has an empty label (two dots in a row, or a leading dot)")
        if not pattern.isascii() and ascii_name(_host_key(pattern.removeprefix("*."))) is None:
            raise refuse(raw, "is not a valid internationalised host name")


_HEADER_SAFE = frozenset(chr(c) for c in range(0x20, 0x7F)) | {"\t"}


def _secret_value(value: str, where: str) -> str:
    """A credential as it goes on the wire: one trailing newline (``\\n`` or ``\\r\\n``, as a
    mounted secret file ends) is stripped; any other line break, control or non-ASCII character
    is refused, naming where the value came from and never the value (CRED-2)."""
    if value.endswith("\r\n"):
        value = value[:-2]
    elif value.endswith("\n"):
        value = value[:-1]
    bad = next((i for i, c in enumerate(value) if c not in _HEADER_SAFE), None)
    if bad is None and value != value.strip(" \t"):
        bad = 0 if value[:1] in " \t" else len(value) - 1
    if bad is not None:
        char = value[bad]
        kind = (
            "a line break"
            if char in "\r\n"
            else "a non-ASCII character"
            if not char.isascii()
            else "leading or trailing white space"
            if char in " \t"
            else "a control character"
        )
        raise ConfigError(
            f"CRED-2: {where} holds {kind} at position {bad} (of {len(value)}), which no HTTP "
            "header can carry; fix the secret (one trailing newline is stripped, nothing else); "
            "the value is not shown",
            requirement="CRED-2",
        )
    return value


@dataclass(frozen=True)
class Credentials:
    """What admin calls carry; secrets are kept out of ``repr``.

    ``headers_from_env`` maps a header name to the environment variable holding its value.
    ``allowed_hosts`` None means no allow-list (credentials go to every discovered engine).
    """

    api_key: str | None = field(default=None, repr=False)
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    headers_from_env: Mapping[str, str] = field(default_factory=dict)
    allowed_hosts: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.allowed_hosts is not None:
            object.__setattr__(self, "allowed_hosts", tuple(self.allowed_hosts))
            check_allow_list(self.allowed_hosts or ())
        if self.api_key is not None:
            object.__setattr__(self, "api_key", _secret_value(self.api_key, "the api_key"))
        object.__setattr__(
            self,
            "headers",
            {name: _secret_value(v, f"header {name}") for name, v in self.headers.items()},
        )

    @classmethod
    def from_env(
        cls,
        *,
        api_key_var: str | None = API_KEY_VAR,
        headers: Mapping[str, str] | None = None,
        headers_from_env: Mapping[str, str] | None = None,
        allowed_hosts: Sequence[str] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> Credentials:
        """Credentials as Prime-RL configures them: the API key is read from ``api_key_var``."""
        env = os.environ if environ is None else environ
        key = env.get(api_key_var) if api_key_var else None
        return cls(
            api_key=key,
            headers=dict(headers or {}),
            headers_from_env=dict(headers_from_env or {}),
            allowed_hosts=tuple(allowed_hosts) if allowed_hosts is not None else None,
        )

    def resolve(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """The headers to send: static, then from the environment (overriding), then Bearer key.

        An unset or ``"EMPTY"`` key sends no Authorization (Prime-RL's convention). A named
        environment variable that is unset is an error (CRED-2): silently dropping it would make
        the admin calls unauthenticated.
        """
        env = os.environ if environ is None else environ
        out = dict(self.headers)
        missing = [
            f"{header} <- ${var}" for header, var in self.headers_from_env.items() if var not in env
        ]
        if missing:
            raise ConfigError(
                "CRED-2: headers_from_env names unset environment variables: " + ", ".join(missing),
                requirement="CRED-2",
            )
        out.update(
            {
                header: _secret_value(env[var], f"header {header} <- ${var}")
                for header, var in self.headers_from_env.items()
            }
        )
        if self.api_key and self.api_key != NO_API_KEY:
            out["Authorization"] = f"Bearer {self.api_key}"
        return out

    def allows(self, host: str) -> bool:
        """Whether credentials may go to ``host`` (always, when no allow-list is set)."""
        return self.allowed_hosts is None or host_allowed(host, self.allowed_hosts)
