"""The reference admin server enforces the admin OpenAPI document, nothing more and nothing less.

Over real HTTP on loopback: its admin routes are the document's paths; a request body gets 2xx
exactly when the schema file the document embeds (schema/admin-bodies.v1.schema.json) accepts it,
and a refusal is a 400 naming the field and the schema; query parameters follow the document too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator

from prime_rl_dynamo.resources import load_json
from prime_rl_dynamo.suite.reference import ReferenceFleet, start_reference_fleet

pytestmark = pytest.mark.integration

#: Which body schema each admin operation takes (the document's requestBody, per path).
BODY_OF = {
    "init_broadcaster": "InitBroadcaster",
    "update_weights": "UpdateWeights",
    "collective_rpc": "CollectiveRpc",
}
VALID: dict[str, dict[str, Any]] = {
    "InitBroadcaster": {
        "host": "127.0.0.1",
        "port": 29500,
        "rank_offset": 0,
        "inference_world_size": 4,
        "engine_world_size": 2,
        "timeout": 30,
        "quantize_in_weight_transfer": False,
    },
    "UpdateWeights": {"weight_dir": "/weights/step-3"},
    "CollectiveRpc": {"method": "reload_weights"},
}
#: One change to a valid body, and whether the schema accepts the result.
CHANGES: list[tuple[str, dict[str, Any]]] = [
    ("InitBroadcaster", {"port": 0}),
    ("InitBroadcaster", {"port": 65536}),
    ("InitBroadcaster", {"port": True}),  # JSON true is never an integer
    ("InitBroadcaster", {"port": 29500.0}),  # JSON Schema counts 29500.0 as an integer
    ("InitBroadcaster", {"rank_offset": 4294967296}),
    ("InitBroadcaster", {"timeout": 0}),
    ("InitBroadcaster", {"timeout": 0.5}),
    ("InitBroadcaster", {"host": ""}),
    ("InitBroadcaster", {"session_id": ""}),
    ("InitBroadcaster", {"session_id": "s-1"}),
    ("InitBroadcaster", {"quantize_in_weight_transfer": "false"}),
    ("InitBroadcaster", {"extra": "ignored"}),
    ("UpdateWeights", {"weight_dir": None}),
    ("UpdateWeights", {"weight_dir": ""}),
    ("UpdateWeights", {"weight_dir": 3}),
    ("CollectiveRpc", {"args": {}}),
    ("CollectiveRpc", {"args": ["/w"], "kwargs": {"a": 1}}),
    ("CollectiveRpc", {"kwargs": []}),
    ("CollectiveRpc", {"method": ""}),
]


@pytest.fixture(scope="module")
def fleet() -> Iterator[ReferenceFleet]:
    with start_reference_fleet() as running:
        yield running


def _schema_accepts(name: str, body: Any) -> bool:
    # Straight from the schema file, not through the document the server reads.
    schema = load_json("admin-bodies.v1.schema.json")
    return Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": schema["$defs"]}).is_valid(
        body
    )


def _post(fleet: ReferenceFleet, operation: str, **kwargs: Any) -> httpx.Response:
    # update_weights and init calls change engine state: the last engine takes them.
    base = fleet.engines[-1].admin_base_url.rstrip("/")  # listed with a trailing "/"
    return httpx.post(f"{base}/{operation}", timeout=10, **kwargs)


def test_admin_routes_are_the_documents_paths(fleet: ReferenceFleet) -> None:
    document = load_json("openapi/admin.openapi.json")
    base = fleet.engines[-1].admin_base_url.rstrip("/")  # listed with a trailing "/"
    for path, item in document["paths"].items():
        for method in item:
            reply = httpx.request(method.upper(), base + path, json={}, timeout=10)
            assert reply.status_code not in (404, 405), (method, path, reply.text)
    assert httpx.post(base + "/reset", json={}, timeout=10).status_code == 404
    assert httpx.get(base + "/pause", timeout=10).status_code == 405


@pytest.mark.parametrize(("name", "change"), CHANGES, ids=lambda v: json.dumps(v))
def test_a_body_is_accepted_exactly_when_the_schema_accepts_it(
    fleet: ReferenceFleet, name: str, change: dict[str, Any]
) -> None:
    operation = next(op for op, body in BODY_OF.items() if body == name)
    body = {**VALID[name], **change}
    reply = _post(fleet, operation, json=body)
    if _schema_accepts(name, body):
        assert reply.status_code == 200, reply.text
    else:
        assert reply.status_code == 400, reply.text
        message = reply.json()["message"]
        field = next(iter(change))
        assert message.startswith(f"{operation}: field {field!r}") and f"Admin.{name}" in message


def test_refusals_say_what_is_missing_or_unreadable(fleet: ReferenceFleet) -> None:
    body = dict(VALID["InitBroadcaster"])
    del body["timeout"]
    missing = _post(fleet, "init_broadcaster", json=body)
    assert missing.status_code == 400 and missing.json() == {
        "status": "error",
        "message": "init_broadcaster: field 'timeout' is required (schema Admin.InitBroadcaster)",
    }
    huge = _post(fleet, "collective_rpc", json={"method": "m", "args": {"k" * 5000: 1}})
    assert huge.status_code == 400 and len(huge.json()["message"]) < 400, huge.text
    assert huge.json()["message"].startswith("collective_rpc: field 'args': {'kkk")
    for raw, expected in (
        (b"[1]", "body must be a JSON object, found list"),
        (b"", "body must be a JSON object, found NoneType"),
        (b'{"weight_dir": NaN}', "body is not JSON: NaN is not JSON"),
        (b'{"timeout": 1e400}', "body is not JSON: number 1e400 is out of range"),
    ):
        reply = _post(fleet, "update_weights", content=raw)
        assert reply.status_code == 400 and expected in reply.json()["message"], reply.text


def test_engine_routes_take_any_json_as_dynamos_system_server_does(fleet: ReferenceFleet) -> None:
    # Dynamo's system server refuses only a body that is not JSON (400); any JSON value reaches the
    # route, and a route that cannot use it answers in a 200 body (worker-system document).
    engine = fleet.engines[0]
    route = engine.spec.routes[0]

    def post(raw: bytes) -> httpx.Response:
        headers = {"content-type": "application/json"}
        return httpx.post(f"{engine.system_url}/engine/{route}", content=raw, headers=headers)

    for raw, found in ((b"null", "null"), (b"[1]", "list"), (b"7", "int")):
        reply = post(raw)
        assert reply.status_code == 200, reply.text
        assert reply.json()["status"] == "error", reply.text
        assert reply.json()["message"].endswith(f"arguments must be a JSON object, found {found}")
    for raw in (b"", b"{}"):
        assert post(raw).json()["status"] == "ok", raw
    not_json = post(b"nope")
    assert not_json.status_code == 400 and not_json.json()["status"] == "error", not_json.text


def test_query_parameters_follow_the_document(fleet: ReferenceFleet) -> None:
    for query in ("", "?mode=wait", "?mode=abort&clear_cache=true", "?clear_cache=false"):
        assert _post(fleet, "pause" + query).status_code == 200, query
    fast = _post(fleet, "pause?mode=fast")
    assert fast.status_code == 400 and "query mode: 'fast' is not one of" in fast.json()["message"]
    yes = _post(fleet, "pause?clear_cache=yes")
    assert yes.status_code == 400 and "query clear_cache:" in yes.json()["message"]
    assert _post(fleet, "resume").status_code == 200


def test_every_prime_rl_generations_init_body_is_accepted(fleet: ReferenceFleet) -> None:
    # What each generation's server reads (conformance/prime_rl_engines.py): main's AdminPlane
    # sends no engine_world_size, 828ddc7da no engine_world_size either, e9d3f8791 sends it.
    from conformance.prime_rl_engines import GENERATIONS

    full = {**VALID["InitBroadcaster"], "session_id": "s-1", "backend": "nixl"}
    for generation in GENERATIONS.values():
        body = {k: v for k, v in full.items() if k in generation.init_route_reads}
        reply = _post(fleet, "init_broadcaster", json=body)
        assert reply.status_code == 200, (generation.name, reply.text)


def test_a_scripted_fault_comes_before_any_validation_of_the_body() -> None:
    invalid = {"host": "127.0.0.1"}  # an init the schema refuses
    with start_reference_fleet() as fleet:
        engine = fleet.engines[-1]
        base = engine.admin_base_url.rstrip("/")  # listed with a trailing "/"
        engine.admin_error_in_200 = True
        reply = httpx.post(f"{base}/init_broadcaster", json=invalid, timeout=10)
        assert reply.status_code == 200 and reply.json()["status"] == "error"
        engine.admin_error_in_200 = False
        engine.resize_after_init = 4
        reply = httpx.post(f"{base}/init_broadcaster", json=invalid, timeout=10)
        assert reply.status_code == 400  # refused, yet the engine resized: the fault happened
        assert engine.world_size == 4
