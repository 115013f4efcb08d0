"""One broken requirement in one place of a discovery body: what the validator reports."""

from __future__ import annotations

import typing
from dataclasses import dataclass, fields
from typing import Any

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


_FIELDS = ("requirement", "pointer", "message", "worker", "level", "expected", "found")
if tuple(f.name for f in fields(Violation)) != _FIELDS:
    raise ImportError("violation_of sets Violation's fields in another order: adapt _FIELDS")
_S0, _S1, _S2, _S3, _S4, _S5, _S6 = (Violation.__dict__[name].__set__ for name in _FIELDS)


def violation_of(
    requirement: str,
    pointer: str,
    message: str,
    worker: str | None,
    expected: str | None,
    found: str | None,
    *,
    _new: Any = object.__new__,
    _s0: Any = _S0,
    _s1: Any = _S1,
    _s2: Any = _S2,
    _s3: Any = _S3,
    _s4: Any = _S4,
    _s5: Any = _S5,
    _s6: Any = _S6,
) -> Violation:
    """``Violation(requirement, pointer, message, worker, "MUST", expected, found)`` with the
    message already composed (``expected <expected>, found <found>``): the same object, built
    without the frozen dataclass's ``__init__`` at about half its price (a validator builds one
    per defect: thousands for a broken fleet). The slots are set through their descriptors."""
    v = _new(Violation)
    _s0(v, requirement)
    _s1(v, pointer)
    _s2(v, message)
    _s3(v, worker)
    _s4(v, "MUST")
    _s5(v, expected)
    _s6(v, found)
    return typing.cast(Violation, v)
