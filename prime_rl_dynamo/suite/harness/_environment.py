"""The environment of one Dynamo fleet: what its frontend and stub workers are configured with.

Dynamo reads its whole configuration from environment variables. This module builds them for the
installed release (loopback hosts, the discovery store, the request plane, the caller's
overrides) and answers what follows from them: the namespace scope the frontend reports and
which engines it lists.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from prime_rl_dynamo.errors import HarnessError, UnsupportedReleaseError
from prime_rl_dynamo.suite.harness._release import DynamoRelease, require_release
from prime_rl_dynamo.topology import EngineSpec
from prime_rl_dynamo.wire import DISCOVERY_BACKENDS, REQUEST_PLANES

__all__ = ["DISCOVERY_BACKENDS", "REQUEST_PLANES", "FleetEnvironment", "scope_variables"]


_TRUTHY = ("1", "true", "on", "yes")

# The variables that ask the frontend for a scope beyond the exact namespace, and that scope.
_SCOPE_VARIABLES = {
    "DYN_NAMESPACE_PREFIX": "prefix",
    "DYN_NAMESPACE_WORKER_SUFFIX": "suffix",
    "DYN_NAMESPACE_PREFIX_STRICT": "prefix-strict",
}

# Variables of the caller's environment that would leak into the fleet's Dynamo configuration.
_SCRUBBED_PREFIXES = ("DYN_", "ETCD_", "NATS_")


def scope_variables(
    namespace_prefix: str | None, worker_suffix: str | None, prefix_strict: bool
) -> dict[str, str]:
    """The variables that set the frontend's namespace scope: ``DYN_NAMESPACE_PREFIX``,
    ``DYN_NAMESPACE_WORKER_SUFFIX`` and ``DYN_NAMESPACE_PREFIX_STRICT`` (unset ones omitted)."""
    scope: dict[str, str] = {}
    if namespace_prefix:
        scope["DYN_NAMESPACE_PREFIX"] = namespace_prefix
    if worker_suffix:
        scope["DYN_NAMESPACE_WORKER_SUFFIX"] = worker_suffix
    if prefix_strict:
        scope["DYN_NAMESPACE_PREFIX_STRICT"] = "true"
    return scope


@dataclass
class FleetEnvironment:
    """The Dynamo configuration shared by every process of one fleet.

    ``extra`` holds the caller's variables (they win over the harness's); ``namespace`` is the
    topology's, which the frontend scans unless ``extra`` says otherwise; ``python`` is the
    interpreter of the frontend and stub processes; ``release`` the Dynamo release they run
    (its host settings and scopes differ). ``etcd_url`` and ``nats_url`` are set once those
    servers run.
    """

    workdir: Path
    namespace: str
    discovery: str = "file"
    request_plane: str = "tcp"
    extra: dict[str, str] = field(default_factory=dict)
    python: str = sys.executable
    release: DynamoRelease = field(default_factory=require_release)
    etcd_url: str | None = None
    nats_url: str | None = None

    def __post_init__(self) -> None:
        if self.request_plane not in REQUEST_PLANES:
            raise HarnessError(
                f"request plane must be one of {list(REQUEST_PLANES)}, got {self.request_plane!r}"
            )
        if self.discovery not in DISCOVERY_BACKENDS:
            raise HarnessError(
                f"discovery backend must be one of {list(DISCOVERY_BACKENDS)}, "
                f"got {self.discovery!r}"
            )
        for variable, scope in _SCOPE_VARIABLES.items():
            if self.extra.get(variable) and scope not in self.release.scopes:
                raise UnsupportedReleaseError(
                    f"{self.release.label} has no {scope} namespace scope ({variable} is not "
                    f"read by its frontend; scopes it has: {', '.join(self.release.scopes)})"
                )

    # -- variables -----------------------------------------------------------------------------

    def base(self) -> dict[str, str]:
        """What every process of the fleet runs with (the caller's own DYN_/ETCD_/NATS_ dropped)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUBBED_PREFIXES)}
        # Before 1.6.0 the response-stream host names a network interface ("lo"), not an address.
        stream_host = self.release.response_stream_host
        env.update(
            {
                "PYTHONUNBUFFERED": "1",
                "DYN_LOG": "warn",
                "DYN_DISCOVERY_BACKEND": self.discovery,
                "DYN_REQUEST_PLANE": self.request_plane,
                "DYN_TCP_RPC_HOST": "127.0.0.1",
                "DYN_TCP_RESPONSE_STREAM_HOST": stream_host,
                "DYN_EVENT_PLANE_HOST": "127.0.0.1",
                "DYN_SYSTEM_HOST": "127.0.0.1",
                # Model cards: never download, and keep the runtime's card cache
                # (~/.cache/dynamo/mdc; XDG_CACHE_HOME is not read) in the fleet's directory.
                "HF_HUB_OFFLINE": "1",
                "HOME": str(self.workdir / "home"),
            }
        )
        if self.discovery == "file":
            store = self.workdir / "discovery"
            store.mkdir(exist_ok=True)
            env["DYN_FILE_KV"] = str(store)
        elif self.etcd_url is not None:
            env["ETCD_ENDPOINTS"] = self.etcd_url
        if self.nats_url is not None:
            env["NATS_SERVER"] = self.nats_url
        env.update(self.extra)
        return env

    def frontend(self, rl_port: int) -> dict[str, str]:
        """The frontend's: the base plus its RL listener on ``rl_port`` and no system server."""
        env = self.base()
        env.update(
            {
                "DYN_ENABLE_RL": "true",
                "DYN_RL_PORT": str(rl_port),
                "DYN_NAMESPACE": self.namespace,
                "DYN_SYSTEM_PORT": "-1",
            }
        )
        env.update(self.extra)
        return env

    # -- namespace scope -----------------------------------------------------------------------

    @property
    def scope(self) -> str:
        """The body's ``namespace`` the frontend reports: the prefix under a prefix scope, else
        the namespace it scans (``DYN_NAMESPACE``, default the topology's, plus
        ``-{DYN_NAMESPACE_WORKER_SUFFIX}`` when that is set)."""
        prefix = self.extra.get("DYN_NAMESPACE_PREFIX")
        if prefix:
            return prefix
        base = self.extra.get("DYN_NAMESPACE") or self.namespace
        suffix = self.extra.get("DYN_NAMESPACE_WORKER_SUFFIX")
        return f"{base}-{suffix}" if suffix else base

    def in_namespace_scope(self, namespace: str) -> bool:
        """Whether the frontend scans this namespace, as Dynamo 1.5.0 to 1.6.1 do it (measured):
        a prefix ``P`` covers ``P`` and ``P-...`` (not ``P0``), only ``P`` itself when
        ``DYN_NAMESPACE_PREFIX_STRICT`` is true; the worker suffix is ignored under a prefix."""
        prefix = self.extra.get("DYN_NAMESPACE_PREFIX")
        if prefix:
            strict = self.extra.get("DYN_NAMESPACE_PREFIX_STRICT", "").strip().lower() in _TRUTHY
            return namespace == prefix or (not strict and namespace.startswith(prefix + "-"))
        return namespace == self.scope

    def lists(self, spec: EngineSpec) -> bool:
        """Whether the frontend lists this engine at all.

        Its namespace must be in the scope (``in_namespace_scope``); its endpoint must be
        ``DYN_RL_ENDPOINT`` (``rl``); its component must be in ``DYN_RL_COMPONENTS`` /
        ``DYN_RL_COMPONENT`` when set.
        """
        if not self.in_namespace_scope(spec.namespace):
            return False
        if spec.endpoint != (self.extra.get("DYN_RL_ENDPOINT") or "rl"):
            return False
        allowed = self.extra.get("DYN_RL_COMPONENTS") or self.extra.get("DYN_RL_COMPONENT")
        if allowed:
            return spec.component in {c.strip() for c in allowed.split(",") if c.strip()}
        return True
