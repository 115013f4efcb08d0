"""Hostile Prime-RL configs (issue 22, items 5, 15 and 24): every refusal is a PrimeRLDynamoError
that names the setting, and no URL credential is shown."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from prime_rl_dynamo.errors import ConfigError, PrimeRLDynamoError
from prime_rl_dynamo.prime_rl import client_config_from_prime_rl

SECRET = "pw5ecretZZ"


def test_disagreeing_discovery_urls_are_refused_without_their_credentials() -> None:
    config = SimpleNamespace(
        dynamo=SimpleNamespace(discovery_url=f"http://user:{SECRET}@a:8001"),
        dynamo_discovery_url=f"http://b:8001/?token={SECRET}",
    )
    with pytest.raises(ConfigError, match="disagree") as info:
        client_config_from_prime_rl(config, inference_world_size=1)
    assert SECRET not in str(info.value)


class _Url:
    """Stands in for pydantic's AnyHttpUrl: a URL object whose repr shows the password."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"AnyHttpUrl({self.text!r})"


_Url.__name__ = "AnyHttpUrl"


def test_a_url_object_is_read_as_its_text_and_never_shown_by_repr() -> None:
    config = SimpleNamespace(dynamo=SimpleNamespace(discovery_url=_Url("http://f:8001")))
    cfg = client_config_from_prime_rl(config, inference_world_size=1)
    assert cfg.dynamo_discovery_url == "http://f:8001"
    bad = SimpleNamespace(dynamo=SimpleNamespace(discovery_url=_Url(f"http://u:{SECRET}@f:1")))
    with pytest.raises(ConfigError) as info:
        client_config_from_prime_rl(bad, inference_world_size=1)
    assert SECRET not in str(info.value)


class _Raising:
    dynamo_discovery_url = "http://f:8001"

    @property
    def api_key_var(self) -> str:
        raise RuntimeError("config backend down")


@pytest.mark.parametrize(
    ("config", "broadcast", "names"),
    [
        (_Raising(), None, "api_key_var"),
        (SimpleNamespace(dynamo_discovery_url="http://f:8001"), {"type": ["nccl"]}, "type"),
        (SimpleNamespace(dynamo_discovery_url="http://f:8001", api_key_var=5), None, "api_key_var"),
        (
            SimpleNamespace(dynamo_discovery_url="http://f:8001", wait_for_ready_timeout="30"),
            None,
            "wait_for_ready_timeout",
        ),
    ],
    ids=["raising-attribute", "unhashable-type", "api-key-var-int", "timeout-text"],
)
def test_every_bad_setting_is_a_project_error_naming_it(
    config: Any, broadcast: Any, names: str
) -> None:
    with pytest.raises(PrimeRLDynamoError) as info:
        client_config_from_prime_rl(config, inference_world_size=1, weight_broadcast=broadcast)
    assert names in str(info.value)
    assert "discovery_timeout" not in str(info.value)
