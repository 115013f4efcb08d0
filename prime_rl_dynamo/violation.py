"""One broken requirement in one place of a discovery body: what the validator reports."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Violation"]


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken requirement in one place of a discovery body.

    Built from ``expected`` and ``found``, the message is ``"expected <expected>, found <found>"``
    and the JSON report carries both fields as they are; a message that does not have that shape
    is given whole, with ``expected`` and ``found`` left None.
    """

    requirement: str
    pointer: str
    message: str = ""
    worker: str | None = None
    level: str = "MUST"
    expected: str | None = None
    found: str | None = None

    def __post_init__(self) -> None:
        if not self.message and self.expected is not None:
            object.__setattr__(self, "message", f"expected {self.expected}, found {self.found}")

    def __str__(self) -> str:
        where = self.pointer or "/"
        who = f" [{self.worker}]" if self.worker else ""
        return f"{self.requirement} at {where}{who}: {self.message}"
