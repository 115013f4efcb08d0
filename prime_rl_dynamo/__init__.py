"""prime-rl-dynamo: the contract between Dynamo's ``GET /v1/rl/workers`` and Prime-RL.

``__all__`` is the whole public surface a trainer imports: the wire types, validation, readiness,
broadcast plans, the discovery client, the admin pool, credentials, configuration, the Prime-RL
glue (the 73164c322 inference pool, main's admin plane, the native NCCL trainer) and the errors.
A trainer imports these names from here. The modules behind them (``validate``, ``plan``,
``readiness``, ...) are the implementation, shared with this project's own suite (``conformance``)
and CLI, and may change; the underscored ones are private to the package. The suite's instruments
live in the subpackage ``prime_rl_dynamo.suite`` (the reference fleet, the Dynamo and real-engine
harness, strategies, mutations, recording, spec diff); this import loads none of them
(tests/test_public_api.py holds it).
"""

from __future__ import annotations

from prime_rl_dynamo.admin import AdminPool, Credentials, EngineResult
from prime_rl_dynamo.client import (
    Discovery,
    DiscoveryClient,
    PollingPolicy,
    ReadinessPolicy,
    assess_snapshot,
    discover,
    discover_sync,
    normalize_discovery_url,
)
from prime_rl_dynamo.config import DynamoClientConfig
from prime_rl_dynamo.credentials import host_allowed
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
from prime_rl_dynamo.native_nccl import NativeNcclTrainer, SyncNativeNcclTrainer
from prime_rl_dynamo.plan import BroadcastPlan, Convention, plan_broadcast, worker_rank
from prime_rl_dynamo.prime_rl import (
    DynamoInferencePool,
    client_config_from_prime_rl,
    trainer_config_from_prime_rl,
)
from prime_rl_dynamo.prime_rl_main import DynamoAdminPlane
from prime_rl_dynamo.requirements import Reason
from prime_rl_dynamo.topology_diff import TopologyDiff
from prime_rl_dynamo.validate import Snapshot, Worker, check_body, validate_body
from prime_rl_dynamo.variants import detect_dialect
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
    "DynamoAdminPlane",
    "DynamoClientConfig",
    "DynamoInferencePool",
    "EngineResult",
    "ExitCode",
    "NativeNcclTrainer",
    "NotReadyError",
    "PendingError",
    "PolicyError",
    "PollingPolicy",
    "PrimeRLDynamoError",
    "ProtocolError",
    "ReadinessPolicy",
    "Reason",
    "Refusal",
    "Snapshot",
    "SyncNativeNcclTrainer",
    "TopologyChangedError",
    "TopologyDiff",
    "TopologyError",
    "TransportError",
    "Violation",
    "Worker",
    "WorkerId",
    "__version__",
    "assess_snapshot",
    "check_body",
    "client_config_from_prime_rl",
    "detect_dialect",
    "discover",
    "discover_sync",
    "host_allowed",
    "normalize_discovery_url",
    "plan_broadcast",
    "trainer_config_from_prime_rl",
    "validate_body",
    "worker_rank",
]
