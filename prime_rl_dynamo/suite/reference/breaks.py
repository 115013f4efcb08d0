"""Bodies that break exactly one requirement of schema/requirements.v1.json (fault ``break=ID``).

A thin adapter over ``prime_rl_dynamo.suite.mutations`` with a ``random.Random`` seeded by the fault's
seed and the requirement: the same seed gives the same bytes. ``HTTP-5`` is the one break of the
whole reply rather than of a body: a 500 without its message.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prime_rl_dynamo.suite.mutations import MUTATIONS, RandomChooser

__all__ = ["BREAKS", "BrokenBody", "break_body"]


@dataclass(frozen=True, slots=True)
class BrokenBody:
    """What the frontend sends under a ``break=ID`` fault."""

    status: int
    body: Any


def _http_5(body: dict[str, Any], rng: random.Random) -> BrokenBody:
    # A whole-listing failure without its message.
    return BrokenBody(500, {"error": "discovery_failed"})


def _mutation(requirement: str) -> Callable[[dict[str, Any], random.Random], BrokenBody]:
    apply = MUTATIONS[requirement].apply
    return lambda body, rng: BrokenBody(200, apply(body, RandomChooser(rng)))


#: Requirement ID -> how to break it. One per requirement the validator checks on a body.
BREAKS: dict[str, Callable[[dict[str, Any], random.Random], BrokenBody]] = {
    "HTTP-5": _http_5,
    **{requirement: _mutation(requirement) for requirement in MUTATIONS},
}


def break_body(requirement: str, body: dict[str, Any], seed: int) -> BrokenBody:
    """Break ``requirement`` in a deep copy of ``body``; the same seed gives the same bytes."""
    rng = random.Random(f"{seed}:{requirement}")
    return BREAKS[requirement](copy.deepcopy(body), rng)
