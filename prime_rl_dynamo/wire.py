"""The wire vocabulary of protocol 1, defined once: worker identity, the worker entry, the names.

Everything that names a worker, builds a worker's JSON object, spells the discovery path, bounds
an integer field or lists the weight-transfer conventions and the suite's profiles imports it from
here, so a change to the protocol is one edit.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, NamedTuple

from prime_rl_dynamo.errors import ConfigError

__all__ = [
    "DISCOVERY_PATH",
    "PROFILES",
    "U32_MAX",
    "U64_MAX",
    "WEIGHT_BROADCAST_TYPES",
    "Convention",
    "WorkerId",
    "transport_tcp",
    "worker_entry",
]

#: The discovery endpoint on the frontend's RL listener.
DISCOVERY_PATH = "/v1/rl/workers"

#: ``world_size`` (and every rank field) is an unsigned 32-bit integer on the wire.
U32_MAX = 2**32 - 1
#: ``instance_id`` is an unsigned 64-bit integer (real values exceed 2**53).
U64_MAX = 2**64 - 1

#: The conformance suite's profiles, in the order a run executes them.
PROFILES: tuple[str, ...] = ("frontend", "frontend-v2", "workers", "client", "roundtrip")


class WorkerId(NamedTuple):
    """A worker's identity. Tuple order is the canonical order (RANK-1); ``str()`` is its label.

    Strings compare by code point and ``instance_id`` as an integer, exactly as the frontend sorts.
    """

    namespace: str
    component: str
    endpoint: str
    instance_id: int

    def __str__(self) -> str:
        return f"{self.namespace}.{self.component}.{self.endpoint}#{self.instance_id}"

    @property
    def label(self) -> str:
        """``namespace.component.endpoint#instance_id``: how every message names this worker."""
        return str(self)

    @property
    def request_plane_url(self) -> str:
        """``dyn://namespace.component.endpoint``: the request-plane endpoint (not per instance)."""
        return request_plane_url(self.namespace, self.component, self.endpoint)

    @classmethod
    def of(cls, worker: Any) -> WorkerId:
        """The identity of anything with the four identity attributes (a model, a plan entry)."""
        return cls(worker.namespace, worker.component, worker.endpoint, int(worker.instance_id))

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any]) -> WorkerId:
        """The identity of a worker's JSON object (KeyError when a part is missing)."""
        return cls(
            entry["namespace"], entry["component"], entry["endpoint"], int(entry["instance_id"])
        )

    @classmethod
    def parse(cls, label: str) -> WorkerId:
        """The identity a label names; ValueError when ``label`` is not ``ns.comp.ep#id``."""
        head, sep, tail = label.rpartition("#")
        parts = head.split(".")
        if not sep or len(parts) < 3 or not tail.isdigit():
            raise ValueError(f"not a worker label (namespace.component.endpoint#id): {label!r}")
        namespace = ".".join(parts[:-2])
        return cls(namespace, parts[-2], parts[-1], int(tail))


def transport_tcp(worker: WorkerId, port: int, host: str = "127.0.0.1") -> dict[str, str]:
    """The ``transport`` object Dynamo 1.6.1 lists for a TCP request plane."""
    return {
        "tcp": f"{host}:{port}/{worker.instance_id & U64_MAX:016x}/"
        f"{worker.namespace}/{worker.component}/{worker.endpoint}"
    }


def worker_entry(
    worker: WorkerId,
    *,
    transport: Mapping[str, str],
    routes: tuple[str, ...] | list[str] = (),
    system_url: str | None = None,
    admin_base_url: str | None = None,
    model: str | None = None,
    world_size: int | None = None,
    error: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One worker's JSON object, keys in Dynamo 1.6.1's order.

    The order is the serialized Rust struct's: namespace, component, endpoint, instance_id,
    transport, request_plane_url, system_url, admin_base_url, model, routes, world_size, error
    (see the captured samples). Optional keys are omitted, never null. An errored worker carries
    ``routes: []`` and no URL, model or ``world_size`` (WORKER-6). Routes are sorted and unique
    (WORKER-4). ``extra`` keys (extension fields) come last.
    """
    entry: dict[str, Any] = {
        "namespace": worker.namespace,
        "component": worker.component,
        "endpoint": worker.endpoint,
        "instance_id": worker.instance_id,
        "transport": dict(transport),
        "request_plane_url": worker.request_plane_url,
    }
    if error is not None:
        entry["routes"] = []
        entry["error"] = error
        return entry
    optional = {"system_url": system_url, "admin_base_url": admin_base_url, "model": model}
    entry.update((key, value) for key, value in optional.items() if value is not None)
    entry["routes"] = sorted(set(routes))
    if world_size is not None:
        entry["world_size"] = world_size
    if extra:
        entry.update(extra)
    return entry


class Convention(str, enum.Enum):
    """How inference ranks are numbered inside the weight-transfer group."""

    #: Prime-RL's own NCCL broadcaster: offsets from 0, group W+1, trainer rank 0, worker +1.
    PRIME_NCCL = "prime-nccl"
    #: vLLM's native NCCL weight transfer: offsets from 1 (already the NCCL rank), group 1+W.
    VLLM_NATIVE_NCCL = "vllm-native-nccl"
    #: Prime-RL's NIXL transfer: offsets from 0, no collective group; the trainer awaits W peers.
    NIXL = "nixl"

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """Every convention's name, in definition order."""
        return tuple(c.value for c in cls)

    @classmethod
    def parse(cls, value: Convention | str) -> Convention:
        """The convention named ``value`` in any spelling of WEIGHT_BROADCAST_TYPES (``nccl`` is
        ``prime-nccl``, as in the configuration); ConfigError listing the valid names otherwise."""
        if isinstance(value, Convention):
            return value
        convention = WEIGHT_BROADCAST_TYPES.get(value) if isinstance(value, str) else None
        if convention is None:
            names = ", ".join(k for k, v in WEIGHT_BROADCAST_TYPES.items() if v is not None)
            why = (
                " (filesystem transfers need no rank plan)"
                if value in WEIGHT_BROADCAST_TYPES
                else ""
            )
            raise ConfigError(
                f"unknown weight-transfer convention {value!r}{why}; expected one of {names}"
            )
        return convention

    @property
    def first_offset(self) -> int:
        """The rank_offset sent to the first engine."""
        return 1 if self is Convention.VLLM_NATIVE_NCCL else 0

    @property
    def requirement(self) -> str:
        """The requirement ID that defines this convention's numbering."""
        return {
            Convention.PRIME_NCCL: "RANK-3",
            Convention.VLLM_NATIVE_NCCL: "RANK-4",
            Convention.NIXL: "RANK-5",
        }[self]


#: Every spelling of a weight transfer, in the configuration and on the command line alike, and the
#: convention it plans with (None: no rank plan).
WEIGHT_BROADCAST_TYPES: dict[str, Convention | None] = {
    "nccl": Convention.PRIME_NCCL,
    "prime-nccl": Convention.PRIME_NCCL,
    "vllm-native-nccl": Convention.VLLM_NATIVE_NCCL,
    "nixl": Convention.NIXL,
    "filesystem": None,
}


def entry_label(entry: object) -> str | None:
    """The label of a listed worker's JSON object however broken it is, ``?`` standing for a
    missing or mistyped part (None when ``entry`` is not an object): messages about a refused
    body still name the worker as far as it can be named."""
    if not isinstance(entry, Mapping):
        return None

    def part(name: str) -> str:
        value = entry.get(name)
        return str(value) if isinstance(value, str | int) and not isinstance(value, bool) else "?"

    return str(WorkerId._make(part(name) for name in WorkerId._fields))


#: Every member of a worker's JSON object, in Dynamo 1.6.1's order (``worker_entry`` writes them so).
WORKER_FIELDS: tuple[str, ...] = (
    *WorkerId._fields,
    "transport",
    "request_plane_url",
    "system_url",
    "admin_base_url",
    "model",
    "routes",
    "world_size",
    "error",
)

# What ``listed_entry`` reads off a worker: the members after its identity and request plane.
_LISTED = WORKER_FIELDS[WORKER_FIELDS.index("system_url") :]


def listed_entry(worker: Any, port: int, **fields: Any) -> dict[str, Any]:
    """``worker_entry`` of an object with the identity attributes and ``routes``, ``system_url``,
    ``admin_base_url``, ``model``, ``world_size`` and ``error`` (a reference engine's view, a
    generated fleet's engine), on a TCP request plane at ``port``; ``fields`` override them."""
    identity = WorkerId.of(worker)
    values = {name: getattr(worker, name) for name in _LISTED}
    values.update(fields)
    return worker_entry(identity, transport=transport_tcp(identity, port), **values)


class Identified:
    """``identity`` and ``label`` for any class with the four identity attributes (the generated
    ``Worker`` model, a generated fleet's engine): one definition of both views."""

    __slots__ = ()

    namespace: str
    component: str
    endpoint: str
    instance_id: int

    @property
    def identity(self) -> WorkerId:
        """The worker's identity, in the canonical order (RANK-1)."""
        return WorkerId.of(self)

    @property
    def label(self) -> str:
        """``namespace.component.endpoint#instance_id``: how messages name this worker."""
        return str(self.identity)


#: The profiles that judge the target's own listing: what a run against a URL executes unless
#: told otherwise (the others stand up the fleets they judge).
LISTING_PROFILES: tuple[str, ...] = ("frontend", "workers")
#: The profiles that judge one RL listener shared by the run: the URL given, or the embedded
#: fleet the run stands up when none is.
LISTENER_PROFILES: tuple[str, ...] = ("frontend", "frontend-v2", "workers")


def request_plane_url(namespace: str, component: str, endpoint: str) -> str:
    """``dyn://namespace.component.endpoint``: the request-plane endpoint a worker lists (LIST-3)."""
    return f"dyn://{namespace}.{component}.{endpoint}"
