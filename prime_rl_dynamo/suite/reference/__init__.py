"""The reference fleet: an RL listener and engines that speak the protocol exactly, over real HTTP.

Needs the ``reference`` extra (Starlette, uvicorn, PyYAML). ``start_reference_fleet()`` runs the
default fleet (W = 16) in a background thread on free ports; faults make it misbehave on purpose.
Names load lazily, so that light submodules (``faults``) work without the extra installed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prime_rl_dynamo.suite.reference.breaks import BREAKS
    from prime_rl_dynamo.suite.reference.faults import FAULTS, Fault, parse_fault, parse_faults
    from prime_rl_dynamo.suite.reference.fleet import ReferenceFleet, start_reference_fleet
    from prime_rl_dynamo.suite.reference.listing import dumps, listing_body, view_entry
    from prime_rl_dynamo.suite.reference.state import ReferenceEngine

_WHERE = {
    "BREAKS": "breaks",
    "FAULTS": "faults",
    "Fault": "faults",
    "parse_fault": "faults",
    "parse_faults": "faults",
    "ReferenceFleet": "fleet",
    "start_reference_fleet": "fleet",
    "dumps": "listing",
    "listing_body": "listing",
    "view_entry": "listing",
    "ReferenceEngine": "state",
}

__all__ = [
    "BREAKS",
    "FAULTS",
    "Fault",
    "ReferenceEngine",
    "ReferenceFleet",
    "dumps",
    "listing_body",
    "parse_fault",
    "parse_faults",
    "start_reference_fleet",
    "view_entry",
]


def __getattr__(name: str) -> Any:
    try:
        module = _WHERE[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
