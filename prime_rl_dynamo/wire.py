"""The wire vocabulary of protocol 1, defined once: worker identity, the worker entry, the names.

Everything that names a worker, builds a worker's JSON object, spells the discovery path or bounds
an integer field imports it from here, so a change to the protocol is one edit. It imports nothing
of the project: every other module may build on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

__all__ = [
    "DISCOVERY_BACKENDS",
    "DISCOVERY_PATH",
    "REQUEST_PLANES",
    "U32_MAX",
    "U64_MAX",
    "WorkerId",
    "transport_tcp",
    "worker_entry",
]

#: Where Dynamo's runtime keeps its registrations (the frontend lists what it finds there).
DISCOVERY_BACKENDS: tuple[str, ...] = ("file", "etcd")
#: Request planes a fleet can be asked for. 1.6.1's runtime accepts only "tcp" and "nats": "http"
#: is passed through so that the runtime's own refusal is what the caller sees (docs/findings.md).
REQUEST_PLANES: tuple[str, ...] = ("tcp", "nats", "http")

#: The discovery endpoint on the frontend's RL listener.
DISCOVERY_PATH = "/v1/rl/workers"

#: ``world_size`` (and every rank field) is an unsigned 32-bit integer on the wire.
U32_MAX = 2**32 - 1
#: ``instance_id`` is an unsigned 64-bit integer (real values exceed 2**53).
U64_MAX = 2**64 - 1


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
    def static(cls, admin_base_url: str) -> WorkerId:
        """The stand-in identity of an engine known only by its admin URL (a static pool entry,
        which discovery never listed): ``static.<url>.admin#0``, so a diff still names it."""
        return cls("static", admin_base_url, "admin", 0)

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


class Labelled:
    """``label`` for any class with an ``identity`` (a plan's engine, a fleet's engine): the one
    spelling of how messages name a worker."""

    __slots__ = ()

    if TYPE_CHECKING:  # declared for the type checker only: a dataclass field may provide it

        @property
        def identity(self) -> WorkerId: ...

    @property
    def label(self) -> str:
        """``namespace.component.endpoint#instance_id``: how messages name this worker."""
        return str(self.identity)


class Identified(Labelled):
    """``identity`` (and so ``label``) for any class with the four identity attributes (the
    generated ``Worker`` model, a generated fleet's engine): one definition of both views."""

    __slots__ = ()

    namespace: str
    component: str
    endpoint: str
    instance_id: int

    @property
    def identity(self) -> WorkerId:
        """The worker's identity, in the canonical order (RANK-1)."""
        return WorkerId.of(self)


def request_plane_url(namespace: str, component: str, endpoint: str) -> str:
    """``dyn://namespace.component.endpoint``: the request-plane endpoint a worker lists (LIST-3)."""
    return f"dyn://{namespace}.{component}.{endpoint}"
