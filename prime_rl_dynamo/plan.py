"""Broadcast plans: which inference ranks each engine owns, for each weight-transfer convention.

Pure functions, no I/O: engines are put in the canonical order (namespace, component, endpoint,
instance_id), offsets are the exclusive prefix sum of their world sizes, and a plan that exists
always covers ranks [0, W) exactly once. Anything else is refused with a TopologyError.
"""

from __future__ import annotations

import enum
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from prime_rl_dynamo.errors import ConfigError, TopologyError
from prime_rl_dynamo.topology_diff import EngineState, TopologyDiff
from prime_rl_dynamo.wire import Labelled, WorkerId

__all__ = [
    "WEIGHT_BROADCAST_TYPES",
    "BroadcastPlan",
    "Convention",
    "EnginePlan",
    "PlannableWorker",
    "Rendezvous",
    "Roster",
    "canonical_key",
    "canonical_order",
    "check_rendezvous",
    "plan_broadcast",
    "topology_diff",
    "worker_rank",
]


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


class PlannableWorker(Protocol):
    """What a plan needs from a discovered worker (validate.Worker satisfies it)."""

    @property
    def namespace(self) -> str: ...
    @property
    def component(self) -> str: ...
    @property
    def endpoint(self) -> str: ...
    @property
    def instance_id(self) -> int: ...
    @property
    def world_size(self) -> int | None: ...
    @property
    def admin_base_url(self) -> str | None: ...


def canonical_key(worker: PlannableWorker) -> WorkerId:
    """The sort key and identity of a worker: its WorkerId."""
    return WorkerId.of(worker)


_W = TypeVar("_W", bound=PlannableWorker)


def canonical_order(workers: Iterable[_W]) -> list[_W]:
    """Workers sorted canonically (RANK-1): strings by code point, instance_id as an integer."""
    return sorted(workers, key=WorkerId.of)


@dataclass(frozen=True, slots=True)
class EnginePlan(Labelled):
    """One engine's place in the plan: the inference ranks it owns and what it is sent."""

    identity: WorkerId
    admin_base_url: str | None
    world_size: int
    #: First inference rank this engine owns (0-based in every convention).
    first_rank: int
    #: The value sent as ``rank_offset`` (first_rank, or first_rank + 1 for vLLM native NCCL).
    rank_offset: int

    @property
    def ranks(self) -> range:
        """Inference ranks owned: [first_rank, first_rank + world_size)."""
        return range(self.first_rank, self.first_rank + self.world_size)


class _Ranked(Protocol):
    @property
    def label(self) -> str: ...
    @property
    def rank_offset(self) -> int: ...


_E = TypeVar("_E", bound=_Ranked)


class Roster(Generic[_E]):
    """The engines of a plan or of a group built on one, in canonical order: one lookup by label
    and one list of their offsets (a plan's engines and the native NCCL group's alike)."""

    __slots__ = ()
    engines: tuple[_E, ...]

    @property
    def rank_offsets(self) -> list[int]:
        """The ``rank_offset`` of each engine, in canonical order."""
        return [e.rank_offset for e in self.engines]

    def engine(self, label: str) -> _E:
        """The engine with this label (KeyError otherwise)."""
        for engine in self.engines:
            if engine.label == label:
                return engine
        raise KeyError(label)


def check_rendezvous(
    host: object, port: object, timeout: object = None, *, names: tuple[str, str] = ("host", "port")
) -> None:
    """Refuse (ConfigError) where a weight-transfer group cannot meet: an empty host, a port
    outside 1..65535, a timeout (when given) that is not a finite number > 0. ``names`` are the
    caller's words for host and port (``master_address``, ``master_port``)."""
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise ConfigError(f"timeout must be a finite number > 0; found {timeout!r}")
    if not isinstance(host, str) or not host:
        raise ConfigError(f"{names[0]} must be a non-empty string; found {host!r}")
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ConfigError(f"{names[1]} must be an integer in 1..65535; found {port!r}")


@dataclass(frozen=True, slots=True)
class Rendezvous:
    """Where the weight-transfer group meets and how its init is sent, the same for every engine
    (RANK-8): the trainer's ``host`` and ``port``, the init's ``timeout`` in seconds, NIXL's
    shared ``session_id``, and whether Prime's broadcaster is reached through vLLM's
    ``/collective_rpc`` (``via_rpc``). Refused (ConfigError) unless it can meet
    (:func:`check_rendezvous`)."""

    host: str
    port: int
    timeout: float
    session_id: str | None = None
    quantize_in_weight_transfer: bool = False
    via_rpc: bool = False

    def __post_init__(self) -> None:
        check_rendezvous(self.host, self.port, self.timeout)


@dataclass(frozen=True, slots=True)
class BroadcastPlan(Roster[EnginePlan]):
    """Engines in canonical order with their offsets; built only if it covers [0, W) exactly once."""

    convention: Convention
    inference_world_size: int
    engines: tuple[EnginePlan, ...]
    trainer_world_size: int = 1

    def __post_init__(self) -> None:
        # The invariant every consumer relies on (RANK-6): checked here, so no plan can exist without it.
        owners: Counter[int] = Counter()
        for engine in self.engines:
            owners.update(engine.ranks)
            expected_offset = engine.first_rank + self.convention.first_offset
            if engine.rank_offset != expected_offset:
                raise TopologyError(
                    f"RANK-6: engine {engine.label} has rank_offset {engine.rank_offset}; "
                    f"{self.convention.value} expects {expected_offset}",
                    requirement="RANK-6",
                )
        wanted = set(range(self.inference_world_size))
        twice = sorted(r for r, n in owners.items() if n > 1)
        missing = sorted(wanted - set(owners))
        outside = sorted(set(owners) - wanted)
        if twice or missing or outside or not self.engines:
            raise TopologyError(
                f"RANK-6: plan does not cover ranks [0, {self.inference_world_size}) exactly once "
                f"(taken twice: {twice}, owned by nobody: {missing}, outside: {outside})",
                requirement="RANK-6",
            )

    @property
    def group_world_size(self) -> int:
        """Size of the weight-transfer group: W+1 with the trainer at rank 0 (NCCL), W for NIXL."""
        if self.convention is Convention.NIXL:
            return self.inference_world_size
        return self.inference_world_size + 1

    @property
    def trainer_rank(self) -> int | None:
        """The trainer's rank in the group (None for NIXL, which has no collective group)."""
        return None if self.convention is Convention.NIXL else 0

    def init_request(
        self, engine: EnginePlan, rendezvous: Rendezvous
    ) -> tuple[str, dict[str, Any]]:
        """The admin path and JSON body that initialise ``engine`` (same W, host, port for all: RANK-8).

        ``rendezvous.via_rpc``: Prime's broadcaster through vLLM's ``/collective_rpc`` (method
        ``init_broadcaster``, the same fields as ``kwargs``) instead of ``/init_broadcaster``.
        """
        host, port, timeout = rendezvous.host, rendezvous.port, rendezvous.timeout
        if self.convention is Convention.VLLM_NATIVE_NCCL:
            init_info = {
                "master_address": host,
                "master_port": port,
                "rank_offset": engine.rank_offset,
                "world_size": self.group_world_size,
            }
            body: dict[str, Any] = {
                "method": "init_weight_transfer_engine",
                "args": [],
                "kwargs": {"init_info": init_info},
                "timeout": timeout,
            }
            return "/collective_rpc", body
        body = {
            "host": host,
            "port": port,
            "rank_offset": engine.rank_offset,
            "inference_world_size": self.inference_world_size,
            "engine_world_size": engine.world_size,
            "timeout": timeout,
            "quantize_in_weight_transfer": rendezvous.quantize_in_weight_transfer,
        }
        if self.convention is Convention.NIXL:
            if not rendezvous.session_id:
                raise ConfigError("NIXL init needs a session_id shared by every engine (RANK-8)")
            body["session_id"] = rendezvous.session_id
        if rendezvous.via_rpc:
            rpc = {"method": "init_broadcaster", "args": [], "kwargs": body, "timeout": timeout}
            return "/collective_rpc", rpc
        return "/init_broadcaster", body

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (what ``prime-rl-dynamo plan --json`` prints)."""
        return {
            "convention": self.convention.value,
            "inference_world_size": self.inference_world_size,
            "group_world_size": self.group_world_size,
            "trainer_rank": self.trainer_rank,
            "engines": [
                {
                    "label": e.label,
                    **e.identity._asdict(),
                    "admin_base_url": e.admin_base_url,
                    "world_size": e.world_size,
                    "rank_offset": e.rank_offset,
                    "ranks": [e.first_rank, e.first_rank + e.world_size],
                }
                for e in self.engines
            ],
        }


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def plan_broadcast(
    workers: Iterable[PlannableWorker],
    inference_world_size: int,
    convention: Convention | str = Convention.PRIME_NCCL,
    *,
    trainer_world_size: int = 1,
) -> BroadcastPlan:
    """The broadcast plan for these workers, or TopologyError before any request is sent.

    Offsets are the exclusive prefix sum of the world sizes in canonical order (RANK-1..5); the
    world sizes must be integers > 0 summing to ``inference_world_size`` (RANK-2).
    """
    conv = Convention.parse(convention)
    ordered = canonical_order(workers)
    if not _is_int(inference_world_size) or inference_world_size <= 0:
        raise TopologyError(
            f"RANK-2: inference_world_size must be an integer > 0; found {inference_world_size!r}",
            requirement="RANK-2",
        )
    if not _is_int(trainer_world_size) or trainer_world_size < 1:
        raise TopologyError(
            f"RANK-4: trainer_world_size must be an integer >= 1; found {trainer_world_size!r}",
            requirement="RANK-4",
        )
    if conv is Convention.VLLM_NATIVE_NCCL and trainer_world_size > 1:
        raise TopologyError(
            f"RANK-4: vLLM native NCCL puts the first engine at rank 1, so only a single-process "
            f"trainer may join at rank 0; trainer_world_size is {trainer_world_size} and trainer "
            f"rank 1 would collide with the first engine",
            requirement="RANK-4",
        )
    if not ordered:
        raise TopologyError(
            f"RANK-2: no engines to plan for inference_world_size {inference_world_size}",
            requirement="RANK-2",
        )
    seen = Counter(WorkerId.of(w) for w in ordered)
    dup = [str(i) for i, n in seen.items() if n > 1]
    if dup:
        raise TopologyError(
            f"LIST-2: the same engine identity appears more than once: {', '.join(dup)}",
            requirement="LIST-2",
        )
    urls = Counter(w.admin_base_url for w in ordered if w.admin_base_url is not None)
    dup_urls = {u for u, n in urls.items() if n > 1}
    if dup_urls:
        owners = [
            f"{WorkerId.of(w)} -> {w.admin_base_url}"
            for w in ordered
            if w.admin_base_url in dup_urls
        ]
        raise TopologyError(
            f"LIST-6: engines share an admin_base_url: {'; '.join(owners)}",
            requirement="LIST-6",
        )
    bad = [
        f"{WorkerId.of(w)} (world_size={w.world_size!r})"
        for w in ordered
        if not _is_int(w.world_size) or (w.world_size or 0) <= 0
    ]
    if bad:
        raise TopologyError(
            "RANK-2: every engine needs an integer world_size > 0; refused: " + ", ".join(bad),
            requirement="RANK-2",
        )
    sizes = [int(w.world_size or 0) for w in ordered]
    total = sum(sizes)
    if total != inference_world_size:
        listing = ", ".join(f"{WorkerId.of(w)}={s}" for w, s in zip(ordered, sizes, strict=True))
        raise TopologyError(
            f"RANK-2: engine world sizes sum to {total}, expected inference_world_size "
            f"{inference_world_size} ({listing}); a mismatch would deadlock the rendezvous",
            requirement="RANK-2",
        )
    engines = []
    first = 0
    for worker, size in zip(ordered, sizes, strict=True):
        engines.append(
            EnginePlan(
                identity=WorkerId.of(worker),
                admin_base_url=worker.admin_base_url,
                world_size=size,
                first_rank=first,
                rank_offset=first + conv.first_offset,
            )
        )
        first += size
    return BroadcastPlan(
        convention=conv,
        inference_world_size=inference_world_size,
        engines=tuple(engines),
        trainer_world_size=trainer_world_size,
    )


def worker_rank(
    *,
    rank_offset: int,
    engine_world_size: int,
    inference_world_size: int,
    local_rank: int,
    dp_index: int = 0,
    tp: int = 1,
    pp: int = 1,
    pcp: int = 1,
    data_parallel_size: int | None = None,
    convention: Convention | str = Convention.PRIME_NCCL,
) -> int:
    """The rank of one worker process inside an engine (RANK-7), as the engine computes it.

    ``mp = tp*pp*pcp`` must divide ``engine_world_size``; the logical data-parallel size is
    ``engine_world_size // mp`` (``data_parallel_size`` may be 1, as dense vLLM rewrites it, or
    that size); the rank is ``rank_offset + dp_index*mp + (local_rank mod mp)`` and must fall in the
    engine's own interval and inside the group. Returns a rank in the convention's numbering
    (NCCL rank for vLLM native, inference rank otherwise).
    """
    conv = Convention.parse(convention)
    named = {
        "tp": tp,
        "pp": pp,
        "pcp": pcp,
        "engine_world_size": engine_world_size,
        "inference_world_size": inference_world_size,
    }
    bad = [f"{k}={v!r}" for k, v in named.items() if not _is_int(v) or v <= 0]
    if bad:
        raise TopologyError(f"RANK-7: must be integers > 0: {', '.join(bad)}", requirement="RANK-7")
    for name, value in (
        ("local_rank", local_rank),
        ("dp_index", dp_index),
        ("rank_offset", rank_offset),
    ):
        if not _is_int(value) or value < 0:
            raise TopologyError(
                f"RANK-7: {name} must be an integer >= 0; found {value!r}", requirement="RANK-7"
            )
    mp = tp * pp * pcp
    if engine_world_size % mp:
        raise TopologyError(
            f"RANK-7: engine_world_size {engine_world_size} is not divisible by TP*PP*PCP = "
            f"{tp}*{pp}*{pcp} = {mp}",
            requirement="RANK-7",
        )
    dp_logical = engine_world_size // mp
    if data_parallel_size is not None and data_parallel_size not in (1, dp_logical):
        raise TopologyError(
            f"RANK-7: data_parallel_size {data_parallel_size} must be 1 or engine_world_size/mp = "
            f"{dp_logical}",
            requirement="RANK-7",
        )
    if dp_index >= dp_logical:
        raise TopologyError(
            f"RANK-7: dp_index {dp_index} outside [0, {dp_logical}) for engine_world_size "
            f"{engine_world_size} and mp {mp}",
            requirement="RANK-7",
        )
    rank = rank_offset + dp_index * mp + (local_rank % mp)
    low = conv.first_offset
    high = inference_world_size + conv.first_offset
    if not (rank_offset <= rank < rank_offset + engine_world_size) or not (low <= rank < high):
        raise TopologyError(
            f"RANK-7: rank {rank} falls outside the engine's ranks [{rank_offset}, "
            f"{rank_offset + engine_world_size}) or the group's [{low}, {high})",
            requirement="RANK-7",
        )
    return rank


def topology_diff(
    before: Iterable[PlannableWorker | EnginePlan], after: Iterable[PlannableWorker | EnginePlan]
) -> TopologyDiff:
    """How the engines ``after`` differ from ``before`` (TOPO-1), keyed by worker identity
    (see :meth:`TopologyDiff.between`)."""

    def states(items: Iterable[PlannableWorker | EnginePlan]) -> list[EngineState]:
        return [
            EngineState(
                i.identity if isinstance(i, EnginePlan) else WorkerId.of(i),
                i.world_size,
                i.admin_base_url,
            )
            for i in items
        ]

    return TopologyDiff.between(states(before), states(after))
