"""Public hypothesis strategies: fleets, discovery bodies, topology files, and invalid bodies.

Fleets of engines with prefill/decode roles and TP x PP x PCP x DP (x EP) layouts, u64 instance
ids above 2^53, components sharing an instance id, other models, error workers, arbitrary arrival
order, namespaces and prefix scopes. ``invalid_bodies`` breaks exactly one requirement per body
(the mutations of ``prime_rl_dynamo.suite.mutations``, choices drawn by hypothesis).
The only module of the package that needs hypothesis to import (install the ``conformance``
extra).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from prime_rl_dynamo.suite.mutations import MUTATIONS, DrawChooser, mutate
from prime_rl_dynamo.wire import U64_MAX, Identified, WorkerId, listed_entry

__all__ = [
    "BREAKABLE_REQUIREMENTS",
    "DEFAULT_MODEL",
    "OTHER_MODEL",
    "Fleet",
    "FleetEngine",
    "Layout",
    "discovery_bodies",
    "fleets",
    "instance_ids",
    "invalid_bodies",
    "layouts",
    "names",
    "sample",
    "topologies",
]

DEFAULT_MODEL = "Qwen/Qwen3-0.6B"
OTHER_MODEL = "other/Model-7B"
ROUTES = ("pause_generation", "resume_generation")


def names(max_size: int = 10) -> st.SearchStrategy[str]:
    """Dynamo-style names (namespace, component, endpoint): no dots, never empty."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    return st.builds(
        str.__add__,
        st.sampled_from(letters),
        st.text(alphabet=letters + "0123456789_-", max_size=max_size - 1),
    )


def instance_ids() -> st.SearchStrategy[int]:
    """Unsigned 64-bit instance ids above 2^53, where float-based JSON parsers lose digits."""
    return st.integers(min_value=2**53 + 1, max_value=U64_MAX)


@dataclass(frozen=True)
class Layout:
    """An engine's parallel layout; its world size is TP x PP x PCP x DP (EP reuses those ranks)."""

    tp: int = 1
    pp: int = 1
    pcp: int = 1
    dp: int = 1
    ep: int = 1

    @property
    def world_size(self) -> int:
        """GPUs (inference ranks) of the engine."""
        return self.tp * self.pp * self.pcp * self.dp

    @property
    def model_parallel(self) -> int:
        """TP x PP x PCP: ranks of one data-parallel replica."""
        return self.tp * self.pp * self.pcp


@st.composite
def layouts(draw: st.DrawFn, max_world_size: int = 32) -> Layout:
    """TP x PP x PCP x DP (x EP) layouts with a world size of at most ``max_world_size``."""
    tp = draw(st.sampled_from([1, 2, 4, 8]))
    pp = draw(st.sampled_from([1, 1, 2, 4]))
    pcp = draw(st.sampled_from([1, 1, 1, 2]))
    dp = draw(st.sampled_from([1, 1, 2, 4]))
    # Expert parallelism spans TP x DP ranks, so it divides their product.
    ep = draw(st.sampled_from([d for d in (1, 2, 4, 8, 16, 32) if (tp * dp) % d == 0]))
    layout = Layout(tp, pp, pcp, dp, ep)
    if layout.world_size > max_world_size:
        layout = Layout(tp=min(tp, max_world_size))
    return layout


@dataclass(frozen=True)
class FleetEngine(Identified):
    """One listed worker of a generated fleet (what the frontend would say about it)."""

    namespace: str
    component: str
    endpoint: str
    instance_id: int
    layout: Layout
    model: str | None
    role: str  # prefill | decode | aggregated | ...: what the component stands for
    port: int  # request-plane and system-server port of the worker's process
    admin: bool = True  # publishes admin_base_url (and world_size)
    system: bool = True  # publishes system_url
    error: str | None = None
    routes: tuple[str, ...] = ROUTES
    host: str = "127.0.0.1"

    @property
    def world_size(self) -> int:
        """The engine's world size."""
        return self.layout.world_size

    @property
    def admin_base_url(self) -> str | None:
        """Unique per component even when components share a process (LIST-6)."""
        if not self.admin or self.error is not None:
            return None
        return f"http://{self.host}:{self.port + 1}/{self.namespace}/{self.component}/admin"

    @property
    def system_url(self) -> str | None:
        """The process's system server (shared by the components of one process)."""
        if not self.system or self.error is not None:
            return None
        return f"http://{self.host}:{self.port + 2}"

    def entry(self) -> dict[str, Any]:
        """The worker's entry in a discovery body, keys in Dynamo 1.6.1's order."""
        # world_size is listed with the admin URL only
        return listed_entry(self, self.port, world_size=self.world_size if self.admin else None)


@dataclass(frozen=True)
class Fleet:
    """A generated fleet: the scope searched and its workers in the order they registered."""

    scope: str  # the body's namespace (a prefix when ``prefix`` is true)
    prefix: bool
    engines: tuple[FleetEngine, ...] = field(default_factory=tuple)  # arrival order

    def canonical(self) -> list[FleetEngine]:
        """Engines sorted by identity, as the frontend lists them."""
        return sorted(self.engines, key=WorkerId.of)

    def body(self) -> dict[str, Any]:
        """The discovery body a conformant frontend serves for this fleet."""
        return {
            "protocol_version": 1,
            "namespace": self.scope,
            "workers": [e.entry() for e in self.canonical()],
        }

    def ready_engines(self, model: str | None = DEFAULT_MODEL) -> list[FleetEngine]:
        """Canonically ordered engines a client plans over: healthy, with admin, this model."""
        return [
            e
            for e in self.canonical()
            if e.error is None and e.admin_base_url and (model is None or e.model == model)
        ]

    def inference_world_size(self, model: str | None = DEFAULT_MODEL) -> int:
        """W for ``model``: the sum of its ready engines' world sizes."""
        return sum(e.world_size for e in self.ready_engines(model))


@st.composite
def fleets(
    draw: st.DrawFn,
    *,
    min_engines: int = 1,
    max_engines: int = 8,
    roles: Sequence[str] = ("prefill", "decode"),
    other_models: bool = True,
    error_workers: bool = True,
    shared_instance_ids: bool = True,
    prefix_scopes: bool = True,
    max_world_size: int = 16,
) -> Fleet:
    """Heterogeneous fleets; at least one ready engine of DEFAULT_MODEL when min_engines >= 1."""
    scope = draw(st.sampled_from(["dynamo", "prod", "team-a"]) | names(8))
    prefix = prefix_scopes and draw(st.booleans())
    namespaces = [scope]
    if prefix:
        namespaces += [scope + s for s in draw(st.lists(names(4), min_size=1, max_size=2))]
    count = draw(st.integers(min_value=min_engines, max_value=max_engines))
    engines: list[FleetEngine] = []
    processes: list[tuple[int, int]] = []  # (instance_id, port) of processes so far
    seen: set[WorkerId] = set()
    for index in range(count):
        share = shared_instance_ids and processes and draw(st.integers(0, 3)) == 0
        if share:
            instance_id, port = draw(st.sampled_from(processes))
        else:
            instance_id = draw(instance_ids())
            port = 20000 + 3 * len(processes)
            processes.append((instance_id, port))
        role = draw(st.sampled_from(list(roles)))
        # Several engines of one role need distinct components when they share a process.
        component = role if not share else f"{role}{index}"
        namespace = draw(st.sampled_from(namespaces))
        identity = WorkerId(namespace, component, "rl", instance_id)
        if identity in seen:
            component = f"{role}{index}"
            identity = WorkerId(namespace, component, "rl", instance_id)
        seen.add(identity)
        first = index == 0  # guarantees one ready engine of the default model
        model: str | None = DEFAULT_MODEL
        if not first and other_models and draw(st.integers(0, 4)) == 0:
            model = draw(st.sampled_from([OTHER_MODEL, None]))  # None: worker reports no model
        error = None
        if not first and error_workers and draw(st.integers(0, 5)) == 0:
            error = draw(
                st.sampled_from(
                    ["engine is dead", "Unavailable: TCP connection to 127.0.0.1:1 failed"]
                )
            )
        engines.append(
            FleetEngine(
                namespace=namespace,
                component=component,
                endpoint="rl",
                instance_id=instance_id,
                layout=draw(layouts(max_world_size)),
                model=model,
                role=role,
                port=port,
                admin=first or draw(st.integers(0, 5)) != 0,
                system=draw(st.booleans()),
                error=error,
                host=draw(st.sampled_from(["127.0.0.1", "localhost"])),
            )
        )
    order = draw(st.permutations(range(len(engines))))
    return Fleet(scope=scope, prefix=prefix, engines=tuple(engines[i] for i in order))


def discovery_bodies(**kwargs: Any) -> st.SearchStrategy[dict[str, Any]]:
    """Valid discovery bodies (protocol_version 1), from ``fleets(**kwargs)``."""
    return fleets(**kwargs).map(Fleet.body)


@st.composite
def topologies(
    draw: st.DrawFn,
    *,
    min_groups: int = 1,
    max_groups: int = 4,
    max_count: int = 3,
    other_models: bool = True,
    error_workers: bool = False,
    no_admin: bool = True,
    admin_hosts: Sequence[str] = ("127.0.0.1", "localhost"),
    max_world_size: int = 8,
) -> dict[str, Any]:
    """Topology files (schema/topology.v1.schema.json) of heterogeneous prefill/decode fleets.

    The first group always serves the topology's model with an admin URL, so W > 0; every engine
    of the topology's model publishes an admin URL, so a client can become ready on it.
    """
    groups: list[dict[str, Any]] = []
    n_groups = draw(st.integers(min_value=min_groups, max_value=max_groups))
    for index in range(n_groups):
        role = draw(st.sampled_from(["prefill", "decode", "aggregated"]))
        layout = draw(layouts(max_world_size))
        group: dict[str, Any] = {
            "component": f"{role}{index}" if index else role,
            "count": draw(st.integers(min_value=1, max_value=max_count)),
            "tp": layout.tp,
            "pp": layout.pp,
            "pcp": layout.pcp,
            "dp": layout.dp,
            "ep": layout.ep,
        }
        if index and other_models and draw(st.integers(0, 3)) == 0:
            group["model"] = OTHER_MODEL
        if index and no_admin and other_models and draw(st.integers(0, 5)) == 0:
            # Engines without an admin URL serve another model: one of the topology's own model
            # would keep its snapshot pending forever (READY-2).
            group["admin"] = False
            group["model"] = OTHER_MODEL
        if index and error_workers and draw(st.integers(0, 5)) == 0:
            group["faults"] = {"reply_error": "engine is dead"}
        host = draw(st.sampled_from(list(admin_hosts)))
        if host != "127.0.0.1":
            group["admin_host"] = host
        groups.append(group)
    return {
        "version": 1,
        "namespace": draw(st.sampled_from(["dynamo", "prod"])),
        "model": DEFAULT_MODEL,
        "seed": draw(st.integers(min_value=0, max_value=2**31)),
        "engines": groups,
    }


# --- bodies that break exactly one requirement --------------------------------------------------

#: Every requirement ``invalid_bodies`` can break (one per requirement the validator enforces on
#: a discovery body).
BREAKABLE_REQUIREMENTS: tuple[str, ...] = tuple(MUTATIONS)


def _breakable_fleets(need: int) -> st.SearchStrategy[Fleet]:
    def enough(fleet: Fleet) -> bool:
        healthy = [e for e in fleet.engines if e.error is None and e.admin_base_url]
        # LIST-1 swaps two neighbours: they must differ in identity for the order to break.
        return len(healthy) >= need and len(fleet.engines) >= max(need, 1)

    return fleets(min_engines=max(need, 1), max_engines=5).filter(enough)


@st.composite
def invalid_bodies(
    draw: st.DrawFn, requirement: str | Sequence[str] | None = None
) -> tuple[str, Any]:
    """(requirement ID, body) where the body breaks exactly that requirement and nothing else.

    ``requirement`` picks one ID (or draws from several); by default any of
    BREAKABLE_REQUIREMENTS.
    """
    if requirement is None:
        choices: list[str] = list(BREAKABLE_REQUIREMENTS)
    elif isinstance(requirement, str):
        choices = [requirement]
    else:
        choices = list(requirement)
    unknown = [r for r in choices if r not in MUTATIONS]
    if unknown:
        raise ValueError(f"cannot break {unknown}; breakable: {', '.join(BREAKABLE_REQUIREMENTS)}")
    req = draw(st.sampled_from(choices))
    body = draw(_breakable_fleets(MUTATIONS[req].workers)).body()
    return req, mutate(req, body, DrawChooser(draw))


# --- drawing examples outside a test ------------------------------------------------------------


def sample(strategy: st.SearchStrategy[Any], n: int, seed: int) -> list[Any]:
    """``n`` examples of ``strategy``, the same ones for the same seed (for the suite's runs)."""
    drawn: list[Any] = []

    @hypothesis_seed(seed)
    @settings(
        max_examples=n,
        database=None,
        deadline=None,
        derandomize=False,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(value: Any) -> None:
        if len(drawn) < n:
            drawn.append(value)

    collect()
    return drawn
