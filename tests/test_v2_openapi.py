"""The protocol 2 draft's OpenAPI document is checked like v1's: schemathesis reads its one
operation, every $ref is local and resolves, and `schemathesis run` passes against the reference
frontend, which speaks v2."""

from __future__ import annotations

import json
from typing import Any

import pytest

from prime_rl_dynamo._resources import schema_path
from tests.test_openapi import _schemathesis as run_schemathesis
from tests.test_openapi import _walk

DOCUMENT = "rl-frontend.v2.openapi.json"


def test_every_ref_is_local_and_resolves() -> None:
    document = json.loads(schema_path(f"openapi/{DOCUMENT}").read_text("utf-8"))
    refs = [(p, n["$ref"]) for p, n in _walk(document) if isinstance(n, dict) and "$ref" in n]
    assert refs
    for pointer, ref in refs:
        assert ref.startswith("#/"), f"{pointer}: $ref {ref!r} is not local"
        node: Any = document
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]


def test_document_loads_in_schemathesis_with_its_operation() -> None:
    schemathesis = pytest.importorskip("schemathesis")
    schema = schemathesis.openapi.from_path(str(schema_path(f"openapi/{DOCUMENT}")))
    operations = {
        (op.method.upper(), op.path) for op in (r.ok() for r in schema.get_all_operations())
    }
    assert operations == {("GET", "/v1/rl/workers")}


def test_negotiation_inputs_are_documented_as_tolerated() -> None:
    """A server never refuses a request for its negotiation inputs (SPEC-v2 section 3): a value
    naming no spoken version gets v1, a ``wait`` that is not a number is not waited on. A
    pattern or a numeric type there would have schemathesis demand a refusal."""
    document = json.loads(schema_path(f"openapi/{DOCUMENT}").read_text("utf-8"))
    params = {p["name"]: p for p in document["paths"]["/v1/rl/workers"]["get"]["parameters"]}
    assert params["Dynamo-RL-Protocol"]["schema"] == {"type": "string"}
    assert params["wait"]["schema"] == {"type": "string"}


@pytest.mark.integration
def test_schemathesis_passes_on_the_reference_fleet() -> None:
    pytest.importorskip("schemathesis")
    from prime_rl_dynamo.reference import start_reference_fleet

    with start_reference_fleet() as fleet:
        done = run_schemathesis(DOCUMENT, fleet.frontend_url)
    assert done.returncode == 0, done.stdout[-3000:]
