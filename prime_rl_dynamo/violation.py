"""One broken requirement in one place of a discovery body: what the validator reports."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Violation"]


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken requirement in one place of a discovery body."""

    requirement: str
    pointer: str
    message: str
    worker: str | None = None
    level: str = "MUST"

    def __str__(self) -> str:
        where = self.pointer or "/"
        who = f" [{self.worker}]" if self.worker else ""
        return f"{self.requirement} at {where}{who}: {self.message}"
