"""Prime-RL's latest generation under vLLM native NCCL, both halves, without Prime-RL.

The call order and argument shapes are Prime-RL's at 73164c322, written down below as data: the
orchestrator's (orchestrator.py, watcher.py, dispatcher.py) on DynamoInferencePool, and the trainer's
(transports/weights/dynamo_nccl.py, as the patch of docs/prime-rl/ makes it) on
SyncNativeNcclTrainer, with the calls vLLM's trainer engine makes on its client. Everything is
driven over real HTTP against the reference fleet and judged on what its servers recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from conformance.client_runs import PINNED_NATIVE_TOPOLOGY
from conformance.native_lifecycle import init_problems, lifecycle_problems
from prime_rl_dynamo.errors import AdminError, ConfigError
from prime_rl_dynamo.native_nccl import NativeNcclGroup, SyncNativeNcclTrainer
from prime_rl_dynamo.prime_rl import DynamoInferencePool
from tests._client_support import pool_of

MODEL = PINNED_NATIVE_TOPOLOGY["model"]
KEY = "sk-native"
ENV = {"NATIVE_KEY": KEY}
STEP = 3

#: Prime-RL's orchestrator at 73164c322, in order: (member, how it is called).
ORCHESTRATOR_CALLS: tuple[tuple[str, str], ...] = (
    (
        "from_config",
        "setup_inference_pool(client_config, model_name=..., train_client_type=..., "
        "eval_client_type=..., renderer_config=..., inference_world_size=W)",
    ),
    ("model_name", "orchestrator.py:266"),
    ("wait_for_ready", "wait_for_ready(config.model.name)"),
    ("init_nccl_broadcast", "init_nccl_broadcast(host, port, timeout, inference_world_size=W)"),
    ("update_weights", "update_weights(weights_path, lora_name=None, step=s, native_nccl=True)"),
    ("train_client", "dispatcher.py:494"),
    ("eval_client", "dispatcher.py:494"),
    ("stop", "stop()"),
)
#: The patched trainer: DynamoNCCLWeightBroadcast.__init__ and broadcast_weights, with the calls
#: vLLM's trainer engine makes on its client (init at trainer_init, the rest in send_weights).
TRAINER_CALLS: tuple[str, ...] = (
    "from_prime_rl",
    "init_weight_transfer_engine",
    "touch STABLE",
    "wait NCCL_READY",
    "start_weight_update",
    "update_weights",
    "finish_weight_update",
    "update_weight_version",
)
#: What each engine's system server must see, in order (the orchestrator's reads may repeat).
ENGINE_ORDER = (
    "update/init_weight_transfer_engine",
    "control/pause_generation",
    "control/is_paused",
    "update/start_weight_update",
    "update/update_weights",
    "update/finish_weight_update",
    "update/update_weight_version",
    "control/resume_generation",
)


def prime_client(url: str) -> Any:
    """Prime-RL's ClientConfig with the patch's fields (only what the pool reads)."""
    return SimpleNamespace(
        dynamo=SimpleNamespace(
            discovery_url=url, nccl_convention="vllm-native-nccl", admin_allowed_hosts=None
        ),
        api_key_var="NATIVE_KEY",
        headers={},
        headers_from_env={},
        wait_for_ready_timeout=20,
    )


def _native_pool(
    client_config: Any, **kwargs: Any
) -> contextlib.AbstractAsyncContextManager[DynamoInferencePool]:
    """The orchestrator's pool over the pinned native fleet (W = 7), stopped when the block ends."""
    return pool_of(client_config, MODEL, 7, environ=ENV, **kwargs)


def trainer_weight_broadcast(url: str, port: int, timeout: float) -> Any:
    """Prime-RL's TrainerNCCLWeightBroadcastConfig as rl.py builds it for Dynamo."""
    return SimpleNamespace(
        type="nccl",
        host="127.0.0.1",
        port=port,
        timeout=timeout,
        inference_world_size=7,
        dynamo=SimpleNamespace(
            discovery_url=url,
            model_name=MODEL,
            headers={},
            headers_from_env={},
            api_key_var="NATIVE_KEY",
            admin_allowed_hosts=None,
        ),
    )


class PrimeDataPlane:
    """Stands in for Prime-RL's own InferencePool (the patch's data_plane)."""

    train_client = SimpleNamespace(client_type="renderer")
    eval_client = SimpleNamespace(client_type="openai_chat_completions")

    async def score(self, token_ids: Any) -> Any:
        return [0.0 for _ in token_ids]


def _trainer(url: str, weight_dir: Path, commit: bool, done: list[Any]) -> None:
    """The patched trainer in its own thread (it is synchronous, as Prime-RL's is)."""
    import os

    os.environ["NATIVE_KEY"] = KEY
    client = SyncNativeNcclTrainer.from_prime_rl(trainer_weight_broadcast(url, 29511, 5.0))
    try:
        done.append(client.group)
        # vLLM's trainer_init hands its client the group's coordinates; the helper adds offsets.
        client.init_weight_transfer_engine(
            {"master_address": "127.0.0.1", "master_port": 29511, "world_size": 8}
        )
        (weight_dir / "STABLE").touch()  # broadcast_weights: the step's directory is ready
        deadline = time.monotonic() + 10
        while not (weight_dir / "NCCL_READY").exists():
            assert time.monotonic() < deadline, "the orchestrator never touched NCCL_READY"
            time.sleep(0.02)
        client.start_weight_update()
        client.update_weights({"names": ["w"], "dtype_names": ["bfloat16"], "shapes": [[2, 2]]})
        client.finish_weight_update()
        if commit:
            client.update_weight_version(str(STEP))
    finally:
        client.close()


def _run(fleet: Any, weight_dir: Path, *, commit: bool = True, timeout: float = 5.0) -> list[Any]:
    done: list[Any] = []
    seen: list[str] = []

    async def orchestrator() -> None:
        async with _native_pool(
            prime_client(fleet.frontend_url),
            train_client_type="renderer",
            eval_client_type="openai_chat_completions",
            renderer_config=None,
            data_plane=PrimeDataPlane(),
        ) as pool:
            seen.append(str(pool.model_name))
            await pool.wait_for_ready(MODEL)
            await pool.init_nccl_broadcast("127.0.0.1", 29511, timeout, inference_world_size=7)
            trainer.start()
            # The orchestrator waits for the step's weight directory (get_weight_dir), which the
            # trainer marks STABLE once its engine is up; then it updates.
            deadline = time.monotonic() + 10
            while not (weight_dir / "STABLE").exists() and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            await pool.update_weights(weight_dir, lora_name=None, step=STEP, native_nccl=True)
            seen.extend([pool.train_client.client_type, pool.eval_client.client_type])

    trainer = threading.Thread(
        target=_trainer, args=(fleet.discovery_url, weight_dir, commit, done)
    )
    try:
        asyncio.run(orchestrator())
    finally:
        trainer.join(20)
    return [seen, *done]


@pytest.fixture()
def native_fleet() -> Any:
    from prime_rl_dynamo.suite.reference import start_reference_fleet
    from prime_rl_dynamo.topology import topology_from_dict

    with start_reference_fleet(topology_from_dict(PINNED_NATIVE_TOPOLOGY)) as fleet:
        fleet.wait_ready()
        yield fleet


def _routes(fleet: Any, key: str) -> list[str]:
    return [
        r.path.removeprefix("/engine/")
        for r in fleet.recorder.requests(server="system", engine=key)
        if r.path.startswith("/engine/")
    ]


@pytest.mark.integration
def test_prime_rls_order_on_both_halves(native_fleet: Any, tmp_path: Path) -> None:
    assert next(name for name, _ in ORCHESTRATOR_CALLS) == "from_config"
    seen, group = _run(native_fleet, tmp_path)
    assert seen == [MODEL, "renderer", "openai_chat_completions"]
    assert isinstance(group, NativeNcclGroup)
    assert (group.rank_offsets, group.world_size) == ([1, 3, 7], 8)
    calls = native_fleet.recorder.requests()
    engines = []
    for engine in native_fleet.engines:
        engines.append({"key": engine.key, "label": engine.label})
        routes = [r for r in _routes(native_fleet, engine.key) if r != "control/get_weight_version"]
        assert routes == list(ENGINE_ORDER), engine.key
        versions = _routes(native_fleet, engine.key).count("control/get_weight_version")
        assert versions >= 1
    inits = native_fleet.recorder.requests(
        server="system", path="/engine/update/init_weight_transfer_engine"
    )
    infos = sorted(
        (r.json["init_info"]["rank_offset"], r.json["init_info"]["world_size"]) for r in inits
    )
    assert infos == [(1, 8), (3, 8), (7, 8)]
    # Nothing went to the admin API but health: no init and no path reload from the orchestrator.
    assert {r.path for r in native_fleet.recorder.requests(server="admin")} == {"/health"}
    assert all(
        r.headers.get("authorization") == f"Bearer {KEY}" for r in calls if r.server != "frontend"
    )
    assert init_problems(engines, calls) == [] and lifecycle_problems(engines, calls) == []
    assert (tmp_path / "NCCL_READY").exists()


@pytest.mark.integration
def test_a_trainer_that_never_commits_times_out_and_every_engine_is_resumed(
    native_fleet: Any, tmp_path: Path
) -> None:
    with pytest.raises(AdminError, match="NATIVE-2: the trainer did not commit weight version '3'"):
        _run(native_fleet, tmp_path, commit=False, timeout=1.0)
    for engine in native_fleet.engines:
        assert _routes(native_fleet, engine.key)[-1] == "control/resume_generation"
        assert not engine.paused


@pytest.mark.integration
def test_a_fleet_without_the_native_routes_is_refused_before_any_engine_call(
    tmp_path: Path,
) -> None:
    from prime_rl_dynamo.suite.reference import start_reference_fleet
    from prime_rl_dynamo.topology import topology_from_dict

    plain = {
        **PINNED_NATIVE_TOPOLOGY,
        "engines": [
            {k: v for k, v in g.items() if k != "routes"} for g in PINNED_NATIVE_TOPOLOGY["engines"]
        ],
    }
    with start_reference_fleet(topology_from_dict(plain)) as fleet:
        fleet.wait_ready()

        async def main() -> None:
            async with _native_pool(prime_client(fleet.frontend_url)) as pool:
                with pytest.raises(ConfigError, match="control/is_paused"):
                    await pool.init_nccl_broadcast("127.0.0.1", 29512, 5.0, 7)

        asyncio.run(main())
        assert fleet.recorder.requests(server="system") == []
        with pytest.raises(ConfigError, match=r"routes \[.*\] not listed"):
            SyncNativeNcclTrainer.from_prime_rl(
                trainer_weight_broadcast(fleet.discovery_url, 29512, 5.0), environ=ENV
            )


@pytest.mark.integration
def test_orchestrator_owned_native_inits_once_and_runs_vllms_lifecycle(
    native_fleet: Any, tmp_path: Path
) -> None:
    import json

    async def main() -> None:
        async with _native_pool(
            prime_client(native_fleet.frontend_url),
            native_nccl_owner="orchestrator",
        ) as pool:
            await pool.wait_for_ready(MODEL)
            await pool.init_nccl_broadcast("127.0.0.1", 29513, 5.0, 7)
            with pytest.raises(ConfigError, match=r"NCCL_UPDATE_INFO\.json"):
                await pool.update_weights(tmp_path, step=1, native_nccl=True)
            info = {"names": ["w"], "dtype_names": ["bfloat16"], "shapes": [[2, 2]]}
            (tmp_path / "NCCL_UPDATE_INFO.json").write_text(json.dumps(info), encoding="utf-8")
            await pool.update_weights(tmp_path, step=2, native_nccl=True)

    asyncio.run(main())
    calls = native_fleet.recorder.requests()
    rpc = [r for r in calls if r.server == "admin" and r.path == "/collective_rpc"]
    assert sorted(r.json["kwargs"]["init_info"]["rank_offset"] for r in rpc) == [1, 3, 7]
    engines = [{"key": e.key, "label": e.label} for e in native_fleet.engines]
    assert init_problems(engines, calls) == [] and lifecycle_problems(engines, calls) == []
    for engine in native_fleet.engines:
        # The same step as the trainer-owned order, the orchestrator having initialised instead.
        assert _routes(native_fleet, engine.key) == list(ENGINE_ORDER[1:])
