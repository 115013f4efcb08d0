"""Topology files: the fleet a reference fleet or the real Dynamo harness stands up.

A topology lists engine groups (component, count, world size or TP/PP/PCP/DP layout, routes,
whether they publish admin and system URLs, per-engine faults); ``Topology.engines()`` expands it
into concrete engines in a deterministic order. The format is schema/topology.v1.schema.json.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import jsonschema

from prime_rl_dynamo._resources import load_json
from prime_rl_dynamo.errors import ConfigError

__all__ = [
    "DEFAULT_ROUTES",
    "ENGINE_ROUTE_VOCABULARY",
    "EngineFaults",
    "EngineGroup",
    "EngineSpec",
    "MembershipEvent",
    "Topology",
    "default_topology",
    "load_topology",
    "topology_from_dict",
]

#: Routes a vLLM engine registers on its system server for RL.
DEFAULT_ROUTES: tuple[str, ...] = ("pause_generation", "resume_generation")

#: The engine-route vocabulary the latest Prime-RL generation requires (FACTS.md §7); a topology
#: group lists them in ``routes`` (with ``weight_transfer_backend: nccl``) to present it.
ENGINE_ROUTE_VOCABULARY: tuple[str, ...] = (
    "control/get_weight_version",
    "control/is_paused",
    "control/pause_generation",
    "control/resume_generation",
    "update/finish_weight_update",
    "update/init_weight_transfer_engine",
    "update/start_weight_update",
    "update/update_weight_version",
    "update/update_weights",
)

_DEFAULT_FILE = Path(__file__).resolve().parent / "topologies" / "default.yaml"


@dataclass(frozen=True, slots=True)
class EngineFaults:
    """Ways one engine misbehaves on purpose."""

    reply_error: str | None = None
    dead: bool = False
    admin_fail: tuple[str, ...] = ()
    admin_latency_ms: int = 0


@dataclass(frozen=True, slots=True)
class EngineGroup:
    """``count`` engines of one shape, as written in the topology file."""

    component: str
    count: int = 1
    world_size: int | None = None
    tp: int = 1
    pp: int = 1
    pcp: int = 1
    dp: int = 1
    ep: int = 1
    namespace: str | None = None
    endpoint: str = "rl"
    model: str | None = None
    model_set: bool = False  # whether the file named a model (None then means "omit")
    routes: tuple[str, ...] = DEFAULT_ROUTES
    admin: bool = True
    system: bool = True
    faults: EngineFaults = field(default_factory=EngineFaults)
    admin_host: str | None = None  # host name advertised in URLs instead of the fleet's host
    present: bool = True  # False: not listed until a schedule event joins it
    weight_transfer_backend: str | None = None  # listed as an extension field when set

    @property
    def engine_world_size(self) -> int:
        """GPUs per engine: explicit, or TP*PP*PCP*DP."""
        if self.world_size is not None:
            return self.world_size
        return self.tp * self.pp * self.pcp * self.dp


@dataclass(frozen=True, slots=True)
class EngineSpec:
    """One concrete engine of a topology."""

    key: str  # stable name: "<namespace>.<component>#<index>"
    namespace: str
    component: str
    endpoint: str
    index: int  # position within its group
    world_size: int
    tp: int
    pp: int
    pcp: int
    dp: int
    model: str | None
    routes: tuple[str, ...]
    admin: bool
    system: bool
    faults: EngineFaults
    instance_id: int  # deterministic from the seed; the real runtime assigns its own
    admin_host: str | None = None  # host name to advertise (e.g. "localhost"); None: the fleet's
    present: bool = True  # listed from the start (False: joins via the schedule)
    weight_transfer_backend: str | None = None  # listed as an extension field when set

    @property
    def publishes_admin(self) -> bool:
        """Whether the listing carries admin_base_url and world_size for this engine."""
        return self.admin and not self.faults.dead and self.faults.reply_error is None


@dataclass(frozen=True, slots=True)
class MembershipEvent:
    """One scheduled membership change: ``at`` seconds after the fleet starts."""

    at: float
    action: str  # "join" | "leave" | "resize" | "kill" | "revive"
    engine: str  # EngineSpec.key
    world_size: int | None = None  # for "resize"


@dataclass(frozen=True, slots=True)
class Topology:
    """A whole fleet description."""

    groups: tuple[EngineGroup, ...]
    namespace: str = "dynamo"
    model: str | None = "Qwen/Qwen3-0.6B"
    seed: int = 0
    faults: tuple[str, ...] = ()
    schedule: tuple[MembershipEvent, ...] = ()

    def engines(self) -> list[EngineSpec]:
        """Every engine, group by group, in file order."""
        out: list[EngineSpec] = []
        for group in self.groups:
            namespace = group.namespace or self.namespace
            model = group.model if group.model_set else self.model
            for index in range(group.count):
                key = f"{namespace}.{group.component}#{index}"
                out.append(
                    EngineSpec(
                        key=key,
                        namespace=namespace,
                        component=group.component,
                        endpoint=group.endpoint,
                        index=index,
                        world_size=group.engine_world_size,
                        tp=group.tp,
                        pp=group.pp,
                        pcp=group.pcp,
                        dp=group.dp,
                        model=model,
                        routes=tuple(group.routes),
                        admin=group.admin,
                        system=group.system,
                        faults=group.faults,
                        instance_id=_instance_id(self.seed, key),
                        admin_host=group.admin_host,
                        present=group.present,
                        weight_transfer_backend=group.weight_transfer_backend,
                    )
                )
        return out

    @property
    def inference_world_size(self) -> int:
        """Sum of the world sizes of the engines that publish an admin URL."""
        return sum(e.world_size for e in self.engines() if e.publishes_admin)

    def with_faults(self, faults: list[str] | tuple[str, ...]) -> Topology:
        """The same fleet with more frontend-level faults."""
        return replace(self, faults=(*self.faults, *faults))

    def more_engines(
        self,
        existing: Iterable[EngineSpec],
        component: str,
        *,
        count: int = 1,
        world_size: int = 1,
        namespace: str | None = None,
        endpoint: str = "rl",
        routes: Iterable[str] = DEFAULT_ROUTES,
        admin: bool = True,
        system: bool = True,
        source: str = "<topology>",
    ) -> list[EngineSpec]:
        """``count`` new engines of one component, indexed after those of it in ``existing``.

        Keys and instance ids are those a topology file listing them would give (same seed).
        """
        ns = namespace or self.namespace
        taken = [s.index for s in existing if s.key.startswith(f"{ns}.{component}#")]
        first = max(taken, default=-1) + 1
        group: dict[str, Any] = {
            "component": component,
            "count": first + count,
            "world_size": world_size,
            "namespace": ns,
            "endpoint": endpoint,
            "routes": list(routes),
            "admin": admin,
            "system": system,
        }
        grown = topology_from_dict(
            {"namespace": self.namespace, "seed": self.seed, "engines": [group]}, source=source
        )
        return grown.engines()[first:]


def _instance_id(seed: int, key: str) -> int:
    # Deterministic u64 above 2**53, so that precision bugs in clients show.
    digest = hashlib.blake2b(f"{seed}:{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") | (1 << 60)


def topology_from_dict(data: Mapping[str, Any], *, source: str = "<topology>") -> Topology:
    """Validate a parsed topology file against its schema and build the Topology."""
    validator = jsonschema.Draft202012Validator(load_json("topology.v1.schema.json"))
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [
            f"  /{'/'.join(str(p) for p in err.absolute_path)}: {err.message}" for err in errors
        ]
        raise ConfigError(f"{source} is not a valid topology file:\n" + "\n".join(lines))
    groups = []
    for raw in data.get("engines", []):
        faults_raw = raw.get("faults", {})
        faults = EngineFaults(
            reply_error=faults_raw.get("reply_error"),
            dead=bool(faults_raw.get("dead", False)),
            admin_fail=tuple(faults_raw.get("admin_fail", ())),
            admin_latency_ms=int(faults_raw.get("admin_latency_ms", 0)),
        )
        groups.append(
            EngineGroup(
                component=raw["component"],
                count=raw.get("count", 1),
                world_size=raw.get("world_size"),
                tp=raw.get("tp", 1),
                pp=raw.get("pp", 1),
                pcp=raw.get("pcp", 1),
                dp=raw.get("dp", 1),
                ep=raw.get("ep", 1),
                namespace=raw.get("namespace"),
                endpoint=raw.get("endpoint", "rl"),
                model=raw.get("model"),
                model_set="model" in raw,
                routes=tuple(raw.get("routes", DEFAULT_ROUTES)),
                admin=raw.get("admin", True),
                system=raw.get("system", True),
                faults=faults,
                admin_host=raw.get("admin_host"),
                present=raw.get("present", True),
                weight_transfer_backend=raw.get("weight_transfer_backend"),
            )
        )
    schedule = tuple(
        MembershipEvent(
            at=float(ev["at"]),
            action=ev["action"],
            engine=ev["engine"],
            world_size=ev.get("world_size"),
        )
        for ev in data.get("schedule", ())
    )
    return Topology(
        groups=tuple(groups),
        namespace=data.get("namespace", "dynamo"),
        model=data.get("model", "Qwen/Qwen3-0.6B"),
        seed=data.get("seed", 0),
        faults=tuple(data.get("faults", ())),
        schedule=tuple(sorted(schedule, key=lambda ev: ev.at)),
    )


def load_topology(path: str | Path | None = None) -> Topology:
    """Read a topology file (YAML or JSON); ``None`` gives the default heterogeneous fleet."""
    file = Path(path) if path is not None else _DEFAULT_FILE
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read topology file {file}: {exc.strerror or exc}") from exc
    if file.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{file} is not valid JSON: {exc}") from exc
    else:
        try:
            import yaml
        except ImportError as exc:  # pragma: no cover - depends on the extras installed
            raise ConfigError(
                f"{file} is YAML; install prime-rl-dynamo[reference] (PyYAML) or use JSON"
            ) from exc
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"{file} is not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: a topology file is a mapping, got {type(data).__name__}")
    return topology_from_dict(data, source=str(file))


def default_topology() -> Topology:
    """Prefill 4 engines of world size 2 and decode 2 engines of world size 4 (W = 16)."""
    return load_topology(None)
