"""Topology files: the fleet a reference fleet or the real Dynamo harness stands up.

A topology lists engine groups (component, count, world size or TP/PP/PCP/DP layout, routes,
whether they publish admin and system URLs, per-engine faults); ``Topology.engines()`` expands it
into concrete engines in a deterministic order. The format is schema/topology.v1.schema.json.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from prime_rl_dynamo.errors import ConfigError
from prime_rl_dynamo.resources import load_json
from prime_rl_dynamo.text import clip
from prime_rl_dynamo.wire import U32_MAX

__all__ = [
    "DEFAULT_ROUTES",
    "ENGINE_ROUTE_VOCABULARY",
    "MAX_ENGINES",
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

#: The most engines a topology may hold (each gets its own listening socket, or its own process).
MAX_ENGINES = 4096
#: Limits that keep a hostile topology file from hanging or exhausting the loader.
MAX_TOPOLOGY_BYTES = 1 << 20
MAX_DEPTH = 64
MAX_VALUES = 100_000
#: The engine-route vocabulary the latest Prime-RL generation requires; a topology
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
                key = _engine_key(_group_key(namespace, group.component), index)
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
        taken = [s.index for s in existing if (s.namespace, s.component) == (ns, component)]
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
            {
                "namespace": self.namespace,
                "model": self.model,
                "seed": self.seed,
                "engines": [group],
            },
            source=source,
        )
        return grown.engines()[first:]


def _group_key(namespace: str, component: str) -> str:
    """A group's name, ``namespace.component``: the part of an engine key before ``#``."""
    return f"{namespace}.{component}"


def _engine_key(group: str, index: int | str) -> str:
    """An engine's stable name in a topology, ``namespace.component#index``: what schedule events
    and the harness name an engine by. Not a ``WorkerId``: the index is the engine's place in its
    group, known before the engine runs, where an instance id is what the running worker reports."""
    return f"{group}#{index}"


def _split_engine_key(key: str) -> tuple[str, str]:
    """(group, index) of an engine key, the inverse of :func:`_engine_key`."""
    group, _, index = key.rpartition("#")
    return group, index


def _instance_id(seed: int, key: str) -> int:
    # Deterministic u64 above 2**53, so that precision bugs in clients show.
    digest = hashlib.blake2b(f"{seed}:{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") | (1 << 60)


def _check_shape(data: Any, source: str) -> None:
    """Refuse nesting past MAX_DEPTH and more than MAX_VALUES values (counted as a reader sees
    them, so YAML aliases that repeat a shared part count every time): walked without recursion."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    seen = 0
    while stack:
        value, depth = stack.pop()
        seen += 1
        if seen > MAX_VALUES:
            raise ConfigError(
                f"{source} holds more than {MAX_VALUES} values once YAML aliases are expanded (an "
                "alias bomb?); a topology file is a few hundred"
            )
        if depth > MAX_DEPTH:
            raise ConfigError(
                f"{source} nests deeper than {MAX_DEPTH} levels; a topology file nests 4"
            )
        if isinstance(value, Mapping):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list | tuple):
            stack.extend((v, depth + 1) for v in value)


def _yaml_problem(exc: Exception) -> str:
    """PyYAML's error on one line: where (line, column) and what, without its multi-line layout."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if mark is None or problem is None:
        return clip(" ".join(str(exc).split()), 600)
    where = f"line {mark.line + 1}, column {mark.column + 1}"
    context = getattr(exc, "context", None)
    return clip(f"{where}: {problem}" + (f" ({context})" if context else ""), 600)


def _check_fleet(data: Mapping[str, Any], source: str) -> None:
    """What the schema cannot say: fleet size, unique groups, WORKER-9's bound, RANK-7, schedule."""
    default_ns = data.get("namespace", "dynamo")
    problems: list[str] = []
    total = 0
    owner: dict[tuple[str, str], int] = {}
    counts: dict[str, int] = {}
    for i, raw in enumerate(data.get("engines", [])):
        where = f"/engines/{i}"
        count = raw.get("count", 1)
        total += count
        ns = raw.get("namespace") or default_ns
        name = _group_key(ns, raw["component"])
        if (ns, raw["component"]) in owner:
            problems.append(
                f"{where}: group {name} is already defined at /engines/{owner[ns, raw['component']]}"
                " (engine keys and instance ids would collide); merge the groups or rename one"
            )
        else:
            owner[ns, raw["component"]] = i
            counts[name] = count
        mp = raw.get("tp", 1) * raw.get("pp", 1) * raw.get("pcp", 1)
        layout = mp * raw.get("dp", 1)
        world = raw.get("world_size", layout)
        if world > U32_MAX:
            problems.append(
                f"{where}: WORKER-9: world_size {world} (tp*pp*pcp*dp) exceeds {U32_MAX}, the "
                "largest the listing may carry"
            )
        elif "world_size" in raw and world % mp:
            problems.append(
                f"{where}: RANK-7: mp = tp*pp*pcp = {mp} does not divide world_size {world}"
            )
        elif "world_size" in raw and "dp" in raw and world != layout:
            problems.append(
                f"{where}: RANK-7: world_size {world} differs from tp*pp*pcp*dp = {layout}"
            )
    if total > MAX_ENGINES:
        problems.append(
            f"the fleet has {total} engines; at most {MAX_ENGINES} are stood up (each engine gets "
            "its own listening sockets)"
        )
    for j, event in enumerate(data.get("schedule", ())):
        group, index = _split_engine_key(event["engine"])
        if int(index) >= counts.get(group, 0):
            known = [_engine_key(g, f"0..{n - 1}" if n > 1 else 0) for g, n in counts.items()]
            problems.append(
                f"/schedule/{j}: names engine {event['engine']!r}, which the topology does not "
                f"have (engines: {', '.join(known) or 'none'})"
            )
    if problems:
        shown = problems[:20] + (
            [f"... and {len(problems) - 20} more"] if len(problems) > 20 else []
        )
        raise ConfigError(f"{source} is not a usable topology:\n  " + "\n  ".join(shown))


def topology_from_dict(data: Mapping[str, Any], *, source: str = "<topology>") -> Topology:
    """Validate a parsed topology file against its schema and build the Topology."""
    _check_shape(data, source)
    validator = jsonschema.Draft202012Validator(load_json("topology.v1.schema.json"))
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [
            f"  /{'/'.join(str(p) for p in err.absolute_path)}: {clip(err.message, 200)}"
            for err in errors[:20]
        ]
        if len(errors) > 20:
            lines.append(f"  ... and {len(errors) - 20} more")
        raise ConfigError(f"{source} is not a valid topology file:\n" + "\n".join(lines))
    _check_fleet(data, source)
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
        with open(file, "rb") as handle:
            raw = handle.read(MAX_TOPOLOGY_BYTES + 1)  # bounded: /dev/zero is a path too
    except OSError as exc:
        raise ConfigError(f"cannot read topology file {file}: {exc.strerror or exc}") from None
    if len(raw) > MAX_TOPOLOGY_BYTES:
        raise ConfigError(
            f"{file} is larger than {MAX_TOPOLOGY_BYTES} bytes; a topology file is a few KB"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{file} is not UTF-8 text: byte 0x{raw[exc.start]:02x} at offset {exc.start}"
        ) from None
    try:
        data = _parse_json(text, file) if file.suffix == ".json" else _parse_yaml(text, file)
    except RecursionError:
        raise ConfigError(f"{file} nests deeper than {MAX_DEPTH} levels") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: a topology file is a mapping, got {type(data).__name__}")
    return topology_from_dict(data, source=str(file))


def _parse_json(text: str, file: Path) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{file} is not valid JSON: {exc}") from None


def _parse_yaml(text: str, file: Path) -> Any:
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - depends on the extras installed
        raise ConfigError(
            f"{file} is YAML; install prime-rl-dynamo[reference] (PyYAML) or use JSON"
        ) from exc
    stream = io.StringIO(text)
    stream.name = str(file)  # so PyYAML's marks name the file, not "<unicode string>"
    try:
        return yaml.safe_load(stream)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{file} is not valid YAML: {_yaml_problem(exc)}") from None


def default_topology() -> Topology:
    """Prefill 4 engines of world size 2 and decode 2 engines of world size 4 (W = 16)."""
    return load_topology(None)
