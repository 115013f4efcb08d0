"""prime-rl-dynamo: the contract between Dynamo's ``GET /v1/rl/workers`` and Prime-RL.

The public surface is re-exported here; everything else is private and may change.
"""

from __future__ import annotations

from prime_rl_dynamo.admin import AdminPool, Credentials, EngineResult
from prime_rl_dynamo.client import (
    Discovery,
    DiscoveryClient,
    PollingPolicy,
    ReadinessPolicy,
    discover,
    discover_sync,
)
from prime_rl_dynamo.config import DynamoClientConfig
from prime_rl_dynamo.errors import (
    AdminError,
    ConfigError,
    DialectError,
    NotReadyError,
    PendingError,
    PolicyError,
    PrimeRLDynamoError,
    ProtocolError,
    Refusal,
    TopologyChangedError,
    TopologyError,
    TransportError,
)
from prime_rl_dynamo.exitcodes import ExitCode
from prime_rl_dynamo.plan import BroadcastPlan, Convention, plan_broadcast, worker_rank
from prime_rl_dynamo.prime_rl import DynamoInferencePool
from prime_rl_dynamo.topology_diff import TopologyDiff
from prime_rl_dynamo.validate import Snapshot, Worker, check_body, validate_body
from prime_rl_dynamo.violation import Violation
from prime_rl_dynamo.wire import WorkerId

__version__ = "0.1.0"

__all__ = [
    "AdminError",
    "AdminPool",
    "BroadcastPlan",
    "ConfigError",
    "Convention",
    "Credentials",
    "DialectError",
    "Discovery",
    "DiscoveryClient",
    "DynamoClientConfig",
    "DynamoInferencePool",
    "EngineResult",
    "ExitCode",
    "NotReadyError",
    "PendingError",
    "PolicyError",
    "PollingPolicy",
    "PrimeRLDynamoError",
    "ProtocolError",
    "ReadinessPolicy",
    "Refusal",
    "Snapshot",
    "TopologyChangedError",
    "TopologyDiff",
    "TopologyError",
    "TransportError",
    "Violation",
    "Worker",
    "WorkerId",
    "__version__",
    "check_body",
    "discover",
    "discover_sync",
    "plan_broadcast",
    "validate_body",
    "worker_rank",
]
