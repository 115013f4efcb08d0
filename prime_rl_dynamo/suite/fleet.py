"""The interface both fleets implement: the reference fleet and the real Dynamo fleet.

The conformance suite, the CLI and the tests drive a fleet through ``Fleet`` and see its engines
through ``FleetEngine``, so that code written for one fleet runs on the other. ``ReferenceFleet``
and ``DynamoFleet`` subclass ``Fleet`` explicitly: mypy checks that every member agrees.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypedDict, TypeVar, runtime_checkable

from prime_rl_dynamo.suite.recording import Recorder
from prime_rl_dynamo.topology import EngineSpec, Topology
from prime_rl_dynamo.wire import DISCOVERY_PATH, WorkerId

if TYPE_CHECKING:
    from typing import Unpack

__all__ = ["EngineOptions", "Fleet", "FleetEngine", "started"]

_F = TypeVar("_F", bound="Fleet")
_P = ParamSpec("_P")


class EngineOptions(TypedDict, total=False):
    """The shape of the engines ``Fleet.add`` starts (defaults: ``Topology.more_engines``)."""

    count: int
    world_size: int
    namespace: str | None
    endpoint: str
    routes: Iterable[str]
    admin: bool
    system: bool


@runtime_checkable
class FleetEngine(Protocol):
    """One engine of a fleet as it runs now."""

    @property
    def spec(self) -> EngineSpec:
        """What the topology says about the engine (a resize replaces it on a real fleet)."""

    @property
    def key(self) -> str:
        """The topology key, e.g. ``dynamo.prefill#0``."""

    @property
    def instance_id(self) -> int | None:
        """The instance id the listing carries (None before a real engine registered)."""

    @property
    def identity(self) -> WorkerId:
        """(namespace, component, endpoint, instance_id) as the frontend lists it."""

    @property
    def label(self) -> str:
        """The worker label used in messages: ``ns.component.endpoint#instance_id``."""

    @property
    def world_size(self) -> int:
        """The world size the engine reports now."""

    @property
    def system_url(self) -> str | None:
        """Base URL of the worker system server."""

    @property
    def admin_base_url(self) -> str | None:
        """Base URL of the admin API."""

    @property
    def alive(self) -> bool:
        """Whether the engine's servers answer (a killed one is listed with an error)."""


@runtime_checkable
class Fleet(Protocol):
    """A running fleet: an RL listener at ``frontend_url`` and the engines it lists.

    Use as a context manager (leaving the block stops every server) or call ``stop()``. Waiting
    and listing raise a ``PrimeRLDynamoError`` subclass (``HarnessError`` on the real fleet,
    ``TransportError`` on the reference fleet) with what was last seen.
    """

    topology: Topology
    recorder: Recorder

    # -- addresses -----------------------------------------------------------------------------

    @property
    def frontend_url(self) -> str:
        """Base URL of the RL listener (what Prime-RL is given)."""

    @property
    def discovery_url(self) -> str:
        """The discovery endpoint: ``frontend_url`` + ``DISCOVERY_PATH``."""
        return self.frontend_url + DISCOVERY_PATH

    @property
    def engines(self) -> Sequence[FleetEngine]:
        """Every engine of the fleet, in topology order."""

    def engine(self, key: str) -> FleetEngine:
        """The engine with this topology key."""

    @property
    def scope(self) -> str:
        """The namespace the frontend reports in the listing's body."""

    def in_scope(self, engine: FleetEngine) -> bool:
        """Whether the frontend lists this engine at all."""

    @property
    def inference_world_size(self) -> int:
        """W: the sum of the world sizes of the listed live engines that publish an admin URL."""

    @property
    def running(self) -> bool:
        """Whether the fleet's servers are up."""

    def describe(self) -> dict[str, Any]:
        """Where everything listens, as a JSON-ready mapping (what the CLI prints)."""

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self: _F) -> _F:
        """Start serving; returns once the fleet is ready."""

    def stop(self) -> None:
        """Stop every server the fleet started (idempotent)."""

    def __enter__(self: _F) -> _F:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- the listing ---------------------------------------------------------------------------

    def listing(self) -> dict[str, Any]:
        """One GET of the discovery URL, parsed (an error unless 200 with a JSON object)."""

    def expected_ready(self) -> int:
        """How many workers a settled listing shows without an error."""

    def wait_ready(self, n: int | None = None, timeout: float = ...) -> dict[str, Any]:
        """Poll until exactly ``n`` (default ``expected_ready()``) workers are listed without an
        error; returns that listing."""

    # -- membership ----------------------------------------------------------------------------

    def kill(self, key: str) -> list[str]:
        """The engine's process dies; returns the keys of every engine that died with it."""

    def restart(self, key: str) -> Sequence[FleetEngine]:
        """(Re)start the process hosting ``key``; returns its engines."""

    def resize(self, key: str, world_size: int) -> FleetEngine:
        """The engine reports another world size from now on."""

    def join(self, key: str) -> FleetEngine:
        """An engine of the topology that is not listed yet (``present: false``) joins."""

    def remove(self, key: str) -> None:
        """The engine leaves the fleet."""

    def add(self, component: str, **options: Unpack[EngineOptions]) -> Sequence[FleetEngine]:
        """Start more engines of one component; they are listed when this returns."""


def started(fleet: Callable[_P, _F], name: str, doc: str) -> Callable[_P, _F]:
    """The function ``name``: builds ``fleet(...)`` with the arguments it is given and starts it."""

    def start(*args: _P.args, **kwargs: _P.kwargs) -> _F:
        return fleet(*args, **kwargs).start()

    start.__name__ = start.__qualname__ = name
    start.__doc__ = doc
    return start
