"""The protocol 2 draft's OpenAPI document leaves its negotiation inputs unconstrained.

The checks every document gets (valid OpenAPI, local refs, its one operation, the embedded schemas)
are in test_openapi.py; `schemathesis run` against the reference frontend is in
test_reference_schemathesis.py."""

from __future__ import annotations

import json

from prime_rl_dynamo.resources import schema_path

DOCUMENT = "rl-frontend.v2.openapi.json"


def test_negotiation_inputs_are_documented_as_tolerated() -> None:
    """A server never refuses a request for its negotiation inputs (SPEC-v2 section 3): a value
    naming no spoken version gets v1, a ``wait`` that is not a number is not waited on. A
    pattern or a numeric type there would have schemathesis demand a refusal."""
    document = json.loads(schema_path(f"openapi/{DOCUMENT}").read_text("utf-8"))
    params = {p["name"]: p for p in document["paths"]["/v1/rl/workers"]["get"]["parameters"]}
    assert params["Dynamo-RL-Protocol"]["schema"] == {"type": "string"}
    assert params["wait"]["schema"] == {"type": "string"}
