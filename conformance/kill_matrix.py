"""The kill matrix: for every check, a deliberately broken counterpart that fails it.

A check that no broken target can fail is a defect. Each :class:`Counterpart` names one check ID,
the deliberately broken thing that must fail it (a zoo client for client checks; a reference fault
or variant for server checks), what it does wrong, and the exact set of requirement IDs it must
fail (and no other).

- client checks: ``conformance.examples.zoo.COUNTERPARTS``;
- server checks (frontend, frontend-v2, workers, roundtrip): ``SERVER_COUNTERPARTS`` below.

The kill-matrix tests and the generated ``docs/`` page join both (this module imports neither
the zoo nor the checks, so nothing circles back).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["SERVER_COUNTERPARTS", "Counterpart"]


@dataclass(frozen=True)
class Counterpart:
    """One deliberately broken target and the check it must fail."""

    #: The check ID it kills, as the registry names it (``Check.id``).
    check: str
    #: What breaks: ``"zoo"`` (a client of conformance.examples.zoo), ``"fault"`` (a reference
    #: fault spec, as ``serve --fault`` takes it) or ``"variant"`` (a reference variant listing).
    kind: Literal["zoo", "fault", "variant"]
    #: The zoo client's name, the fault spec or the variant's name.
    name: str
    #: What it does wrong, in one line, for people.
    wrong: str
    #: Every requirement ID the run must fail: these and no other.
    fails: frozenset[str]


#: Counterparts of the server-side checks.
SERVER_COUNTERPARTS: tuple[Counterpart, ...] = ()
