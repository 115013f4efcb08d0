"""How a fleet differs from the one a plan was built for (TOPO-1), engine by engine."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prime_rl_dynamo.wire import WorkerId

__all__ = ["EngineChange", "EngineState", "TopologyDiff"]


@dataclass(frozen=True, slots=True)
class EngineState:
    """One engine as one side of a comparison sees it (a plan, or a listing)."""

    worker: WorkerId
    world_size: int | None
    admin_base_url: str | None
    #: What the engine reports instead of serving (a listing's ``error``), if anything.
    error: str | None = None


@dataclass(frozen=True, slots=True)
class EngineChange:
    """One engine that differs: on one side only (``before`` or ``after`` None), or on both with
    another world size or admin URL."""

    before: EngineState | None
    after: EngineState | None

    @property
    def worker(self) -> WorkerId:
        """The engine's identity."""
        state = self.before or self.after
        assert state is not None
        return state.worker


def _added(change: EngineChange) -> str:
    assert change.after is not None
    return f"{change.worker} (world_size {change.after.world_size}, admin {change.after.admin_base_url})"


def _removed(change: EngineChange) -> str:
    assert change.before is not None
    text = f"{change.worker} (world_size {change.before.world_size}, admin {change.before.admin_base_url})"
    if change.after is not None and change.after.error is not None:
        text += f" -- now reports error: {change.after.error}"
    return text


def _resized(change: EngineChange) -> str:
    assert change.before is not None and change.after is not None
    return f"{change.worker}: world_size {change.before.world_size} -> {change.after.world_size}"


def _moved(change: EngineChange) -> str:
    assert change.before is not None and change.after is not None
    return (
        f"{change.worker}: admin_base_url {change.before.admin_base_url} -> "
        f"{change.after.admin_base_url}"
    )


@dataclass(frozen=True, slots=True)
class TopologyDiff:
    """How a fleet differs from the one a plan was built for (TOPO-1), engine by engine.

    An engine both resized and moved appears in both ``resized`` and ``moved``. ``str()`` renders
    one line per kind of change, for people; code reads the entries.
    """

    added: tuple[EngineChange, ...] = ()
    removed: tuple[EngineChange, ...] = ()
    resized: tuple[EngineChange, ...] = ()
    moved: tuple[EngineChange, ...] = ()

    @classmethod
    def between(cls, before: Iterable[EngineState], after: Iterable[EngineState]) -> TopologyDiff:
        """How ``after`` differs from ``before``, keyed by identity, each kind in canonical order.

        A state of ``after`` that reports an error counts as removed (it serves no rank).
        """
        old = {s.worker: s for s in before}
        new = {s.worker: s for s in after}
        errored = {k: s for k, s in new.items() if s.error is not None}
        live = {k: s for k, s in new.items() if s.error is None}
        common = sorted(old.keys() & live.keys())
        return cls(
            added=tuple(EngineChange(None, live[k]) for k in sorted(live.keys() - old.keys())),
            removed=tuple(
                EngineChange(old[k], errored.get(k)) for k in sorted(old.keys() - live.keys())
            ),
            resized=tuple(
                EngineChange(old[k], live[k])
                for k in common
                if old[k].world_size != live[k].world_size
            ),
            moved=tuple(
                EngineChange(old[k], live[k])
                for k in common
                if old[k].admin_base_url != live[k].admin_base_url
            ),
        )

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.resized or self.moved)

    def lines(self) -> list[str]:
        """One line per kind of change present: ``"added: a; b"``."""
        parts = []
        for name, changes, render in (
            ("added", self.added, _added),
            ("removed", self.removed, _removed),
            ("resized", self.resized, _resized),
            ("moved", self.moved, _moved),
        ):
            if changes:
                parts.append(f"{name}: " + "; ".join(render(c) for c in changes))
        return parts

    def __str__(self) -> str:
        return "\n".join(self.lines()) or "no change"
