"""Every init wire form trainers use read into one record; the reference admin API takes them.

The unit part feeds recorded calls to conformance.client_wire; the integration part posts each
form to a real reference fleet over loopback HTTP and reads back what the fleet recorded.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from conformance.client_wire import Uninterpretable, init_record, is_init, is_update
from prime_rl_dynamo.suite.recording import RecordedRequest

HOST, PORT = "10.0.0.1", 29501


INIT_ROUTE = "update/init_weight_transfer_engine"


def _reference_fleet(*engines: dict[str, Any]) -> Any:
    """A reference fleet of these engines (topology file entries), started on loopback."""
    from prime_rl_dynamo.suite.reference import start_reference_fleet
    from prime_rl_dynamo.topology import topology_from_dict

    return start_reference_fleet(topology_from_dict({"version": 1, "engines": list(engines)}))


def _call(path: str, body: Any, *, server: str = "admin", status: int = 200) -> RecordedRequest:
    return RecordedRequest(
        engine="dynamo.prefill#0",
        server=server,
        method="POST",
        path=path,
        query="",
        headers={},
        json=body,
        time=0.0,
        status=status,
    )


DIRECT = {
    "host": HOST,
    "port": PORT,
    "rank_offset": 4,
    "inference_world_size": 7,
    "engine_world_size": 2,
    "timeout": 60,
    "quantize_in_weight_transfer": False,
}

#: (form, call, expected record fields)
FORMS: list[tuple[str, RecordedRequest, dict[str, Any]]] = [
    (
        "init_broadcaster",
        _call("/init_broadcaster", DIRECT),
        {"family": "prime", "rank_offset": 4, "inference_world_size": 7, "engine_world_size": 2},
    ),
    (
        "collective_rpc init_broadcaster, keywords",
        _call("/collective_rpc", {"method": "init_broadcaster", "kwargs": DIRECT}),
        {"family": "prime", "rank_offset": 4, "inference_world_size": 7, "timeout": 60},
    ),
    (
        "collective_rpc init_broadcaster, positional (NIXL)",
        _call(
            "/collective_rpc",
            {
                "method": "init_broadcaster",
                "timeout": 30,
                "args": [HOST, PORT, 4, 7, 30, "sess-1"],
                "kwargs": {},
            },
        ),
        {"rank_offset": 4, "inference_world_size": 7, "session_id": "sess-1", "timeout": 30},
    ),
    (
        "collective_rpc init_broadcaster, positional (NCCL)",
        _call(
            "/collective_rpc",
            {"method": "init_broadcaster", "args": [HOST, PORT, 4, 7, 30, False, "default"]},
        ),
        {"rank_offset": 4, "inference_world_size": 7, "engine_world_size": None},
    ),
    (
        "collective_rpc init_weight_transfer_engine",
        _call(
            "/collective_rpc",
            {
                "method": "init_weight_transfer_engine",
                "kwargs": {
                    "init_info": {
                        "master_address": HOST,
                        "master_port": PORT,
                        "rank_offset": 5,
                        "world_size": 8,
                    }
                },
            },
        ),
        {"family": "vllm-native", "rank_offset": 5, "group_world_size": 8},
    ),
    (
        "engine route update/init_weight_transfer_engine",
        _call(
            "/engine/update/init_weight_transfer_engine",
            {
                "init_info": {
                    "master_address": HOST,
                    "master_port": PORT,
                    "rank_offset": 5,
                    "world_size": 8,
                }
            },
            server="system",
        ),
        {"family": "vllm-native", "rank_offset": 5, "group_world_size": 8},
    ),
]


@pytest.mark.parametrize(("form", "call", "want"), FORMS, ids=[f[0] for f in FORMS])
def test_every_form_reads_into_one_record(
    form: str, call: RecordedRequest, want: dict[str, Any]
) -> None:
    assert is_init(call)
    record = init_record(call, "nixl" if "NIXL" in form else "nccl")
    assert record.form == form
    assert record.binding_problem is None
    assert (record.host, record.port) == (HOST, PORT)
    for key, value in want.items():
        assert getattr(record, key) == value, key


@pytest.mark.parametrize(
    "body",
    [
        {"method": "init_broadcaster"},
        {"method": "init_broadcaster", "args": [HOST], "kwargs": {"rank_offset": 1}},
        {"method": "init_weight_transfer_engine", "kwargs": {}},
        {"method": "init_broadcaster", "args": "host"},
    ],
)
def test_an_unreadable_init_is_an_error_naming_the_call(body: dict[str, Any]) -> None:
    call = _call("/collective_rpc", body)
    assert is_init(call)
    with pytest.raises(Uninterpretable, match=r"POST /collective_rpc \(method init_\w+\) to "):
        init_record(call)


def test_updates_in_every_form_and_other_calls_are_not_inits() -> None:
    updates = [
        _call("/update_weights", {"weight_dir": "/ckpt"}),
        _call("/collective_rpc", {"method": "update_weights_from_path", "args": ["/ckpt"]}),
        _call("/collective_rpc", {"method": "reload_weights", "kwargs": {"weights_path": "/c"}}),
        _call("/engine/update/update_weights", {"update_info": {}}, server="system"),
    ]
    assert all(is_update(c) and not is_init(c) for c in updates)
    assert not is_init(_call("/pause", None))
    assert not is_init(_call("/collective_rpc", {"method": "get_weight_version"}))


@pytest.mark.integration
def test_the_reference_admin_api_accepts_every_form() -> None:
    engine = {"component": "prefill", "world_size": 2, "routes": [INIT_ROUTE]}
    with _reference_fleet(engine) as fleet:
        (engine,) = fleet.engines
        for _, call, _ in FORMS:
            base = engine.system_url if call.server == "system" else engine.admin_base_url
            base = base.rstrip("/")
            response = httpx.post(base + call.path, json=call.json, timeout=10)
            assert response.status_code == 200, (call.path, response.text)
        # vLLM's handler defaults args to [] and kwargs to {}: so does the reference.
        bare = httpx.post(
            engine.admin_base_url.rstrip("/") + "/collective_rpc", json={"method": "m"}
        )
        assert bare.json() == {"results": [None, None]}
        recorded = [r for r in fleet.recorder.requests() if is_init(r)]
        assert [init_record(r).rank_offset for r in recorded] == [4, 4, 4, 4, 5, 5]


@pytest.mark.integration
def test_the_reference_presents_the_engine_route_vocabulary() -> None:
    from prime_rl_dynamo.topology import ENGINE_ROUTE_VOCABULARY

    decode = {
        "component": "decode",
        "world_size": 4,
        "routes": list(ENGINE_ROUTE_VOCABULARY),
        "weight_transfer_backend": "nccl",
    }
    with _reference_fleet(decode, {"component": "prefill", "world_size": 2}) as fleet:
        decode, prefill = fleet.listing()["workers"]
        assert decode["weight_transfer_backend"] == "nccl"
        assert decode["routes"] == sorted(ENGINE_ROUTE_VOCABULARY)
        assert "weight_transfer_backend" not in prefill
        base = decode["system_url"] + "/engine/"

        def route(name: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
            reply = httpx.post(base + name, json=body or {}, timeout=10)
            assert reply.status_code == 200, reply.text
            data: dict[str, Any] = reply.json()
            return data

        route("control/pause_generation", {"mode": "keep", "clear_cache": False})
        assert route("control/is_paused")["is_paused"] is True
        route("update/update_weight_version", {"new_version": "7"})
        assert route("control/get_weight_version")["weight_version"] == "7"
        route("control/resume_generation")
        assert route("control/is_paused")["is_paused"] is False
        missing = httpx.post(decode["system_url"] + "/engine/control/nope", json={}, timeout=10)
        assert missing.status_code == 404


@pytest.mark.integration
def test_the_frontend_faults_the_client_scenarios_use() -> None:
    from prime_rl_dynamo.suite.reference import start_reference_fleet
    from prime_rl_dynamo.validate import validate_body

    with start_reference_fleet() as fleet:
        url = fleet.discovery_url
        fleet.set_faults(["status=403"])
        assert httpx.get(url, timeout=10).status_code == 403
        fleet.set_faults(["version=2"])
        assert httpx.get(url, timeout=10).json()["protocol_version"] == 2
        fleet.set_faults(["unknown-fields"])
        body = httpx.get(url, timeout=10).json()
        validate_body(body)  # still valid: unknown fields are allowed everywhere (BODY-5)
        assert "x_generation" in body and all("x_rack" in w for w in body["workers"])
        assert all("x_latency_ms" in w["transport"] for w in body["workers"])
        fleet.set_faults(["redirect-host=localhost"])
        moved = httpx.get(url, timeout=10)
        assert moved.status_code == 307
        location = moved.headers["location"]
        assert location == url.replace("127.0.0.1", "localhost")
        assert httpx.get(location, timeout=10).status_code == 200


# Prime-RL main's DynamoAdminPlane sends [host, port, 0, 1, timeout, "default"]: on every
# generation's NCCL worker the sixth parameter is quantize_in_weight_transfer (so "default" turns
# quantisation on); on the NIXL worker of 73164c322 it is the session id.
MAIN_ARGS = [HOST, PORT, 0, 1, 30, "default"]


def test_a_positional_init_binds_as_the_target_worker_binds_it() -> None:
    call = _call("/collective_rpc", {"method": "init_broadcaster", "args": MAIN_ARGS})
    nccl = init_record(call, "nccl")
    assert nccl.binding_problem is not None
    assert "quantize_in_weight_transfer bound to 'default'" in nccl.binding_problem
    assert nccl.rank_offset == 0 and nccl.inference_world_size == 1  # still read, to judge
    nixl = init_record(call, "nixl")
    assert nixl.binding_problem is None and nixl.session_id == "default"


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ({"args": [HOST, PORT, 4]}, "missing required"),
        ({"args": [HOST, PORT, 4, 7, 30, False, "s", 2, "x"]}, "positional arguments"),
        ({"kwargs": {"rank_offset": 0, "host": HOST, "port": PORT, "inference_world_size": 1,
                     "timeout": 30, "gpus": 2}}, "unexpected keyword"),
    ],
)  # fmt: skip
def test_a_call_no_worker_takes_is_a_binding_problem_of_the_client(
    body: dict[str, Any], why: str
) -> None:
    call = _call("/collective_rpc", {"method": "init_broadcaster", **body})
    record = init_record(call, "nccl")
    assert record.binding_problem is not None and why in record.binding_problem
