"""The conformance suite for Dynamo's ``GET /v1/rl/workers`` contract and its clients."""
