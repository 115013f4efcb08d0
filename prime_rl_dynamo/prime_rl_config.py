"""Prime-RL's config objects read into this package's: the orchestrator's ``client`` and
``weight_broadcast`` sections, the trainer's ``weight_broadcast`` (with ``dynamo``), and the NCCL
convention. Duck typing only (attributes or mapping keys): ``prime_rl`` is never imported.
Shared by ``prime_rl_dynamo.prime_rl`` (the orchestrator's pool) and
``prime_rl_dynamo.native_nccl`` (the trainer's group).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Mapping
from typing import Any

import httpx

from prime_rl_dynamo.config import DynamoClientConfig
from prime_rl_dynamo.defaults import API_KEY_VAR, DISCOVERY_TIMEOUT
from prime_rl_dynamo.errors import ConfigError
from prime_rl_dynamo.plan import Convention
from prime_rl_dynamo.redaction import shown_url

__all__ = [
    "PRIME_RL_API_KEY_VAR",
    "PRIME_RL_MAIN_WAIT_FOR_READY_TIMEOUT",
    "PRIME_RL_WAIT_FOR_READY_TIMEOUT",
    "admin_settings_from_prime_rl",
    "client_config_from_prime_rl",
    "discovery_url_from_prime_rl",
    "is_main_dynamo",
    "nccl_convention_from_prime_rl",
    "trainer_config_from_prime_rl",
]

_log = logging.getLogger(__name__)

#: Prime-RL's default for ``client.wait_for_ready_timeout`` at 73164c322 (the package's own
#: discovery default too) and for ``client.api_key_var``.
PRIME_RL_WAIT_FOR_READY_TIMEOUT = DISCOVERY_TIMEOUT
PRIME_RL_API_KEY_VAR = API_KEY_VAR
#: Prime-RL main's default for ``client.wait_for_ready_timeout`` (ClientConfig in
#: packages/prime-rl-configs/src/prime_rl/configs/shared.py; docs/prime-rl/main-*.facts.json).
PRIME_RL_MAIN_WAIT_FOR_READY_TIMEOUT = 3600.0

#: Prime-RL's ``weight_broadcast.type`` -> this package's ``DynamoClientConfig.weight_broadcast``.
_BROADCAST_TYPES = {"nccl": "nccl", "nixl": "nixl", "filesystem": "filesystem"}


def _get(obj: Any, name: str) -> Any:
    """A field of a config object or mapping (None when absent): Prime-RL's objects, duck-typed."""
    if obj is None:
        return None
    try:
        if isinstance(obj, Mapping):
            return obj.get(name)
        return getattr(obj, name, None)
    except Exception as exc:  # a property of someone else's config object: refuse, say which
        raise ConfigError(
            f"reading {name!r} of the {type(obj).__name__} config raised {type(exc).__name__}; "
            "expected a plain value"
        ) from None


def _url_text(value: Any, where: str) -> str:
    """A discovery URL given as text or as a URL object (pydantic's AnyHttpUrl, httpx.URL)."""
    if isinstance(value, str):
        return value
    if type(value).__name__ in ("AnyHttpUrl", "HttpUrl", "AnyUrl", "Url", "URL"):
        return str(value)
    raise ConfigError(
        f"{where} must be a URL string such as http://frontend:8001; found {type(value).__name__}"
    )


def _mapping(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where} must map header names to strings; found {type(value).__name__}")
    bad = [k for k, v in value.items() if not isinstance(k, str) or not isinstance(v, str)]
    if bad:
        raise ConfigError(f"{where} must map header names to strings; bad entries: {bad}")
    return dict(value)


def client_config_from_prime_rl(
    client_config: Any = None,
    *,
    model_name: str | None = None,
    inference_world_size: int | None = None,
    weight_broadcast: Any = None,
    **settings: Any,
) -> DynamoClientConfig:
    """This package's validated config from Prime-RL's ``client`` (and ``weight_broadcast``) config.

    Read by duck typing from objects or mappings: the discovery URL as
    ``discovery_url_from_prime_rl`` finds it, ``api_key_var`` (its value ``EMPTY`` or unset: no key),
    ``headers``, ``headers_from_env`` (header -> environment variable), ``wait_for_ready_timeout``;
    ``weight_broadcast.inference_world_size`` and ``weight_broadcast.type``. Plain keyword
    arguments win: ``discovery_url`` and any ``DynamoClientConfig`` field (``api_key``,
    ``admin_allowed_hosts``, ``poll_interval``, ...). ConfigError names what is missing.
    """
    settings = dict(settings)
    url = discovery_url_from_prime_rl(client_config, settings.pop("discovery_url", None))
    world = inference_world_size
    if world is None:
        world = _get(weight_broadcast, "inference_world_size")
    if world is None:
        raise ConfigError(
            "RANK-2: Dynamo inference requires an explicit inference_world_size (pass "
            "inference_world_size=..., or set weight_broadcast.inference_world_size); it is never "
            "derived from the listing",
            requirement="RANK-2",
        )
    kind = _get(weight_broadcast, "type")
    if kind is not None and (not isinstance(kind, str) or kind not in _BROADCAST_TYPES):
        found = repr(kind) if isinstance(kind, str) else f"a {type(kind).__name__}"
        raise ConfigError(
            f"weight_broadcast.type must be one of {sorted(_BROADCAST_TYPES)}; found {found}"
        )
    values: dict[str, Any] = {
        "dynamo_discovery_url": url,
        "inference_world_size": world,
        "model": model_name,
        "weight_broadcast": _BROADCAST_TYPES[kind] if kind is not None else "nccl",
        **admin_settings_from_prime_rl(client_config),
    }
    values.update(settings)
    try:
        return DynamoClientConfig(**values)
    except TypeError as exc:  # an unknown keyword: say which settings exist
        known = ", ".join(sorted(DynamoClientConfig.__dataclass_fields__))
        raise ConfigError(f"{exc}; the settings are: discovery_url, {known}") from None


def admin_settings_from_prime_rl(client_config: Any, *, main: bool | None = None) -> dict[str, Any]:
    """The credentials and the wait of a Prime-RL ``client`` config, checked: ``api_key_var``,
    ``headers``, ``headers_from_env``, ``discovery_timeout`` (``wait_for_ready_timeout``, else
    the generation's default: main's when ``main`` or the config has main's shape) and, when set,
    ``admin_allowed_hosts`` (the package's extra, on ``client`` or ``client.dynamo``)."""
    api_key_var = _get(client_config, "api_key_var")
    if api_key_var is not None and not isinstance(api_key_var, str):
        raise ConfigError(
            "client.api_key_var must name an environment variable (a string such as "
            f"{PRIME_RL_API_KEY_VAR!r}); found a {type(api_key_var).__name__}"
        )
    timeout = _get(client_config, "wait_for_ready_timeout")
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        found = f"{timeout!r} (a {type(timeout).__name__})"
        raise ConfigError(
            f"client.wait_for_ready_timeout must be a number of seconds > 0; found {found}"
        )
    if main is None:
        main = is_main_dynamo(client_config)
    default = PRIME_RL_MAIN_WAIT_FOR_READY_TIMEOUT if main else PRIME_RL_WAIT_FOR_READY_TIMEOUT
    values: dict[str, Any] = {
        "api_key_var": PRIME_RL_API_KEY_VAR if api_key_var is None else api_key_var,
        "headers": _mapping(_get(client_config, "headers"), "client.headers"),
        "headers_from_env": _mapping(
            _get(client_config, "headers_from_env"), "client.headers_from_env"
        ),
        "discovery_timeout": default if timeout is None else timeout,
    }
    allowed = _get(client_config, "admin_allowed_hosts")
    if allowed is None:  # the patch of docs/prime-rl/73164c322.patch adds it to DynamoConfig
        allowed = _get(_get(client_config, "dynamo"), "admin_allowed_hosts")
    if allowed is not None:
        values["admin_allowed_hosts"] = allowed
    return values


def is_main_dynamo(client_config: Any) -> bool:
    """Whether ``client.dynamo`` has Prime-RL main's shape (``DynamoConfig`` with ``enabled``)."""
    dynamo = _get(client_config, "dynamo")
    if dynamo is None:
        return False
    if isinstance(dynamo, Mapping):
        return "enabled" in dynamo
    return hasattr(dynamo, "enabled")


def discovery_url_from_prime_rl(client_config: Any, given: Any = None) -> str:
    """The Dynamo discovery URL of a Prime-RL ``client`` config: ``given`` (a keyword) wins, then
    ``client.dynamo.discovery_url`` or the older ``client.dynamo_discovery_url`` (they must agree);
    with neither, Prime-RL main's rule: ``client.base_url`` with its port + 1 (path, query and
    user info dropped), logged with a warning. ``client.dynamo.enabled = false`` is refused."""
    dynamo = _get(client_config, "dynamo")
    if given is None and is_main_dynamo(client_config) and _get(dynamo, "enabled") is not True:
        raise ConfigError(
            "client.dynamo.enabled is "
            f"{_get(dynamo, 'enabled')!r}: Dynamo discovery is off, so Prime-RL main uses its "
            "own AdminPlane over client.admin_base_url; set client.dynamo.enabled = true"
        )
    urls = {
        "discovery_url (keyword)": given,
        "client.dynamo.discovery_url": _get(dynamo, "discovery_url"),
        "client.dynamo_discovery_url": _get(client_config, "dynamo_discovery_url"),
    }
    found = {k: _url_text(v, k) for k, v in urls.items() if v is not None}
    if "discovery_url (keyword)" in found:
        return found["discovery_url (keyword)"]
    if len(set(found.values())) > 1:
        raise ConfigError(
            "client.dynamo.discovery_url and client.dynamo_discovery_url disagree: "
            + ", ".join(f"{k}={shown_url(v)!r}" for k, v in found.items())
            + " (user info and queries are not shown)"
        )
    if found:
        return next(iter(found.values()))
    if is_main_dynamo(client_config):
        return _derived_discovery_url(_get(client_config, "base_url"))
    raise ConfigError(
        "no Dynamo discovery URL: set client.dynamo.discovery_url (Prime-RL main and "
        "73164c322), client.dynamo_discovery_url (older) or pass discovery_url=..."
    )


def _derived_discovery_url(base_url: Any) -> str:
    """Prime-RL main's derivation: ``client.base_url`` with port + 1 and no path."""
    text = _url_text(base_url if base_url is not None else "", "client.base_url")
    try:
        url = httpx.URL(text)
    except httpx.InvalidURL:
        url = None
    if url is None or url.scheme not in ("http", "https") or not url.host:
        raise ConfigError(
            "client.dynamo has no discovery_url and client.base_url is not an http(s) URL to "
            f"derive it from (found {shown_url(text)!r}); set client.dynamo.discovery_url"
        )
    if url.port is None or url.port >= 65535:
        raise ConfigError(
            f"client.dynamo has no discovery_url and client.base_url {shown_url(text)!r} has no "
            "port to add 1 to; set client.dynamo.discovery_url"
        )
    derived = str(
        url.copy_with(port=url.port + 1, path="", query=None, fragment=None, userinfo=b"")
    )
    _log.warning(
        "client.dynamo.discovery_url is unset: using %s (client.base_url's port + 1, Prime-RL "
        "main's rule); Dynamo's docs advise setting the RL listener's URL explicitly rather "
        "than deriving it",
        derived,
    )
    return derived


def nccl_convention_from_prime_rl(client_config: Any, given: Any = None) -> tuple[Convention, str]:
    """The NCCL convention and where it came from: the keyword ``given``, else
    ``client.dynamo.nccl_convention`` (the field the patch of docs/prime-rl/73164c322.patch adds),
    else the generation's own: ``prime-nccl`` for Prime-RL main's shape (``client.dynamo`` with
    ``enabled``: its Dynamo NCCL is Prime's own broadcaster), ``vllm-native-nccl`` for
    73164c322's (``client.dynamo`` without ``enabled``: vLLM's native engine, owned by the
    trainer), else ``prime-nccl`` (``client.dynamo_discovery_url``, or no Prime-RL config)."""
    field = _get(_get(client_config, "dynamo"), "nccl_convention")
    if given is not None:
        value, source = given, "nccl_convention="
    elif field is not None:
        value, source = field, "client.dynamo.nccl_convention"
    elif is_main_dynamo(client_config):
        value, source = Convention.PRIME_NCCL, "Prime-RL main's client.dynamo"
    elif _get(client_config, "dynamo") is not None:
        value, source = Convention.VLLM_NATIVE_NCCL, "73164c322's client.dynamo"
    else:
        value, source = Convention.PRIME_NCCL, "the default"
    try:
        convention = Convention.parse(value)
    except (ConfigError, ValueError) as exc:
        raise ConfigError(f"{source}: {exc}") from None
    if convention is Convention.NIXL:
        raise ConfigError(f"{source} must be prime-nccl or vllm-native-nccl, not nixl")
    return convention, source


def trainer_config_from_prime_rl(weight_broadcast: Any) -> tuple[DynamoClientConfig, str, int]:
    """(this package's config, master address, master port) from Prime-RL's trainer
    ``weight_broadcast`` config (type ``nccl`` with a ``dynamo`` section): the trainer's half of
    vLLM's native NCCL (prime_rl_dynamo.native_nccl)."""
    dynamo = _get(weight_broadcast, "dynamo")
    if dynamo is None:
        raise ConfigError(
            "the trainer's Dynamo native NCCL needs weight_broadcast.dynamo (discovery_url, "
            "model_name, ...)"
        )
    timeout = _get(weight_broadcast, "timeout")
    config = client_config_from_prime_rl(
        dynamo,
        discovery_url=_get(dynamo, "discovery_url"),
        model_name=_get(dynamo, "model_name"),
        inference_world_size=_get(weight_broadcast, "inference_world_size"),
        **({} if timeout is None else {"discovery_timeout": timeout, "update_timeout": timeout}),
    )
    config = dataclasses.replace(config, weight_broadcast="vllm-native-nccl")
    host = _get(weight_broadcast, "host")
    port = _get(weight_broadcast, "port")
    return config, "localhost" if host is None else host, 29501 if port is None else port
