"""Config: the inference-source rules, explicit world size for Dynamo, the local-GPU check, credentials."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from prime_rl_dynamo.config import (
    DynamoClientConfig,
    ElasticConfig,
    check_local_gpus,
    local_gpu_check_applies,
)
from prime_rl_dynamo.errors import ConfigError
from prime_rl_dynamo.plan import Convention

URL = "http://frontend:8001"


def dyn(**kw: Any) -> DynamoClientConfig:
    kw.setdefault("dynamo_discovery_url", URL)
    kw.setdefault("inference_world_size", 16)
    return DynamoClientConfig(**kw)


def test_dynamo_config_is_valid_and_derives_views() -> None:
    c = dyn(model="Qwen/Qwen3-0.6B", components=["prefill", "decode"])
    assert c.inference_source == "dynamo" and c.is_dynamo
    assert c.convention is Convention.PRIME_NCCL
    assert c.components == ("prefill", "decode")


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"admin_base_url": ["http://a:8000"]}, "found dynamo_discovery_url and admin_base_url"),
        ({"elastic": ElasticConfig("pods.svc")}, "found dynamo_discovery_url and elastic"),
    ],
)
def test_dynamo_excludes_other_sources(kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        dyn(**kwargs)


def test_no_source_is_refused() -> None:
    with pytest.raises(ConfigError, match="found none of them"):
        DynamoClientConfig()


def test_static_and_elastic_alone_are_fine() -> None:
    assert DynamoClientConfig(admin_base_url=["http://a:8000"]).inference_source == "static"
    assert DynamoClientConfig(elastic=ElasticConfig("pods.svc")).inference_source == "elastic"


@pytest.mark.parametrize("broadcast", ["nccl", "vllm-native-nccl", "nixl", "filesystem"])
def test_dynamo_requires_explicit_world_size_for_every_broadcast(broadcast: str) -> None:
    with pytest.raises(ConfigError) as info:
        DynamoClientConfig(dynamo_discovery_url=URL, weight_broadcast=broadcast)
    assert "explicit inference_world_size" in str(info.value)
    assert info.value.requirement == "RANK-2"


@pytest.mark.parametrize("world", [0, -1, True, 2.5])
def test_bad_world_size(world: Any) -> None:
    with pytest.raises(ConfigError, match="inference_world_size must be an integer >= 1"):
        dyn(inference_world_size=world)


def test_bad_discovery_url_is_reported() -> None:
    with pytest.raises(ConfigError) as info:
        dyn(dynamo_discovery_url="http://u:pw@frontend:8001")
    assert "CRED-1" in str(info.value) and "pw" not in str(info.value)


def test_static_admin_url_with_user_info_is_refused_without_leaking() -> None:
    with pytest.raises(ConfigError) as info:
        DynamoClientConfig(admin_base_url=["http://bob:hunter2@a:8000"])
    assert "CRED-1" in str(info.value) and "hunter2" not in str(info.value)


def test_native_nccl_refuses_multi_process_trainer() -> None:
    with pytest.raises(ConfigError) as info:
        dyn(weight_broadcast="vllm-native-nccl", trainer_world_size=4)
    assert info.value.requirement == "RANK-4"


def test_all_problems_listed_at_once() -> None:
    with pytest.raises(ConfigError) as info:
        DynamoClientConfig(
            dynamo_discovery_url=URL,
            weight_broadcast="gloo",
            poll_interval=0,
            admin_allowed_hosts=["10.0.0.0/99"],
        )
    text = str(info.value)
    for needle in (
        "explicit inference_world_size",
        "weight_broadcast must be one of",
        "poll_interval",
        "CIDR",
    ):
        assert needle in text


def test_string_instead_of_list_is_refused() -> None:
    with pytest.raises(ConfigError, match="list of strings"):
        dyn(components="prefill")


def test_from_dict_refuses_unknown_keys_and_builds_elastic() -> None:
    with pytest.raises(ConfigError, match="unknown Dynamo client settings: dynamo_url"):
        DynamoClientConfig.from_dict({"dynamo_url": URL})
    c = DynamoClientConfig.from_dict({"elastic": {"hostname": "pods", "port": 9000}})
    assert c.elastic == ElasticConfig("pods", 9000)


# --- local GPU check ---------------------------------------------------------------------------


def test_gpu_check_skipped_when_world_size_is_external() -> None:
    c = dyn()
    assert not local_gpu_check_applies(c, has_local_inference=False)
    check_local_gpus(c, num_train_gpus=1, num_infer_gpus=0, has_local_inference=False)  # no raise


def test_gpu_check_applies_to_local_nccl() -> None:
    c = DynamoClientConfig(admin_base_url=["http://a:8000"])
    assert local_gpu_check_applies(c, has_local_inference=True)
    with pytest.raises(ConfigError, match="at least 2 local GPUs"):
        check_local_gpus(c, num_train_gpus=1, num_infer_gpus=0, has_local_inference=True)
    check_local_gpus(c, num_train_gpus=1, num_infer_gpus=1, has_local_inference=True)
    # No local inference and no explicit world size: not external, the check applies.
    with pytest.raises(ConfigError):
        check_local_gpus(c, num_train_gpus=1, num_infer_gpus=4, has_local_inference=False)


def test_gpu_check_not_for_nixl_or_filesystem() -> None:
    for kind in ("nixl", "filesystem"):
        c = DynamoClientConfig(admin_base_url=["http://a:8000"], weight_broadcast=kind)
        assert not local_gpu_check_applies(c, has_local_inference=True)


# --- credentials and clients -------------------------------------------------------------------


def test_credentials_from_config() -> None:
    env = {"MY_KEY": "k1", "TEAM": "t"}
    c = dyn(
        api_key_var="MY_KEY",
        headers={"X-A": "a"},
        headers_from_env={"X-Team": "TEAM"},
        admin_allowed_hosts=["*.svc"],
    )
    creds = c.credentials(env)
    assert creds.resolve(env) == {"X-A": "a", "X-Team": "t", "Authorization": "Bearer k1"}
    assert creds.allowed_hosts == ("*.svc",)
    explicit = dyn(api_key="direct", api_key_var="MY_KEY").credentials(env)
    assert explicit.resolve(env)["Authorization"] == "Bearer direct"
    assert "direct" not in repr(dyn(api_key="direct"))


def test_discovery_client_from_config() -> None:
    c = dyn(model="m", components=["decode"], poll_interval=0.5, weight_broadcast="filesystem")
    client = c.discovery_client()
    assert client.url == URL + "/v1/rl/workers"
    assert client.policy.inference_world_size == 16 and client.policy.model == "m"
    assert client.policy.components == frozenset({"decode"})
    assert client.polling.poll_interval == 0.5
    assert client.policy.require_world_size is False
    assert client.policy == c.readiness_policy() and client.polling == c.polling_policy()
    # policy= and polling= replace the configuration's; the client's other keywords pass through.
    tuned = c.discovery_client(
        policy=replace(c.readiness_policy(), stable_polls=3),
        polling=replace(c.polling_policy(), poll_interval=0.1),
        progress=False,
    )
    assert tuned.polling.poll_interval == 0.1 and tuned.policy.stable_polls == 3
    assert tuned.policy.model == "m" and tuned.progress is False
    assert tuned.polling.timeout == c.polling_policy().timeout
    with pytest.raises(TypeError, match="poll_interval"):
        c.discovery_client(poll_interval=0.1)  # a policy's field is not a client keyword
    with pytest.raises(ConfigError, match="inference source is static"):
        DynamoClientConfig(admin_base_url=["http://a:8000"]).discovery_client()


def test_discovery_credentials_only_when_asked_and_allowed() -> None:
    env = {"VLLM_API_KEY": "k"}
    plain = dyn().discovery_client(env)
    assert "authorization" not in {k.lower() for k in plain.http.headers}
    asked = dyn(discovery_credentials=True).discovery_client(env)
    assert asked.http.headers["Authorization"] == "Bearer k"
    with pytest.raises(ConfigError) as info:
        dyn(discovery_credentials=True, admin_allowed_hosts=["*.svc"]).discovery_client(env)
    assert info.value.requirement == "CRED-3"
