"""Prime-RL main's orchestrator, as recorded (prime_rl_main.MAIN_STARTUP and MAIN_RECEIVERS), driven
through the package's plane over real HTTP on the reference fleet [2, 4, 1] (W = 7), for every
transport main has, with main's own config objects (``ClientConfig`` with ``dynamo`` enabled only)
and main's trainer side of the four-stage handshake in a thread. Judged on what the engines
recorded: offsets 0, 2, 6, every rank claimed once, credentials on every admin call, ``on_paused``
once per step while every engine is paused and before any update."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from _prime_rl_support import ClientConfig, DynamoConfig

from conformance.client_scenarios import PINNED_TOPOLOGY
from prime_rl_dynamo.errors import AdminError, ConfigError, NotReadyError
from prime_rl_dynamo.prime_rl_main import (
    ADMIN_PLANE_SURFACE,
    MAIN_RECEIVERS,
    MAIN_STARTUP,
    WORKER_INIT_BROADCASTER,
    DynamoAdminPlane,
)

MODEL = PINNED_TOPOLOGY["model"]
KEY = "sk-main-9f2"
ENV = {"VLLM_API_KEY": KEY}
W = 7
RENDEZVOUS = {"host": "127.0.0.1", "port": 29531, "timeout": 60}
SESSION = "run-7c1"
#: base.py's four stages, as main's WeightSender raises them (the receiver raises the second).
SENDER_READY, RECEIVER_READY, STARTED, FINISHED = (
    ".sender_ready",
    ".receiver_ready",
    ".started",
    ".finished",
)


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Main reads the API key from the process environment (client.api_key_var)."""
    monkeypatch.setenv("VLLM_API_KEY", KEY)


@pytest.fixture()
def fleet() -> Iterator[Any]:
    from prime_rl_dynamo.suite.reference import start_reference_fleet
    from prime_rl_dynamo.topology import topology_from_dict

    with start_reference_fleet(topology_from_dict(PINNED_TOPOLOGY)) as running:
        running.wait_ready()
        yield running


def main_client(fleet: Any, **fields: Any) -> ClientConfig:
    """Main's ClientConfig as its users write it for Dynamo: base_url the frontend, dynamo on
    (the RL listener is the frontend's port + 1, as main's launcher sets DYN_RL_PORT)."""
    port = urlsplit(fleet.frontend_url).port
    assert port is not None
    return ClientConfig(base_url=f"http://127.0.0.1:{port - 1}/v1", dynamo=DynamoConfig(), **fields)


def _wait(path: Path, deadline: float) -> None:
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.01)


class Trainer(threading.Thread):
    """Main's WeightSender.broadcast for each step: reset the step directory, .sender_ready, wait
    for .receiver_ready, .started, the transfer (filesystem: the weights on disk), .finished."""

    def __init__(self, root: Path, steps: tuple[int, ...]) -> None:
        super().__init__(daemon=True)
        self.root, self.steps = root, steps
        self.done: list[int] = []

    def run(self) -> None:
        deadline = time.monotonic() + 30
        for step in self.steps:
            step_dir = self.root / f"step_{step}"
            shutil.rmtree(step_dir, ignore_errors=True)
            step_dir.mkdir(parents=True)
            (step_dir / SENDER_READY).touch()
            _wait(step_dir / RECEIVER_READY, deadline)
            (step_dir / STARTED).touch()
            (step_dir / "model.safetensors").write_bytes(b"w")
            (step_dir / FINISHED).touch()
            self.done.append(step)


async def init_nixl_broadcast(plane: Any, host: str, port: int, timeout: int, world: int) -> None:
    """Main's module function as the patch leaves it: the plane's own NIXL init when it has one."""
    assert hasattr(plane, "initialize_nixl")
    keywords = [name for name, _, _ in ADMIN_PLANE_SURFACE["initialize_nixl"].params or ()]
    values = dict(zip(keywords, (host, port, timeout, world, SESSION), strict=True))
    await plane.initialize_nixl(**values)


def run_main(fleet: Any, transport: str, root: Path, **plane_options: Any) -> dict[str, Any]:
    """Main's start-up, then two steps of the transport's receiver, then aclose; returns what the
    orchestrator side observed (every on_paused call, with the engines' state at that moment)."""
    receiver = MAIN_RECEIVERS[transport]
    steps = (1, 2)
    trainer = Trainer(root, steps)
    seen: dict[str, Any] = {"on_paused": [], "calls": []}

    def updates_so_far() -> int:
        return sum(1 for r in fleet.recorder.requests() if _is_update(r))

    async def orchestrator() -> None:
        plane = None
        for call in MAIN_STARTUP:
            seen["calls"].append(call)
            if call == "setup_admin_plane":
                # What the patched setup_admin_plane returns for client.dynamo.enabled, built as
                # it builds it (the API key from the process environment, as main reads it).
                plane = DynamoAdminPlane(main_client(fleet), MODEL, **plane_options)
            else:
                assert plane is not None
                await getattr(plane, call)(MODEL)
        assert plane is not None
        try:
            if receiver.initialize == "initialize_nccl":
                await plane.initialize_nccl(**RENDEZVOUS, inference_world_size=W)
            elif receiver.initialize == "init_nixl_broadcast":
                await init_nixl_broadcast(plane, *RENDEZVOUS.values(), W)
            trainer.start()
            for step in steps:
                step_dir = root / f"step_{step}"
                deadline = time.monotonic() + 30
                while not (step_dir / SENDER_READY).exists():  # WeightReceiver.wait_published
                    assert time.monotonic() < deadline
                    await asyncio.sleep(0.01)

                def ack(step_dir: Path = step_dir, step: int = step) -> None:
                    paused = [e.paused for e in fleet.engines]
                    seen["on_paused"].append((step, paused, updates_so_far()))
                    (step_dir / RECEIVER_READY).touch()

                for action in receiver.receive:
                    seen["calls"].append(action)
                    if action == "ack":
                        ack()
                    elif action in ("wait_finished", "wait_ready"):
                        # .finished on disk; NIXL's "ready" notification stands as .started.
                        marker = step_dir / (FINISHED if action == "wait_finished" else STARTED)
                        while not marker.exists():
                            assert time.monotonic() < deadline
                            await asyncio.sleep(0.01)
                    else:
                        await plane.update_weights(
                            step_dir if receiver.weight_dir else None,
                            transport=transport,
                            step=step,
                            on_paused=ack if receiver.on_paused else None,
                        )
        finally:
            await plane.aclose()
            seen["calls"].append("aclose")

    asyncio.run(orchestrator())
    trainer.join(30)
    seen["trainer"] = trainer.done
    return seen


def _is_update(request: Any) -> bool:
    body = request.json if isinstance(request.json, dict) else {}
    return (
        request.path in ("/update_weights", "/engine/update_weights_from_distributed")
        or body.get("method") == "update_weights_from_path"
    )


def _is_init(request: Any) -> bool:
    body = request.json if isinstance(request.json, dict) else {}
    return (
        request.path in ("/init_broadcaster", "/engine/init_weights_update_group")
        or body.get("method") == "init_broadcaster"
    )


def _step(request: Any) -> str:
    if request.path == "/health":
        return "health"
    if _is_init(request):
        return "init"
    if _is_update(request):
        return "update"
    return request.path.strip("/")


@pytest.mark.integration
@pytest.mark.parametrize("transport", ["filesystem", "nccl", "nixl"])
def test_mains_whole_run_on_engines_of_world_sizes_2_4_1(
    fleet: Any, tmp_path: Path, transport: str
) -> None:
    seen = run_main(fleet, transport, tmp_path)
    receiver = MAIN_RECEIVERS[transport]
    assert seen["trainer"] == [1, 2], "the trainer's handshake did not complete both steps"
    # The handshake's acknowledgement: once per step, every engine paused, before any update.
    acks = seen["on_paused"]
    assert [step for step, _, _ in acks] == [1, 2]
    if receiver.on_paused:
        assert [(all(paused), before) for _, paused, before in acks] == [(True, 0), (True, 3)]
    else:  # the filesystem and NIXL receivers acknowledge before any engine is touched
        assert [(any(paused), before) for _, paused, before in acks] == [(False, 0), (False, 3)]
    step_once = ["pause", "update", "resume"]
    init = ["init"] if receiver.initialize else []
    admin = fleet.recorder.requests(server="admin")
    for engine in fleet.engines:
        mine = [r for r in admin if r.engine == engine.key]
        assert [_step(r) for r in mine] == ["health", *init, *step_once, *step_once], engine.key
        assert all(r.status == 200 for r in mine)
        assert not engine.paused
        updates = [r.json["args"] for r in mine if _is_update(r)]
        wanted = [[str(tmp_path / f"step_{s}")] for s in (1, 2)] if receiver.weight_dir else []
        assert updates == (wanted or [[None], [None]])
        pauses = [r.query for r in mine if _step(r) == "pause"]
        assert pauses == ["mode=keep&clear_cache=false"] * 2
    # Credentials on every admin call (no allow-list configured: every host is allowed).
    assert admin and all(r.headers.get("authorization") == f"Bearer {KEY}" for r in admin)
    if receiver.initialize:
        inits = sorted(
            (r.json["args"][2], r.json["args"][3], r.engine) for r in admin if _is_init(r)
        )
        assert [(offset, world) for offset, world, _ in inits] == [(0, W), (2, W), (6, W)]
        sizes = {e.key: e.world_size for e in fleet.engines}
        claimed = [rank for offset, _, key in inits for rank in range(offset, offset + sizes[key])]
        assert sorted(claimed) == list(range(W)), "a rank is claimed twice or by nobody"
        args = [r.json["args"] for r in admin if _is_init(r)]
        assert {len(a) for a in args} == {7 if transport == "nixl" else 6}
        if transport == "nixl":
            assert {a[6] for a in args} == {SESSION}
    assert seen["calls"][: len(MAIN_STARTUP)] == list(MAIN_STARTUP)
    assert seen["calls"][-1] == "aclose"
    # Main's handshake has no NCCL_READY marker: nothing but the four stages and the weights.
    for step in (1, 2):
        written = {p.name for p in (tmp_path / f"step_{step}").iterdir()}
        assert written == {SENDER_READY, RECEIVER_READY, STARTED, FINISHED, "model.safetensors"}


#: The reference fleet [2, 4, 1] as Dynamo's Python workers: no admin URL, the engine routes
#: main's later dynamo.py drives on each system_url.
PYTHON_WORKERS: dict[str, Any] = {
    **PINNED_TOPOLOGY,
    "engines": [
        {
            **group,
            "admin": False,
            "routes": [
                "init_weights_update_group",
                "pause_generation",
                "resume_generation",
                "update_weights_from_distributed",
            ],
        }
        for group in PINNED_TOPOLOGY["engines"]
    ],
}


@pytest.mark.integration
def test_the_python_workers_engine_routes_carry_the_credentials(tmp_path: Path) -> None:
    from prime_rl_dynamo.suite.reference import start_reference_fleet
    from prime_rl_dynamo.topology import topology_from_dict

    with start_reference_fleet(topology_from_dict(PYTHON_WORKERS)) as python_fleet:
        python_fleet.wait_ready()
        seen = run_main(python_fleet, "nccl", tmp_path, admin_api="engine_routes")
        calls = python_fleet.recorder.requests(server="system")
        assert not python_fleet.recorder.requests(server="admin")
    assert [(all(paused), before) for _, paused, before in seen["on_paused"]] == [
        (True, 0),
        (True, 3),
    ]
    assert calls and all(r.headers.get("authorization") == f"Bearer {KEY}" for r in calls)
    for engine in python_fleet.engines:
        mine = [r for r in calls if r.engine == engine.key]
        routes = [r.path.removeprefix("/engine/") for r in mine]
        step_once = ["pause_generation", "update_weights_from_distributed", "resume_generation"]
        assert routes == ["/health", "init_weights_update_group", *step_once, *step_once]
        assert mine[2].json == {"mode": "keep", "clear_cache": False}
        updates = [r.json for r in mine if _is_update(r)]
        assert updates == [
            {
                "engine_rpc": "update_weights_from_path",
                "weight_dir": str(tmp_path / f"step_{s}"),
                "weight_version": s,
            }
            for s in (1, 2)
        ]
    inits = sorted((r.json["rank_offset"], r.json["engine_rpc"]) for r in calls if _is_init(r))
    assert inits == [(0, "init_broadcaster"), (2, "init_broadcaster"), (6, "init_broadcaster")]
    init_fields = {k for r in calls if _is_init(r) for k in r.json} - {"engine_rpc"}
    assert init_fields == {n for n, _ in WORKER_INIT_BROADCASTER}


@pytest.mark.integration
@pytest.mark.parametrize("transport", ["filesystem", "nccl"])
def test_prime_server_routes_by_field_name(fleet: Any, tmp_path: Path, transport: str) -> None:
    run_main(fleet, transport, tmp_path, admin_api="prime")
    admin = fleet.recorder.requests(server="admin")
    updates = [r for r in admin if r.path == "/update_weights"]
    assert len(updates) == 2 * len(fleet.engines)
    assert all(set(r.json) == {"weight_dir", "version_uid"} for r in updates)
    assert {r.json["weight_dir"] for r in updates} == {
        str(tmp_path / "step_1"),
        str(tmp_path / "step_2"),
    }
    inits = [r for r in admin if r.path == "/init_broadcaster"]
    if transport == "filesystem":
        assert inits == []
        return
    # Over the wire, by main's route fields (no engine_world_size), and accepted by every engine.
    assert [r.status for r in inits] == [200] * len(fleet.engines)
    assert all(
        set(r.json) == {n for n, _ in WORKER_INIT_BROADCASTER} - {"session_id"} for r in inits
    )
    assert sorted(r.json["rank_offset"] for r in inits) == [0, 2, 6]
    assert {r.json["inference_world_size"] for r in inits} == {W}


@pytest.mark.integration
def test_stock_vllm_reloads_from_the_step_directory(fleet: Any, tmp_path: Path) -> None:
    # Stock vLLM has no update_weights_from_path (Prime's extension): the filesystem update is
    # vLLM's own reload_weights with weights_path, over /collective_rpc, once per engine and step.
    run_main(fleet, "filesystem", tmp_path, admin_api="stock_vllm")
    calls = fleet.recorder.requests(server="admin")
    updates = [r.json for r in calls if r.path == "/collective_rpc"]
    assert updates == [
        {"method": "reload_weights", "args": [], "kwargs": {"weights_path": str(tmp_path / s)}}
        for s in ("step_1", "step_2")
        for _ in fleet.engines
    ]
    assert not [r for r in calls if r.path == "/update_weights"]


def test_stock_vllm_refuses_a_collective_update_before_sending_anything() -> None:
    sent: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(503)

    async def go() -> None:
        plane = DynamoAdminPlane(
            ClientConfig(dynamo=DynamoConfig(discovery_url="http://127.0.0.1:9")),
            MODEL,
            admin_api="stock_vllm",
            environ=ENV,
            transport=httpx.MockTransport(record),
        )
        try:
            await plane.update_weights("/w", transport="nccl", step=1)
        finally:
            await plane.aclose()

    with pytest.raises(ConfigError, match="needs Prime's worker extension"):
        asyncio.run(go())
    assert sent == []


@contextlib.asynccontextmanager
async def ready_plane(fleet: Any, **options: Any) -> AsyncIterator[DynamoAdminPlane]:
    """The plane over ``fleet`` once ready; it and its transport (if given) closed afterwards."""
    plane = DynamoAdminPlane(main_client(fleet), MODEL, environ=ENV, **options)
    try:
        await plane.wait_for_ready(MODEL)
        yield plane
    finally:
        await plane.aclose()
        if "transport" in options:
            await options["transport"].aclose()


@pytest.mark.integration
def test_a_world_size_the_listing_does_not_sum_to_sends_nothing_and_init_runs_once(
    fleet: Any,
) -> None:
    async def main() -> None:
        # A listing short of W is pending (an engine may still join: READY-3) until the readiness
        # budget ends; then POLL-5 names the sum found. Not a request reaches an engine (RANK-2).
        plane = DynamoAdminPlane(
            main_client(fleet, wait_for_ready_timeout=1), MODEL, environ=ENV, poll_interval=0.1
        )
        try:
            await plane.wait_for_ready(MODEL)
            with pytest.raises(NotReadyError) as info:
                await plane.initialize_nccl(**RENDEZVOUS, inference_world_size=W + 1)
            assert info.value.last is not None and info.value.last.world_size_sum == W
            assert fleet.recorder.requests(server="admin") == []
            # Nothing was sent, so the plane is not spent; the right W initialises once.
            await plane.initialize_nccl(**RENDEZVOUS, inference_world_size=W)
            with pytest.raises(ConfigError, match="once per engine start"):
                await plane.initialize_nccl(**RENDEZVOUS, inference_world_size=W)
        finally:
            await plane.aclose()

    asyncio.run(main())
    assert len([r for r in fleet.recorder.requests(server="admin") if _is_init(r)]) == 3


class FailUpdatesOn(httpx.AsyncBaseTransport):
    """Real HTTP, except that one engine's ``update_weights_from_path`` answers 500 without
    reaching it (the reference fleet can only fail every collective_rpc of an engine)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.inner = httpx.AsyncHTTPTransport()
        self.failed = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.port == self.port and b"update_weights_from_path" in request.content:
            self.failed += 1
            return httpx.Response(500, json={"status": "error", "message": "injected"})
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.mark.integration
def test_a_failed_nccl_update_leaves_every_engine_paused_and_the_plane_terminal(
    fleet: Any, tmp_path: Path
) -> None:
    victim = fleet.engines[1]
    port = urlsplit(victim.admin_base_url).port
    failing = FailUpdatesOn(port)

    async def main() -> None:
        async with ready_plane(fleet, transport=failing) as plane:
            await plane.initialize_nccl(**RENDEZVOUS, inference_world_size=W)
            acks: list[int] = []
            with pytest.raises(AdminError, match="paused; restart required"):
                await plane.update_weights(
                    tmp_path, transport="nccl", step=1, on_paused=lambda: acks.append(1)
                )
            assert acks == [1]
            with pytest.raises(ConfigError, match="terminal"):
                await plane.update_weights(tmp_path, transport="filesystem", step=2)

    asyncio.run(main())
    assert failing.failed == 1, "an NCCL update is a collective: it is never retried"
    assert all(e.paused for e in fleet.engines)
    assert not [r for r in fleet.recorder.requests(server="admin") if r.path == "/resume"]


@pytest.mark.integration
def test_a_failed_path_update_is_retried_then_every_engine_is_resumed(
    fleet: Any, tmp_path: Path
) -> None:
    victim = fleet.engines[2]
    failing = FailUpdatesOn(urlsplit(victim.admin_base_url).port)

    async def main() -> None:
        async with ready_plane(fleet, transport=failing, poll_interval=0.01) as plane:
            with pytest.raises(AdminError, match="every engine resumed"):
                await plane.update_weights(tmp_path, transport="filesystem", step=1)

    asyncio.run(main())
    assert failing.failed == 10, "main retries a 5xx path update 10 times"
    assert not any(e.paused for e in fleet.engines)


@pytest.mark.integration
def test_an_answer_that_will_not_heal_is_not_retried(fleet: Any, tmp_path: Path) -> None:
    async def main() -> None:
        async with ready_plane(fleet, poll_interval=0.01) as plane:
            await plane.update_weights(tmp_path, transport="filesystem", step=1)
            victim = fleet.engines[0]
            victim.admin_redirect_path = "/moved"  # a 307: never followed, never retried
            try:
                with pytest.raises(AdminError, match="pause failed on 1 engine"):
                    await plane.update_weights(tmp_path, transport="filesystem", step=2)
            finally:
                victim.admin_redirect_path = None

    asyncio.run(main())
    pauses = [r for r in fleet.recorder.requests(server="admin") if r.path == "/pause"]
    assert len(pauses) == 2 * len(fleet.engines)
    assert not any(e.paused for e in fleet.engines)
    updates = [r for r in fleet.recorder.requests(server="admin") if _is_update(r)]
    assert len(updates) == len(fleet.engines), "the second step's update was sent"
