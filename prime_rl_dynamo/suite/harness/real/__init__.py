"""Real engines: vLLM on the CPU behind Dynamo 1.6.1's own vLLM sidecar (docs/harness.md).

Needs the real-engine virtualenv (scripts/install-real-engines.sh); nothing else in the package
imports this subpackage.
"""

from __future__ import annotations

from prime_rl_dynamo.suite.harness.real._fleet import (
    RealEngine,
    RealEngineFleet,
    available_memory,
    engines_python,
    memory_needed,
)

__all__ = ["RealEngine", "RealEngineFleet", "available_memory", "engines_python", "memory_needed"]
