"""What was observed, as data: what one poll found and what one engine answered.

The errors carry these (a :class:`~prime_rl_dynamo.errors.PendingError` the poll's
:class:`Observation`, an :class:`~prime_rl_dynamo.errors.AdminError` every engine's
:class:`EngineResult`), so they live below the errors and import nothing that raises.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prime_rl_dynamo._models import Snapshot, Worker

__all__ = ["EngineResult", "Observation"]


@dataclass(frozen=True)
class Observation:
    """What one poll found: the validated body and the matching workers in canonical order
    (:class:`~prime_rl_dynamo.readiness.Discovery` is a ready one)."""

    url: str
    snapshot: Snapshot
    workers: tuple[Worker, ...]
    inference_world_size: int | None
    polls: int = 1
    elapsed: float = 0.0

    @property
    def world_size_sum(self) -> int:
        """Sum of the matching workers' world sizes."""
        return sum(w.world_size or 0 for w in self.workers)


@dataclass(frozen=True)
class EngineResult:
    """What one engine answered to one admin call."""

    engine: str
    operation: str
    ok: bool
    status_code: int | None = None
    body: Any = None
    error: str | None = None
    elapsed: float = 0.0

    def __str__(self) -> str:
        state = "ok" if self.ok else f"FAILED: {self.error}"
        code = f" [{self.status_code}]" if self.status_code is not None else ""
        return f"{self.operation} {self.engine}{code}: {state}"
