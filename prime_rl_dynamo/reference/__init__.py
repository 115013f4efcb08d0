"""The reference fleet: an RL listener and engines that speak the protocol exactly, over real HTTP.

Needs the ``reference`` extra (Starlette, uvicorn, PyYAML). ``start_reference_fleet()`` runs the
default fleet (W = 16) in a background thread on free ports; faults make it misbehave on purpose.
"""

from __future__ import annotations

from prime_rl_dynamo.reference.breaks import BREAKS
from prime_rl_dynamo.reference.faults import FAULTS, Fault, parse_fault, parse_faults
from prime_rl_dynamo.reference.fleet import ReferenceFleet, start_reference_fleet
from prime_rl_dynamo.reference.listing import dumps, listing_body, worker_entry
from prime_rl_dynamo.reference.state import ReferenceEngine

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
    "worker_entry",
]
