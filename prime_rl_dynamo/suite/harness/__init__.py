"""The real Dynamo harness: NVIDIA Dynamo's frontend and stub RL workers on loopback, on the
installed ``ai-dynamo-runtime`` release (any from 1.3.0.post1, the first with the RL listener).

Needs the ``dynamo`` extra (ai-dynamo-runtime); nothing in the package core imports it. The
names load lazily so that stub worker processes do not import the fleet machinery.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# Loopback ports and managed processes: the standard library only, so loaded now.
from prime_rl_dynamo.suite.harness._process import (
    ManagedProcess,
    free_port,
    free_system_port,
    stop_all,
)

# Which release is installed and what it can host: light (package metadata only), so loaded now.
from prime_rl_dynamo.suite.harness._release import (
    FIRST_LISTENER_RELEASE,
    DynamoRelease,
    installed_release,
    release_label,
    require_release,
)

if TYPE_CHECKING:
    from prime_rl_dynamo.suite.harness._fleet import DynamoEngine, DynamoFleet, start_dynamo_fleet

_LAZY = ("DynamoEngine", "DynamoFleet", "start_dynamo_fleet")
__all__ = [
    "FIRST_LISTENER_RELEASE",
    "DynamoEngine",
    "DynamoFleet",
    "DynamoRelease",
    "ManagedProcess",
    "free_port",
    "free_system_port",
    "installed_release",
    "release_label",
    "require_release",
    "start_dynamo_fleet",
    "stop_all",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from prime_rl_dynamo.suite.harness import _fleet

        return getattr(_fleet, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
