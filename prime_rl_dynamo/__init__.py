"""prime-rl-dynamo: the contract between Dynamo's ``GET /v1/rl/workers`` and Prime-RL.

The public surface is re-exported here; everything else is private and may change.
"""

from __future__ import annotations

from prime_rl_dynamo.errors import (
    AdminError,
    ConfigError,
    DialectError,
    NotReadyError,
    PendingError,
    PrimeRLDynamoError,
    ProtocolError,
    TopologyChangedError,
    TopologyDiff,
    TopologyError,
    TransportError,
    Violation,
)

__version__ = "0.1.0"

__all__ = [
    "AdminError",
    "ConfigError",
    "DialectError",
    "NotReadyError",
    "PendingError",
    "PrimeRLDynamoError",
    "ProtocolError",
    "TopologyChangedError",
    "TopologyDiff",
    "TopologyError",
    "TransportError",
    "Violation",
    "__version__",
]
