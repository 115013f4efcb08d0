"""The drop-in Prime-RL pool: its protocol, Prime-RL's config fields, and every weight-transfer
path driven against the reference fleet's admin servers over real HTTP (recorded calls judged)."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from prime_rl_dynamo.errors import (
    AdminError,
    ConfigError,
    NotReadyError,
    PrimeRLDynamoError,
    TopologyChangedError,
    TopologyError,
)
from prime_rl_dynamo.prime_rl import (
    PRIME_RL_SURFACE,
    DynamoInferencePool,
    InferencePool,
    client_config_from_prime_rl,
)
from tests._client_support import pool_of

MODEL = "Qwen/Qwen3-0.6B"
KEY = "sk-pool-123"
ENV = {"POOL_KEY": KEY, "TEAM_TOKEN": "team-abc"}
#: The canonical example: world sizes [2, 4, 1] in canonical order, W = 7.
HETERO: dict[str, Any] = {
    "version": 1,
    "namespace": "dynamo",
    "model": MODEL,
    "seed": 5,
    "engines": [
        {"component": "engine-a", "world_size": 2},
        {"component": "engine-b", "world_size": 4},
        {"component": "engine-c", "world_size": 1},
    ],
}


def prime_client(url: str, **fields: Any) -> SimpleNamespace:
    """A stand-in for Prime-RL's latest ClientConfig: only the fields the pool reads."""
    values: dict[str, Any] = {
        # The field the patch of docs/prime-rl/ adds; these tests drive Prime's broadcaster.
        "dynamo": SimpleNamespace(discovery_url=url, nccl_convention="prime-nccl"),
        "api_key_var": "POOL_KEY",
        "headers": {"X-Static": "static-v"},
        "headers_from_env": {"X-Team": "TEAM_TOKEN"},
        "wait_for_ready_timeout": 20.0,
    }
    values.update(fields)
    return SimpleNamespace(**values)


# --- the protocol -------------------------------------------------------------------------------


def _members(cls: type) -> dict[str, Any]:
    return {
        name: value
        for name, value in vars(cls).items()
        if not name.startswith("_") and (callable(value) or isinstance(value, property))
    }


#: What Prime-RL's orchestrator reads on the pool at 73164c322, written down here independently of
#: the module's PRIME_RL_SURFACE (which also names the source lines): both must agree.
PRIME_RL_READS = {
    "model_name",
    "train_client",
    "eval_client",
    "admin_clients",
    "update_model_name",
    "wait_for_ready",
    "init_nccl_broadcast",
    "init_nixl_broadcast",
    "update_weights",
    "score",
    "stop",
}


def test_the_surface_list_is_prime_rls_and_names_its_source_lines() -> None:
    assert set(PRIME_RL_SURFACE) == PRIME_RL_READS
    for name, lines in PRIME_RL_SURFACE.items():
        assert lines, name
        for line in lines:
            path, _, number = line.rpartition(":")
            assert path.startswith("src/prime_rl/") and path.endswith(".py"), line
            assert number.isdigit(), line


def test_the_pool_has_exactly_the_protocols_surface_with_the_same_signatures() -> None:
    wanted = _members(InferencePool)
    assert set(wanted) == set(PRIME_RL_SURFACE)
    for name in PRIME_RL_SURFACE:
        assert hasattr(DynamoInferencePool, name), name
    for name, member in wanted.items():
        mine = inspect.getattr_static(DynamoInferencePool, name)
        if isinstance(member, property):
            assert isinstance(mine, property), name
            continue
        assert inspect.iscoroutinefunction(mine) == inspect.iscoroutinefunction(member), name
        theirs = inspect.signature(member)
        ours = inspect.signature(mine)
        assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == [
            (p.name, p.kind, p.default) for p in theirs.parameters.values()
        ], name
        assert ours.return_annotation == theirs.return_annotation, name
    # Prime-RL's from_config(client_config, model_name, inference_world_size=..., **kwargs).
    params = inspect.signature(DynamoInferencePool.from_config).parameters
    assert list(params)[:3] == ["client_config", "model_name", "inference_world_size"]
    assert inspect.iscoroutinefunction(DynamoInferencePool.from_config)


def test_a_class_missing_one_member_does_not_satisfy_the_protocol() -> None:
    class Partial:
        admin_clients: list[Any] = []

        def update_model_name(self, model_name: str) -> None: ...

    assert not isinstance(Partial(), InferencePool)


# --- Prime-RL's config fields ------------------------------------------------------------------


def test_latest_and_older_discovery_url_fields_map_and_disagreement_is_refused() -> None:
    latest = client_config_from_prime_rl(
        prime_client("http://f:8001/v1"), model_name=MODEL, inference_world_size=4
    )
    assert latest.dynamo_discovery_url == "http://f:8001/v1"
    older = SimpleNamespace(dynamo_discovery_url="http://g:8001", wait_for_ready_timeout=30)
    cfg = client_config_from_prime_rl(
        older, weight_broadcast=SimpleNamespace(type="nixl", inference_world_size=3)
    )
    assert (cfg.dynamo_discovery_url, cfg.inference_world_size, cfg.weight_broadcast) == (
        "http://g:8001",
        3,
        "nixl",
    )
    assert cfg.discovery_timeout == 30 and cfg.api_key_var == "VLLM_API_KEY"
    both = SimpleNamespace(
        dynamo=SimpleNamespace(discovery_url="http://a:8001"), dynamo_discovery_url="http://b:8001"
    )
    with pytest.raises(ConfigError, match="disagree"):
        client_config_from_prime_rl(both, inference_world_size=1)
    with pytest.raises(ConfigError, match=r"client\.dynamo\.discovery_url"):
        client_config_from_prime_rl(SimpleNamespace(), inference_world_size=1)


def test_world_size_is_required_and_never_guessed() -> None:
    with pytest.raises(ConfigError) as info:
        client_config_from_prime_rl(prime_client("http://f:8001"))
    assert info.value.requirement == "RANK-2"
    assert "weight_broadcast.inference_world_size" in str(info.value)


def test_credentials_follow_prime_rls_fields_and_the_empty_key_convention() -> None:
    cfg = client_config_from_prime_rl(prime_client("http://f:8001"), inference_world_size=1)
    headers = cfg.credentials(ENV).resolve(ENV)
    assert headers == {
        "X-Static": "static-v",
        "X-Team": "team-abc",
        "Authorization": f"Bearer {KEY}",
    }
    empty = cfg.credentials({**ENV, "POOL_KEY": "EMPTY"}).resolve({**ENV, "POOL_KEY": "EMPTY"})
    assert "Authorization" not in empty
    with pytest.raises(ConfigError, match=r"CRED-2.*X-Team <- \$TEAM_TOKEN"):
        cfg.credentials({}).resolve({})


def test_bad_fields_are_config_errors_naming_the_field() -> None:
    with pytest.raises(ConfigError, match=r"client\.headers must map"):
        client_config_from_prime_rl(
            prime_client("http://f:8001", headers=["X: y"]), inference_world_size=1
        )
    with pytest.raises(ConfigError, match=r"weight_broadcast\.type"):
        client_config_from_prime_rl(
            prime_client("http://f:8001"),
            weight_broadcast=SimpleNamespace(type="carrier-pigeon", inference_world_size=1),
        )
    with pytest.raises(ConfigError, match="the settings are"):
        client_config_from_prime_rl(
            prime_client("http://f:8001"), inference_world_size=1, no_such_knob=1
        )


def test_every_error_is_in_the_packages_tree() -> None:
    for cls in (ConfigError, TopologyError, AdminError, NotReadyError, TopologyChangedError):
        assert issubclass(cls, PrimeRLDynamoError)


# --- against the reference fleet over real HTTP ------------------------------------------------


@pytest.fixture
def hetero() -> Iterator[Any]:
    from prime_rl_dynamo.suite.reference import start_reference_fleet
    from prime_rl_dynamo.topology import topology_from_dict

    with start_reference_fleet(topology_from_dict(HETERO)) as fleet:
        fleet.wait_ready()
        yield fleet


def _fleet(data: dict[str, Any]) -> Any:
    from prime_rl_dynamo.suite.reference import start_reference_fleet
    from prime_rl_dynamo.topology import topology_from_dict

    return start_reference_fleet(topology_from_dict(data))


@contextmanager
def _driven(data: dict[str, Any], main: Callable[[Any], Awaitable[Any]]) -> Iterator[Any]:
    """A ready reference fleet of ``data`` once ``main(fleet)`` has run: (fleet, its result)."""
    with _fleet(data) as fleet:
        fleet.wait_ready()
        yield fleet, asyncio.run(main(fleet))


def _pool(
    fleet: Any, world: int = 7, **kwargs: Any
) -> contextlib.AbstractAsyncContextManager[DynamoInferencePool]:
    kwargs.setdefault("environ", ENV)
    return pool_of(prime_client(fleet.frontend_url), MODEL, world, **kwargs)


def _offsets(fleet: Any, path: str) -> list[tuple[str, Any]]:
    """(engine key, recorded body) of every admin call to ``path``, sorted by engine key."""
    calls = fleet.recorder.requests(server="admin", path=path)
    return sorted((r.engine, r.json) for r in calls)


def _ops(fleet: Any, engine: str) -> list[str]:
    return [r.path for r in fleet.recorder.requests(server="admin", engine=engine)]


@pytest.mark.integration
def test_prime_rl_start_up_order_with_prime_nccl(hetero: Any, tmp_path: Path) -> None:
    async def main() -> DynamoInferencePool:
        async with _pool(hetero) as pool:
            await pool.wait_for_ready(MODEL)
            await pool.init_nccl_broadcast("127.0.0.1", 29501, 60.0, 7)
            await pool.update_weights(tmp_path, step=1)
        return pool

    pool = asyncio.run(main())
    inits = _offsets(hetero, "/init_broadcaster")
    # Canonical order engine-a, engine-b, engine-c: offsets [0, 2, 6], never the even [0, 2, 4].
    assert [(body["rank_offset"], body["engine_world_size"]) for _, body in inits] == [
        (0, 2),
        (2, 4),
        (6, 1),
    ]
    assert {(b["host"], b["port"], b["inference_world_size"], b["timeout"]) for _, b in inits} == {
        ("127.0.0.1", 29501, 7, 60.0)
    }
    assert pool.plan.rank_offsets == [0, 2, 6]
    for engine in hetero.engines:
        # health (wait_for_ready), init, then pause -> update_weights -> resume.
        assert _ops(hetero, engine.key) == [
            "/health",
            "/init_broadcaster",
            "/pause",
            "/update_weights",
            "/resume",
        ]
    updates = _offsets(hetero, "/update_weights")
    assert {b["weight_dir"] for _, b in updates} == {str(tmp_path)}
    assert (tmp_path / "NCCL_READY").exists()
    for call in hetero.recorder.requests(server="admin"):
        assert call.headers.get("authorization") == f"Bearer {KEY}", call.path
        assert (
            call.headers.get("x-static") == "static-v" and call.headers.get("x-team") == "team-abc"
        )
    assert all(client.is_closed for client in pool.admin_clients)


@pytest.mark.integration
def test_nixl_and_vllm_native_send_their_own_wire_forms(hetero: Any) -> None:
    async def main() -> None:
        async with _pool(
            hetero, nccl_convention="vllm-native-nccl", native_nccl_owner="orchestrator"
        ) as pool:
            await pool.init_nixl_broadcast("10.0.0.1", 5555, 30.0, 7, "session-x")
            await pool.init_nccl_broadcast("127.0.0.1", 29502, 30.0)

    asyncio.run(main())
    nixl = _offsets(hetero, "/init_broadcaster")
    assert [(b["rank_offset"], b["session_id"]) for _, b in nixl] == [
        (0, "session-x"),
        (2, "session-x"),
        (6, "session-x"),
    ]
    native = _offsets(hetero, "/collective_rpc")
    assert {b["method"] for _, b in native} == {"init_weight_transfer_engine"}
    infos = [b["kwargs"]["init_info"] for _, b in native]
    # vLLM native: offsets from 1, the group is 1 + W.
    assert [(i["rank_offset"], i["world_size"]) for i in infos] == [(1, 8), (3, 8), (7, 8)]
    assert {(i["master_address"], i["master_port"]) for i in infos} == {("127.0.0.1", 29502)}


@pytest.mark.integration
def test_a_failed_update_still_resumes_every_engine() -> None:
    data = {**HETERO, "engines": [dict(g) for g in HETERO["engines"]]}
    data["engines"][1]["faults"] = {"admin_fail": ["update_weights"]}

    async def main(fleet: Any) -> None:
        async with _pool(fleet) as pool:
            await pool.init_nixl_broadcast("127.0.0.1", 5555, 30.0, 7, "s")
            with pytest.raises(AdminError) as info:
                await pool.update_weights(None, step=3)
            assert "engine-b" in str(info.value) and "resumed: 3 ok" in str(info.value)
            assert pool.weight_step is None

    with _driven(data, main) as (fleet, _):
        for engine in fleet.engines:
            ops = _ops(fleet, engine.key)
            assert ops[-3:] == ["/pause", "/update_weights", "/resume"], (engine.key, ops)
            assert engine.paused is False


@pytest.mark.integration
def test_credentials_only_to_allowed_hosts(caplog: pytest.LogCaptureFixture) -> None:
    data = {**HETERO, "engines": [dict(g) for g in HETERO["engines"]]}
    data["engines"][2]["admin_host"] = "localhost"

    caplog.set_level("INFO", logger="prime_rl_dynamo.prime_rl")

    async def main(fleet: Any) -> None:
        async with _pool(fleet, admin_allowed_hosts=["127.0.0.1"]) as pool:
            await pool.init_nccl_broadcast("127.0.0.1", 29503, 30.0, 7)

    with _driven(data, main) as (fleet, _):
        calls = fleet.recorder.requests(server="admin")
        assert calls
        for call in calls:
            got = call.headers.get("authorization")
            if call.host == "localhost":
                assert got is None and "x-team" not in call.headers, call.engine
            else:
                assert got == f"Bearer {KEY}", call.engine
        assert {c.host for c in calls} == {"127.0.0.1", "localhost"}
    warned = [
        r.getMessage()
        for r in caplog.records
        if r.levelname == "WARNING" and r.name == "prime_rl_dynamo.prime_rl"
    ]
    assert len(warned) == 1 and "dynamo.engine-c.rl#" in warned[0] and "(localhost)" in warned[0]
    assert "ready after" in caplog.text and "offsets [0, 2, 6]" in caplog.text
    assert KEY not in caplog.text and "team-abc" not in caplog.text

    with _fleet(data) as fleet, pytest.raises(ConfigError) as info:
        fleet.wait_ready()

        async def refused() -> None:
            async with _pool(fleet, admin_allowed_hosts=["127.0.0.1"], disallowed="refuse"):
                pass

        asyncio.run(refused())
    assert info.value.requirement == "CRED-3"


@pytest.mark.integration
def test_a_wrong_world_size_is_refused_before_any_admin_call(hetero: Any) -> None:
    cfg = prime_client(hetero.frontend_url, wait_for_ready_timeout=1.0)
    with pytest.raises(NotReadyError, match="READY-3: world sizes sum to 7, expected"):
        asyncio.run(
            DynamoInferencePool.from_config(
                cfg, MODEL, inference_world_size=8, environ=ENV, poll_interval=0.05
            )
        )

    async def main() -> None:
        async with _pool(hetero) as pool:
            with pytest.raises(TopologyError, match="RANK-2"):
                await pool.init_nccl_broadcast("127.0.0.1", 29504, 30.0, 6)

    asyncio.run(main())
    assert hetero.recorder.requests(server="admin") == []


@pytest.mark.integration
def test_a_resized_fleet_stops_the_update_before_any_pause(hetero: Any) -> None:
    async def main() -> None:
        async with _pool(hetero) as pool:
            await pool.init_nccl_broadcast("127.0.0.1", 29505, 30.0, 7)
            hetero.resize("dynamo.engine-b#0", 2)
            with pytest.raises(TopologyChangedError) as info:
                await pool.update_weights(None)
            assert "world_size 4 -> 2" in str(info.value.diff)

    asyncio.run(main())
    assert hetero.recorder.requests(server="admin", path="/pause") == []


@pytest.mark.integration
def test_score_is_the_injected_data_planes_and_says_what_to_inject(hetero: Any) -> None:
    class DataPlane:
        def __init__(self) -> None:
            self.stopped = False
            self.names: list[str] = []

        async def score(self, token_ids: Any) -> Any:
            return [[-0.5] * len(t) for t in token_ids]

        def update_model_name(self, model_name: str) -> None:
            self.names.append(model_name)

        async def stop(self) -> None:
            self.stopped = True

        # What Prime-RL's own InferencePool builds (vf client configs); the dispatcher pins these.
        train_client = {"client_type": "renderer", "base_url": "http://frontend:8000/v1"}
        eval_client = {"client_type": "openai_chat_completions"}

    plane = DataPlane()

    async def main() -> None:
        async with _pool(hetero) as bare:
            with pytest.raises(ConfigError, match="data_plane=<an object with async score"):
                await bare.score([[1, 2]])
            # Without the data plane the surface is incomplete, and says so (AttributeError too).
            assert not isinstance(bare, InferencePool)
            with pytest.raises(AttributeError, match="train_client is the data plane's"):
                _ = bare.train_client
        async with _pool(hetero, data_plane=plane) as pool:
            assert isinstance(pool, InferencePool)
            # The dispatcher's reads: group.pinned_client = pool.eval_client / pool.train_client.
            assert pool.train_client is DataPlane.train_client
            assert pool.eval_client is DataPlane.eval_client
            assert pool.model_name == MODEL
            assert await pool.score([[1, 2, 3]]) == [[-0.5, -0.5, -0.5]]
            pool.update_model_name("my-lora")
            assert pool.model_name == "my-lora"
            await pool.wait_for_ready("my-lora")
            with pytest.raises(ConfigError, match="READY-5"):
                await pool.wait_for_ready("another/model")
            await pool.stop()
            await pool.stop()  # idempotent
            with pytest.raises(ConfigError, match="stopped"):
                await pool.update_weights(None)

    asyncio.run(main())
    assert plane.stopped and plane.names == ["my-lora"]


@pytest.mark.integration
def test_vllm_admin_api_sends_init_and_updates_through_collective_rpc(
    hetero: Any, tmp_path: Path
) -> None:
    async def main() -> None:
        async with _pool(hetero, admin_api="vllm") as pool:
            await pool.init_nccl_broadcast("127.0.0.1", 29506, 30.0, 7)
            await pool.update_weights(tmp_path, step=2)
            await pool.init_nixl_broadcast("127.0.0.1", 5556, 30.0, 7, "session-y")
            await pool.update_weights(None, step=3)

    asyncio.run(main())
    rpc = hetero.recorder.requests(server="admin", path="/collective_rpc")
    by_method: dict[str, list[Any]] = {}
    for call in sorted(rpc, key=lambda c: (c.engine, c.time)):
        by_method.setdefault(call.json["method"], []).append(call.json)
    inits = by_method["init_broadcaster"]
    # Per engine: the NCCL init then the NIXL init, the fields as keywords, offsets [0, 2, 6].
    assert [(b["kwargs"]["rank_offset"], b["kwargs"].get("session_id")) for b in inits] == [
        (0, None),
        (0, "session-y"),
        (2, None),
        (2, "session-y"),
        (6, None),
        (6, "session-y"),
    ]
    assert all(b["args"] == [] and b["kwargs"]["inference_world_size"] == 7 for b in inits)
    updates = by_method["update_weights_from_path"]
    assert [b["args"] for b in updates] == [[str(tmp_path)], [None]] * 3
    assert hetero.recorder.requests(server="admin", path="/init_broadcaster") == []
    assert hetero.recorder.requests(server="admin", path="/update_weights") == []
    for engine in hetero.engines:
        paths = _ops(hetero, engine.key)
        assert paths.count("/pause") == paths.count("/resume") == 2, paths


def test_an_unknown_admin_api_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="admin_api must be one of"):
        asyncio.run(
            DynamoInferencePool.from_config(
                None, MODEL, inference_world_size=1, discovery_url="http://x:1", admin_api="grpc"
            )
        )


def _refused_at_start(**kwargs: Any) -> ConfigError:
    """The ConfigError ``from_config`` raises for a client at http://frontend:8001."""
    with pytest.raises(ConfigError) as info:
        asyncio.run(
            DynamoInferencePool.from_config(prime_client("http://frontend:8001"), MODEL, **kwargs)
        )
    return info.value


def test_an_unset_header_variable_is_refused_before_any_request() -> None:
    import httpx

    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(500)

    error = _refused_at_start(
        inference_world_size=1,
        environ={"POOL_KEY": KEY},  # TEAM_TOKEN unset
        transport=httpx.MockTransport(handler),
    )
    assert error.requirement == "CRED-2" and "TEAM_TOKEN" in str(error)
    assert seen == []


def _mock_fleet(health: Any) -> tuple[Any, list[str]]:
    """A MockTransport: one engine of world size 2 listed; its /health answers ``health``."""
    import httpx
    from _client_support import body, worker

    listing = body(worker("engine", 1, 2, model=MODEL, admin="http://10.0.0.9:8000/admin"))
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.method} {request.url.path}")
        if request.url.path == "/v1/rl/workers":
            return httpx.Response(
                200, content=listing, headers={"content-type": "application/json"}
            )
        return health(request)

    return httpx.MockTransport(handler), seen


@pytest.mark.parametrize(
    ("status", "headers", "waits"),
    [
        (503, {}, True),
        (429, {}, True),
        (302, {"location": "http://elsewhere/"}, False),
        (401, {}, False),
    ],
)
def test_health_waits_out_only_what_can_heal(
    status: int, headers: dict[str, str], waits: bool
) -> None:
    import httpx

    transport, seen = _mock_fleet(
        lambda request: httpx.Response(
            status, headers=headers, json={"status": "error", "message": "no"}
        )
    )

    async def main() -> None:
        client = prime_client("http://frontend:8001")
        options = {"environ": ENV, "transport": transport, "poll_interval": 0.02}
        async with pool_of(client, MODEL, 2, **options) as pool:
            with pytest.raises(AdminError) as info:
                await pool.wait_for_ready(MODEL, timeout=0.3)
            assert info.value.requirement == "ADMIN-1"
            assert ("CRED-4" if status == 302 else f"HTTP {status}") in str(info.value)

    asyncio.run(main())
    health_calls = seen.count("GET /admin/health")
    assert (health_calls > 1) is waits, health_calls


@pytest.mark.integration
def test_admin_clients_work_for_prime_rls_own_calls() -> None:
    data = {**HETERO, "engines": [dict(g) for g in HETERO["engines"]]}
    data["engines"][0]["admin_host"] = "localhost"

    async def main(fleet: Any) -> list[str]:
        async with _pool(fleet, admin_allowed_hosts=["127.0.0.1"]) as pool:
            clients = pool.admin_clients
            assert len(clients) == 3 and clients == pool.admin_clients
            # Prime-RL's legacy helpers post absolute paths on each admin client.
            for client in clients:
                reply = await client.post("/resume")
                assert reply.status_code == 200 and reply.json() == {"status": "ok"}
            return [str(c.base_url) for c in clients]

    with _driven(data, main) as (fleet, bases):
        listed = sorted(
            (e.spec.component, e.admin_base_url) for e in fleet.engines if e.admin_base_url
        )
        assert bases == [url.rstrip("/") + "/" for _, url in listed]  # canonical order
        calls = sorted(
            fleet.recorder.requests(server="admin", path="/resume"), key=lambda c: c.engine
        )
        assert [c.engine.split("#")[0] for c in calls] == [
            "dynamo.engine-a",
            "dynamo.engine-b",
            "dynamo.engine-c",
        ]
        # engine-a advertises "localhost", outside the allow-list: its client carries nothing.
        assert [c.headers.get("authorization") for c in calls] == [
            None,
            f"Bearer {KEY}",
            f"Bearer {KEY}",
        ]


def test_vllm_native_with_a_multi_process_trainer_is_refused_before_discovery() -> None:
    error = _refused_at_start(
        inference_world_size=4,
        nccl_convention="vllm-native-nccl",
        trainer_world_size=2,
        environ=ENV,
    )
    assert error.requirement == "RANK-4"


@pytest.mark.integration
def test_bad_arguments_are_config_errors_before_any_admin_call(hetero: Any, tmp_path: Path) -> None:
    async def main() -> None:
        async with _pool(hetero) as pool:
            for host, port in (("", 29500), ("127.0.0.1", 0), ("127.0.0.1", True)):
                with pytest.raises(ConfigError):
                    await pool.init_nccl_broadcast(host, port, 30.0, 7)
            with pytest.raises(ConfigError, match="session_id"):
                await pool.init_nixl_broadcast("127.0.0.1", 5555, 30.0, 7, "")
            with pytest.raises(ConfigError, match="LoRA"):
                await pool.update_weights(tmp_path, lora_name="adapter")
            with pytest.raises(ConfigError, match="step"):
                await pool.update_weights(tmp_path, step=-1)
            with pytest.raises(ConfigError, match="needs a weight_dir"):
                await pool.update_weights(None, native_nccl=True)
            with pytest.raises(ConfigError, match="not a directory"):
                await pool.update_weights(tmp_path / "missing", native_nccl=True)

    asyncio.run(main())
    assert hetero.recorder.requests(server="admin") == []


@pytest.mark.integration
def test_concurrent_updates_do_not_interleave_their_pause_resume_cycles() -> None:
    data = {
        **HETERO,
        "engines": [{**g, "faults": {"admin_latency_ms": 30}} for g in HETERO["engines"]],
    }

    async def main(fleet: Any) -> None:
        async with _pool(fleet) as pool:
            await asyncio.gather(
                pool.update_weights(None, step=1), pool.update_weights(None, step=2)
            )

    with _driven(data, main) as (fleet, _):
        for engine in fleet.engines:
            assert _ops(fleet, engine.key) == ["/pause", "/update_weights", "/resume"] * 2


@pytest.mark.integration
def test_vllm_filesystem_updates_reload_weights_from_the_directory(
    hetero: Any, tmp_path: Path
) -> None:
    async def main() -> None:
        async with _pool(
            hetero,
            admin_api="vllm",
            weight_broadcast=SimpleNamespace(type="filesystem", inference_world_size=7),
        ) as pool:
            with pytest.raises(ConfigError, match="needs a weight_dir"):
                await pool.update_weights(None, step=1)
            await pool.update_weights(tmp_path, step=1)

    asyncio.run(main())
    rpc = _offsets(hetero, "/collective_rpc")
    assert [b for _, b in rpc] == [
        {"method": "reload_weights", "args": [], "kwargs": {"weights_path": str(tmp_path)}}
    ] * 3
    assert not (tmp_path / "NCCL_READY").exists()  # no NCCL broadcast: nobody waits for it
    assert len(hetero.recorder.requests(server="admin", path="/pause")) == 3


@pytest.mark.integration
def test_every_update_reverifies_the_topology_not_only_the_first(hetero: Any) -> None:
    """TOPO-1 before every update: a fleet resized between two steps stops the second update
    before any engine is paused (the first one went through)."""

    async def main() -> None:
        async with _pool(hetero) as pool:
            await pool.init_nixl_broadcast("127.0.0.1", 5556, 30.0, 7, "s")
            await pool.update_weights(None, step=1)
            assert pool.weight_step == 1
            hetero.resize("dynamo.engine-c#0", 2)
            with pytest.raises(TopologyChangedError) as info:
                await pool.update_weights(None, step=2)
            assert "world_size 1 -> 2" in str(info.value.diff)
            assert pool.weight_step == 1

    asyncio.run(main())
    pauses = hetero.recorder.requests(server="admin", path="/pause")
    assert len(pauses) == 3, [p.engine for p in pauses]  # one per engine, the first step only
