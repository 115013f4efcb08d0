"""The real Dynamo harness: NVIDIA Dynamo 1.6.1's frontend and stub RL workers on loopback.

Needs the ``dynamo`` extra (ai-dynamo-runtime); nothing in the package core imports it.
"""

from __future__ import annotations

from prime_rl_dynamo.harness._fleet import DynamoEngine, DynamoFleet, start_dynamo_fleet

__all__ = ["DynamoEngine", "DynamoFleet", "start_dynamo_fleet"]
