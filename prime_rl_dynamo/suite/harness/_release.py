"""Which ``ai-dynamo-runtime`` release the harness runs on, and what differs between releases.

Read from each release's own runtime binary (``strings dynamo/_core.abi3.so``) and type stubs
(``dynamo/_core.pyi``), then confirmed by running a fleet on it (docs/compat.md): the first
release with the RL listener, the hosts its loopback settings take, which namespace scopes its
frontend knows, and whether its workers can publish an admin URL and a world size.
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from dataclasses import dataclass

from prime_rl_dynamo.errors import UnsupportedReleaseError

__all__ = [
    "FIRST_LISTENER_RELEASE",
    "DynamoRelease",
    "installed_release",
    "release_label",
    "require_release",
]

DISTRIBUTION = "ai-dynamo-runtime"
#: The first release on PyPI whose runtime serves ``GET /v1/rl/workers`` (``DYN_ENABLE_RL``,
#: ``DYN_RL_PORT``): 1.2.1 and every release before it has neither.
FIRST_LISTENER_RELEASE = "1.3.0.post1"

_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:\.post(\d+))?")


def _key(version: str) -> tuple[int, int, int, int]:
    """``"1.3.0.post1"`` -> ``(1, 3, 0, 1)``; a local or pre-release suffix is ignored."""
    match = _VERSION.match(version)
    if match is None:
        raise UnsupportedReleaseError(
            f"{DISTRIBUTION} {version!r} is not a release version (expected X.Y.Z or X.Y.Z.postN)"
        )
    major, minor, patch, post = match.groups()
    return int(major), int(minor), int(patch), int(post or 0)


@dataclass(frozen=True)
class DynamoRelease:
    """One ``ai-dynamo-runtime`` release and how the harness has to drive it.

    Every property is a fact about that release's runtime, read from its binary and confirmed
    by a fleet on it (docs/findings.md, "Across releases").
    """

    version: str

    @property
    def key(self) -> tuple[int, int, int, int]:
        """The version as a comparable tuple."""
        return _key(self.version)

    def at_least(self, version: str) -> bool:
        """Whether this release is ``version`` or newer."""
        return self.key >= _key(version)

    @property
    def label(self) -> str:
        """How reports and messages name it: ``Dynamo 1.5.1``."""
        return f"Dynamo {self.version}"

    @property
    def has_listener(self) -> bool:
        """Whether its frontend can serve the RL listener at all."""
        return self.at_least(FIRST_LISTENER_RELEASE)

    @property
    def response_stream_host(self) -> str:
        """What ``DYN_TCP_RESPONSE_STREAM_HOST`` takes for 127.0.0.1: before 1.6.0 it names a
        network interface (``lo``; ``127.0.0.1`` is refused per worker with ``Interface not found:
        127.0.0.1``), from 1.6.0 an address. ``DYN_TCP_RPC_HOST`` is an address in every release
        (``lo`` there: ``Invalid TCP bind address``)."""
        return "127.0.0.1" if self.at_least("1.6.0") else "lo"

    @property
    def scopes(self) -> tuple[str, ...]:
        """The namespace scopes its frontend knows: ``exact`` always; ``prefix`` and ``suffix``
        (``DYN_NAMESPACE_PREFIX``, ``DYN_NAMESPACE_WORKER_SUFFIX``) from 1.5.0;
        ``prefix-strict`` (``DYN_NAMESPACE_PREFIX_STRICT``) from 1.6.0."""
        scopes = ["exact"]
        if self.at_least("1.5.0"):
            scopes += ["prefix", "suffix"]
        if self.at_least("1.6.0"):
            scopes.append("prefix-strict")
        return tuple(scopes)

    @property
    def sends_protocol_version(self) -> bool:
        """Whether its listing carries ``protocol_version`` (1.5.0 on; before, the body is
        ``{namespace, workers}`` only and BODY-1 fails)."""
        return self.at_least("1.5.0")

    @property
    def lists_admin(self) -> bool:
        """Whether its frontend passes a worker's ``admin_base_url`` and ``world_size`` into the
        listing (1.5.0 on; earlier frontends list ``system_url`` and ``routes`` only)."""
        return self.at_least("1.5.0")

    def cannot_host(self) -> str | None:
        """Why no stub fleet can run on this release (one line), or None when one can."""
        if not self.has_listener:
            return (
                f"{DISTRIBUTION} {self.version} has no RL listener (no DYN_ENABLE_RL, no "
                f"/v1/rl/workers in its runtime); the first release with one is "
                f"{FIRST_LISTENER_RELEASE}"
            )
        return None


def installed_release(python: str | None = None) -> DynamoRelease | None:
    """The ``ai-dynamo-runtime`` release importable here (or by the interpreter ``python``), or
    None when none is installed."""
    if python is not None and python != sys.executable:
        probe = f"import importlib.metadata as m; print(m.version({DISTRIBUTION!r}))"
        done = subprocess.run(
            [python, "-c", probe], capture_output=True, text=True, timeout=60, check=False
        )
        return DynamoRelease(done.stdout.strip()) if done.returncode == 0 else None
    try:
        return DynamoRelease(importlib.metadata.version(DISTRIBUTION))
    except importlib.metadata.PackageNotFoundError:
        return None


def release_label() -> str:
    """``Dynamo 1.5.1`` for the installed release, ``Dynamo (not installed)`` without one: what
    help texts say instead of a hard-coded release."""
    release = installed_release()
    return release.label if release is not None else "Dynamo (not installed)"


def require_release(python: str | None = None) -> DynamoRelease:
    """The installed release (of ``python``, default this interpreter) when it can host a stub
    fleet; else UnsupportedReleaseError with the one-line reason."""
    release = installed_release(python)
    if release is None:
        raise UnsupportedReleaseError(
            f"{DISTRIBUTION} is not installed (pip install 'prime-rl-dynamo[dynamo]', or any "
            f"release from {FIRST_LISTENER_RELEASE} on)"
        )
    why = release.cannot_host()
    if why is not None:
        raise UnsupportedReleaseError(why)
    return release
