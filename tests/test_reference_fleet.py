"""Reference fleet over real HTTP on loopback: the RL listener's answers, every fault as a client
sees it, the engines' system and admin servers, the request record, membership changes, the CLI.
"""

from __future__ import annotations

import gzip
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from prime_rl_dynamo import validate
from prime_rl_dynamo.resources import load_json
from prime_rl_dynamo.suite.reference import BREAKS, ReferenceFleet, start_reference_fleet
from prime_rl_dynamo.topology import topology_from_dict
from prime_rl_dynamo.variants import with_variants
from prime_rl_dynamo.wire import WorkerId

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def fleet() -> Iterator[ReferenceFleet]:
    with start_reference_fleet() as running:
        yield running


@pytest.fixture
def clean(fleet: ReferenceFleet) -> Iterator[ReferenceFleet]:
    fleet.set_faults([])
    fleet.recorder.clear()
    yield fleet
    fleet.set_faults([])


def _get(url: str, **kwargs: Any) -> httpx.Response:
    return httpx.get(url, timeout=10, **kwargs)


def _error_schema_errors(body: Any) -> list[Any]:
    schema = load_json("rl-workers-error.v1.schema.json")
    return list(jsonschema.Draft202012Validator(schema).iter_errors(body))


# -- the listing -------------------------------------------------------------------------------


def test_default_fleet_lists_w16_and_validates(clean: ReferenceFleet) -> None:
    response = _get(clean.discovery_url)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    snapshot = validate.validate_body(response.content)
    assert snapshot.namespace == "dynamo"
    assert sorted(w.world_size or 0 for w in snapshot.workers) == [2, 2, 2, 2, 4, 4]
    assert sum(w.world_size or 0 for w in snapshot.workers) == 16 == clean.inference_world_size
    admin_urls = {w.admin_base_url for w in snapshot.workers}
    assert admin_urls == {e.admin_base_url for e in clean.engines}
    assert _get(clean.discovery_url).content == response.content  # HTTP-6: stable polls


def test_head_answers_like_get_without_a_body(clean: ReferenceFleet) -> None:
    get = _get(clean.discovery_url)
    head = httpx.head(clean.discovery_url, timeout=10)
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["content-type"] == get.headers["content-type"]
    assert head.headers["content-length"] == get.headers["content-length"]


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_other_methods_get_405_with_allow(clean: ReferenceFleet, method: str) -> None:
    response = httpx.request(method, clean.discovery_url, timeout=10)
    assert response.status_code == 405
    assert response.headers["allow"] == "GET,HEAD"
    assert response.content == b""


@pytest.mark.parametrize("path", ["/v1/rl/engine", "/", "/v1/rl/workers/1", "/v1/rl/workers/"])
def test_other_paths_get_404(clean: ReferenceFleet, path: str) -> None:
    response = _get(clean.frontend_url + path)
    assert response.status_code == 404
    assert response.content == b""


# -- faults over HTTP --------------------------------------------------------------------------


def test_latency(clean: ReferenceFleet) -> None:
    # The first request waits the fault's 1.5 s, the second does not: compared with each other
    # (the same request on the same loaded machine), not with a wall-clock bound of their own.
    clean.set_faults(["latency=1500:1"])
    started = time.monotonic()
    assert _get(clean.discovery_url).status_code == 200
    delayed = time.monotonic() - started
    assert delayed >= 1.5
    started = time.monotonic()
    assert _get(clean.discovery_url).status_code == 200
    assert time.monotonic() - started < delayed - 1.0


def test_discovery_failed(clean: ReferenceFleet) -> None:
    clean.set_faults(["discovery-failed"])
    response = _get(clean.discovery_url)
    assert response.status_code == 500
    assert response.json()["error"] == "discovery_failed"
    assert _error_schema_errors(response.json()) == []


def test_rate_limit_for_the_first_requests_then_recovery(clean: ReferenceFleet) -> None:
    clean.set_faults(["rate-limit=2:2"])
    first, second, third = (_get(clean.discovery_url) for _ in range(3))
    assert [first.status_code, second.status_code, third.status_code] == [429, 429, 200]
    assert first.headers["retry-after"] == "2"


def test_unavailable(clean: ReferenceFleet) -> None:
    clean.set_faults(["unavailable:1"])
    assert _get(clean.discovery_url).status_code == 503
    assert _get(clean.discovery_url).status_code == 200


def test_reset_closes_without_answer(clean: ReferenceFleet) -> None:
    clean.set_faults(["reset:1"])
    with pytest.raises(httpx.TransportError):
        _get(clean.discovery_url)
    assert _get(clean.discovery_url).status_code == 200
    assert [r.status for r in clean.recorder.requests(server="frontend")] == [0, 200]


def test_truncate_is_an_incomplete_body(clean: ReferenceFleet) -> None:
    clean.set_faults(["truncate"])
    with pytest.raises(httpx.RemoteProtocolError):
        _get(clean.discovery_url)


def test_malformed_json(clean: ReferenceFleet) -> None:
    clean.set_faults(["malformed-json"])
    response = _get(clean.discovery_url)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    with pytest.raises(json.JSONDecodeError):
        json.loads(response.content)


@pytest.mark.parametrize("requirement", sorted(BREAKS))
def test_break_over_http_is_reported_as_exactly_that_requirement(
    clean: ReferenceFleet, requirement: str
) -> None:
    clean.set_faults([f"break={requirement}"])
    response = _get(clean.discovery_url)
    if requirement == "HTTP-5":
        assert response.status_code == 500
        assert _error_schema_errors(response.json())
        return
    assert response.status_code == 200
    found = {v.requirement for v in validate.check_body(response.content)}
    assert found == with_variants(requirement)


def test_error_workers_are_listed_with_an_error_and_stay_the_same(clean: ReferenceFleet) -> None:
    clean.set_faults(["error-workers=2"])
    first = _get(clean.discovery_url)
    snapshot = validate.validate_body(first.content)
    errored = [w for w in snapshot.workers if w.error is not None]
    assert len(errored) == 2
    assert all(w.routes == () and w.admin_base_url is None for w in errored)
    assert _get(clean.discovery_url).content == first.content


def test_churn_changes_membership_over_time(clean: ReferenceFleet) -> None:
    clean.set_faults(["churn=1"])
    # The first period (from set_faults) lists the fleet as is; the next one changes it.
    first = validate.validate_body(_get(clean.discovery_url).content)
    assert (len(first.workers), sum(w.world_size or 0 for w in first.workers)) == (6, 16)
    seen: set[tuple[int, int]] = {(6, 16)}
    deadline = time.monotonic() + 5
    while len(seen) < 2 and time.monotonic() < deadline:
        snapshot = validate.validate_body(_get(clean.discovery_url).content)
        seen.add((len(snapshot.workers), sum(w.world_size or 0 for w in snapshot.workers)))
    assert len(seen) >= 2, f"membership never changed within 5 s: {seen}"


def test_gzip(clean: ReferenceFleet) -> None:
    clean.set_faults(["gzip"])
    with httpx.stream("GET", clean.discovery_url, timeout=10) as response:
        raw = b"".join(response.iter_raw())
    assert response.headers["content-encoding"] == "gzip"
    assert raw[:2] == b"\x1f\x8b"
    assert validate.check_body(gzip.decompress(raw)) == []


def test_oversized_stays_valid(clean: ReferenceFleet) -> None:
    clean.set_faults(["oversized=100000"])
    response = _get(clean.discovery_url)
    assert len(response.content) > 100_000
    assert validate.check_body(response.content) == []


def test_slow_dribbles_the_body(clean: ReferenceFleet) -> None:
    clean.set_faults(["slow=5000"])
    started = time.monotonic()
    response = _get(clean.discovery_url)
    elapsed = time.monotonic() - started
    assert validate.check_body(response.content) == []
    # About 2.4 kB at 5 kB/s: at least a third of a second.
    assert elapsed >= len(response.content) / 5000 * 0.7


def test_faults_compose_in_a_stable_order(clean: ReferenceFleet) -> None:
    clean.set_faults(["unavailable:1", "gzip", "error-workers=1"])
    assert _get(clean.discovery_url).status_code == 503
    response = _get(clean.discovery_url)
    assert response.headers["content-encoding"] == "gzip"
    assert sum(1 for w in response.json()["workers"] if "error" in w) == 1


# -- engines: system and admin servers, the record ---------------------------------------------


def test_recorder_captures_admin_calls_with_headers_and_body(clean: ReferenceFleet) -> None:
    engine = clean.engines[0]
    body = {
        "host": "127.0.0.1",
        "port": 29500,
        "rank_offset": 0,
        "inference_world_size": 16,
        "engine_world_size": 2,
        "timeout": 60,
        "quantize_in_weight_transfer": False,
    }
    response = httpx.post(
        engine.admin_base_url.rstrip("/") + "/init_broadcaster",
        json=body,
        headers={"Authorization": "Bearer s3cret", "X-Team": "rl"},
        timeout=10,
    )
    assert response.json() == {"status": "ok"}
    (record,) = clean.recorder.requests(engine=engine.key, server="admin")
    assert record.path == "/init_broadcaster"
    assert record.method == "POST"
    assert record.json == body
    assert record.headers["authorization"] == "Bearer s3cret"
    assert record.headers["x-team"] == "rl"
    assert record.host == "127.0.0.1"
    assert record.status == 200
    assert engine.broadcaster == body


def test_admin_api_answers_every_operation(clean: ReferenceFleet) -> None:
    engine = clean.engines[-1]
    base = engine.admin_base_url.rstrip("/")
    assert httpx.get(base + "/health", timeout=10).json() == {"status": "ok"}
    paused = httpx.post(base + "/pause", params={"mode": "keep", "clear_cache": "false"})
    assert paused.json() == {"status": "ok"} and engine.paused
    assert httpx.post(base + "/update_weights", json={"weight_dir": "/ckpt/step_3"}).json() == {
        "status": "ok"
    }
    assert httpx.post(base + "/resume").json() == {"status": "ok"} and not engine.paused
    rpc = httpx.post(
        base + "/collective_rpc",
        json={
            "method": "init_weight_transfer_engine",
            "args": [],
            "kwargs": {
                "init_info": {
                    "master_address": "127.0.0.1",
                    "master_port": 29500,
                    "rank_offset": 13,
                    "world_size": 17,
                }
            },
        },
    )
    assert rpc.json() == {"results": [None] * engine.world_size}
    bad = httpx.post(base + "/init_broadcaster", json={"host": "h"})
    assert bad.status_code == 400 and bad.json()["status"] == "error"
    paths = [r.path for r in clean.recorder.requests(engine=engine.key, server="admin")]
    assert paths == [
        "/health",
        "/pause",
        "/update_weights",
        "/resume",
        "/collective_rpc",
        "/init_broadcaster",
    ]
    assert clean.recorder.requests(engine=engine.key, path="/pause")[0].query == (
        "mode=keep&clear_cache=false"
    )


def test_system_server_health_and_engine_routes(clean: ReferenceFleet) -> None:
    engine = clean.engines[0]
    health = httpx.get(engine.system_url + "/health", timeout=10)
    assert health.status_code == 200 and isinstance(health.json(), dict)
    for route in engine.spec.routes:
        reply = httpx.post(f"{engine.system_url}/engine/{route}", json={}, timeout=10)
        assert reply.status_code == 200
        assert reply.headers["content-type"] == "application/json"
        assert isinstance(reply.json(), dict)
    assert httpx.post(engine.system_url + "/engine/nope", json={}).status_code == 404
    servers = {r.server for r in clean.recorder.requests(engine=engine.key)}
    assert servers == {"system"}


def test_admin_faults_from_the_topology() -> None:
    topo = topology_from_dict(
        {
            "engines": [
                {
                    "component": "decode",
                    "world_size": 4,
                    "faults": {"admin_fail": ["update_weights"], "admin_latency_ms": 200},
                }
            ]
        }
    )
    with start_reference_fleet(topo) as fleet:
        base = fleet.engines[0].admin_base_url.rstrip("/")
        started = time.monotonic()
        failed = httpx.post(base + "/update_weights", json={"weight_dir": None}, timeout=10)
        assert time.monotonic() - started >= 0.2
        assert failed.status_code == 500
        assert failed.json()["status"] == "error"
        assert "update_weights" in failed.json()["message"]
        assert httpx.post(base + "/resume", timeout=10).status_code == 200


def test_admin_host_localhost_reaches_loopback_and_is_recorded() -> None:
    topo = topology_from_dict(
        {
            "engines": [
                {"component": "prefill", "world_size": 2},
                {"component": "decode", "world_size": 2, "admin_host": "localhost"},
            ]
        }
    )
    with start_reference_fleet(topo) as fleet:
        snapshot = validate.validate_body(_get(fleet.discovery_url).content)
        hosts = {w.component: httpx.URL(w.admin_base_url or "").host for w in snapshot.workers}
        assert hosts == {"prefill": "127.0.0.1", "decode": "localhost"}
        decode = fleet.engine("dynamo.decode#0")
        assert (
            httpx.get(decode.admin_base_url.rstrip("/") + "/health", timeout=10).status_code == 200
        )
        assert fleet.recorder.requests(engine=decode.key)[0].host == "localhost"


def test_kill_and_restart(clean: ReferenceFleet) -> None:
    engine = clean.engines[1]
    clean.kill(engine.key)
    try:
        with pytest.raises(httpx.ConnectError):
            httpx.get(engine.admin_base_url.rstrip("/") + "/health", timeout=5)
        listed = {
            w.label: w for w in validate.validate_body(_get(clean.discovery_url).content).workers
        }
        dead = [w for w in listed.values() if w.error is not None]
        assert [w.error for w in dead] == [
            f"Unavailable: TCP connection to 127.0.0.1:{engine.port} failed"
        ]
    finally:
        clean.restart(engine.key)
    assert httpx.get(engine.admin_base_url.rstrip("/") + "/health", timeout=5).status_code == 200
    snapshot = validate.validate_body(_get(clean.discovery_url).content)
    assert all(w.error is None for w in snapshot.workers)


def test_remove_add_resize(clean: ReferenceFleet) -> None:
    key = clean.engines[0].key
    try:
        clean.remove(key)
        assert len(validate.validate_body(_get(clean.discovery_url).content).workers) == 5
        clean.join(key)
        assert clean.resize(key, 6).world_size == 6
        snapshot = validate.validate_body(_get(clean.discovery_url).content)
        assert sum(w.world_size or 0 for w in snapshot.workers) == 20
    finally:
        clean.resize(key, 2)
        clean.join(key)


def test_schedule_joins_an_engine_that_started_absent() -> None:
    topo = topology_from_dict(
        {
            "engines": [
                {"component": "prefill", "world_size": 2},
                {"component": "late", "world_size": 2, "present": False},
            ],
            "schedule": [
                {"at": 0, "action": "join", "engine": "dynamo.late#0"},
                {"at": 3600, "action": "leave", "engine": "dynamo.prefill#0"},
            ],
        }
    )
    with start_reference_fleet(topo) as fleet:
        snapshot = validate.validate_body(_get(fleet.discovery_url).content)
        assert sorted(w.component for w in snapshot.workers) == ["late", "prefill"]


def test_dead_engine_from_the_topology_refuses_connections() -> None:
    topo = topology_from_dict(
        {
            "engines": [
                {"component": "prefill", "world_size": 2},
                {"component": "gone", "world_size": 2, "faults": {"dead": True}},
            ]
        }
    )
    with start_reference_fleet(topo) as fleet:
        gone = fleet.engine("dynamo.gone#0")
        with pytest.raises(httpx.ConnectError):
            httpx.get(gone.admin_base_url.rstrip("/") + "/health", timeout=5)
        workers = validate.validate_body(_get(fleet.discovery_url).content).workers
        assert [w.error for w in workers if w.component == "gone"] == [
            f"Unavailable: TCP connection to 127.0.0.1:{gone.port} failed"
        ]


def test_seed_changes_instance_ids_deterministically() -> None:
    with start_reference_fleet(seed=5) as one, start_reference_fleet(seed=5) as two:
        ids_one = [w["instance_id"] for w in _get(one.discovery_url).json()["workers"]]
        ids_two = [w["instance_id"] for w in _get(two.discovery_url).json()["workers"]]
    assert ids_one == ids_two
    with start_reference_fleet(seed=6) as three:
        assert [w["instance_id"] for w in _get(three.discovery_url).json()["workers"]] != ids_one


# -- the CLI -----------------------------------------------------------------------------------


def test_serve_prints_addresses_and_exits_cleanly_on_ctrl_c() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "prime_rl_dynamo.cli", "serve", "--port", "0", "--fault", "gzip"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        lines: list[str] = []
        deadline = time.monotonic() + 20
        assert process.stdout is not None
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("serving"):
                break
        fields = dict(line.split(None, 1) for line in lines if line[:1].isalpha())
        assert fields["W"].strip() == "16"
        assert sum(1 for line in lines if line.startswith("engine ")) == 6
        response = _get(fields["discovery"].strip())
        assert response.headers["content-encoding"] == "gzip"
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=15) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=5)


def test_scheduled_kill_closes_the_port() -> None:
    topo = topology_from_dict(
        {
            "engines": [{"component": "prefill", "count": 2, "world_size": 2}],
            "schedule": [{"at": 0, "action": "kill", "engine": "dynamo.prefill#1"}],
        }
    )
    with start_reference_fleet(topo) as fleet:
        victim = fleet.engine("dynamo.prefill#1")
        workers = validate.validate_body(_get(fleet.discovery_url).content).workers
        assert [w.error is not None for w in workers].count(True) == 1
        refused = False
        deadline = time.monotonic() + 5
        while not refused and time.monotonic() < deadline:
            try:
                httpx.get(victim.admin_base_url.rstrip("/") + "/health", timeout=2)
            except httpx.TransportError:
                refused = True
        assert refused, "the killed engine's port still answered after 5 s"
        assert not victim.alive


def test_add_starts_new_engines_on_new_ports() -> None:
    with start_reference_fleet() as fleet:
        (added,) = fleet.add("extra", world_size=3)
        assert added.key == "dynamo.extra#0"
        assert httpx.get(added.admin_base_url.rstrip("/") + "/health", timeout=5).json() == {
            "status": "ok"
        }
        body = fleet.wait_ready(7)
        assert sum(w["world_size"] for w in body["workers"]) == 19
        assert added.identity in {WorkerId.from_entry(w) for w in fleet.listing()["workers"]}
        assert [r.engine for r in fleet.recorder.requests(server="admin")] == [added.key]


def test_topology_file_faults_and_jsonl_record(tmp_path: Path) -> None:
    from prime_rl_dynamo.suite.recording import Recorder

    topology = tmp_path / "fleet.yaml"
    topology.write_text(
        "version: 1\n"
        "seed: 4\n"
        'faults: ["unavailable:1", "error-workers=1"]\n'
        "engines:\n"
        "  - {component: prefill, count: 2, world_size: 2}\n"
        "  - {component: decode, world_size: 4, admin: false}\n",
        encoding="utf-8",
    )
    mirror = tmp_path / "requests.jsonl"
    with start_reference_fleet(topology, recorder=Recorder(path=mirror)) as fleet:
        assert _get(fleet.discovery_url).status_code == 503
        workers = _get(fleet.discovery_url).json()["workers"]
        assert sum(1 for w in workers if "error" in w) == 1
        decode = next(w for w in workers if w["component"] == "decode")
        assert "admin_base_url" not in decode or "error" in decode
    replayed = Recorder.load_jsonl([mirror]).requests(server="frontend")
    assert [r.status for r in replayed] == [503, 200]
