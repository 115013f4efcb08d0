"""Prime-RL's knobs for Dynamo-managed inference, and the rules that make a configuration usable.

Exactly one inference source (Dynamo discovery, a static admin URL list, elastic DNS discovery);
Dynamo needs an explicit inference_world_size; the "at least 2 local GPUs" NCCL check is skipped
when that world size is external. Plain dataclasses: the core takes no pydantic dependency.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

import httpx

from prime_rl_dynamo.admin import AdminPool, Credentials
from prime_rl_dynamo.client import (
    DEFAULT_MAX_BODY_BYTES,
    MIN_INTERVAL,
    DiscoveryClient,
    PollingPolicy,
    ReadinessPolicy,
    normalize_discovery_url,
)
from prime_rl_dynamo.defaults import (
    ADMIN_TIMEOUT,
    API_KEY_VAR,
    DISCOVERY_TIMEOUT,
    POLL_INTERVAL,
    REQUEST_TIMEOUT,
    UPDATE_TIMEOUT,
)
from prime_rl_dynamo.errors import ConfigError
from prime_rl_dynamo.plan import WEIGHT_BROADCAST_TYPES, Convention

__all__ = [
    "WEIGHT_BROADCAST_TYPES",
    "DynamoClientConfig",
    "ElasticConfig",
    "check_local_gpus",
    "local_gpu_check_applies",
]


@dataclass(frozen=True)
class ElasticConfig:
    """Elastic DNS discovery: every address of ``hostname`` serving the model joins the pool."""

    hostname: str
    port: int = 8000


@dataclass(frozen=True)
class DynamoClientConfig:
    """The client side of a Prime-RL run against Dynamo (validated on construction).

    ``api_key`` wins over ``api_key_var`` (the environment variable read otherwise; ``"EMPTY"``
    or unset means no key). ``headers_from_env`` maps header name -> environment variable.
    ``admin_allowed_hosts`` None means credentials go to every discovered engine; it also
    governs ``discovery_credentials``.
    """

    dynamo_discovery_url: str | None = None
    admin_base_url: tuple[str, ...] | None = None
    elastic: ElasticConfig | None = None
    inference_world_size: int | None = None
    model: str | None = None
    components: tuple[str, ...] | None = None
    weight_broadcast: str = "nccl"
    trainer_world_size: int = 1
    discovery_timeout: float = DISCOVERY_TIMEOUT
    request_timeout: float = REQUEST_TIMEOUT
    poll_interval: float = POLL_INTERVAL
    admin_timeout: float = ADMIN_TIMEOUT
    update_timeout: float = UPDATE_TIMEOUT
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    api_key_var: str | None = API_KEY_VAR
    api_key: str | None = field(default=None, repr=False)
    headers_from_env: Mapping[str, str] = field(default_factory=dict)
    admin_allowed_hosts: tuple[str, ...] | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_concurrency: int = 16
    trust_env: bool = False
    #: Send the credentials to the RL listener too (Dynamo's has no auth; a gateway in front may).
    discovery_credentials: bool = False

    def __post_init__(self) -> None:
        # Lists from TOML/JSON become tuples, so the frozen config stays hashable-ish and immutable.
        for name in ("admin_base_url", "components", "admin_allowed_hosts"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise ConfigError(f"{name} must be a list of strings, not the string {value!r}")
            if value is not None:
                object.__setattr__(self, name, tuple(value))
        problems = self._problems()
        if problems:
            raise ConfigError(
                "invalid Dynamo client configuration:\n  " + "\n  ".join(p.text for p in problems),
                requirement=next((p.requirement for p in problems if p.requirement), None),
            )

    def _problems(self) -> list[_Problem]:
        problems = _Problems()
        sources = [
            name
            for name, on in (
                ("dynamo_discovery_url", self.dynamo_discovery_url is not None),
                ("admin_base_url", bool(self.admin_base_url)),
                ("elastic", self.elastic is not None),
            )
            if on
        ]
        if len(sources) != 1:
            found = " and ".join(sources) if sources else "none of them"
            problems.add(
                "exactly one inference source is needed (dynamo_discovery_url, admin_base_url or "
                f"elastic); found {found}"
            )
        if self.dynamo_discovery_url is not None:
            try:
                normalize_discovery_url(self.dynamo_discovery_url)
            except ConfigError as exc:
                problems.refused(exc, "dynamo_discovery_url")
            if self.inference_world_size is None:
                problems.add(
                    "Dynamo inference requires an explicit inference_world_size (the sum of "
                    "the engines' world sizes the run expects); it is not derived from the listing",
                    requirement="RANK-2",
                )
        if self.inference_world_size is not None and (
            isinstance(self.inference_world_size, bool)
            or not isinstance(self.inference_world_size, int)
            or self.inference_world_size < 1
        ):
            problems.add(
                f"inference_world_size must be an integer >= 1; found {self.inference_world_size!r}",
                requirement="RANK-2",
            )
        if self.weight_broadcast not in WEIGHT_BROADCAST_TYPES:
            problems.add(
                f"weight_broadcast must be one of {sorted(WEIGHT_BROADCAST_TYPES)}; found {self.weight_broadcast!r}"
            )
        elif (
            WEIGHT_BROADCAST_TYPES[self.weight_broadcast] is Convention.VLLM_NATIVE_NCCL
            and self.trainer_world_size != 1
        ):
            problems.add(
                f"vllm-native-nccl admits only a single-process trainer at rank 0; "
                f"trainer_world_size is {self.trainer_world_size}",
                requirement="RANK-4",
            )
        if not isinstance(self.trainer_world_size, int) or self.trainer_world_size < 1:
            problems.add(
                f"trainer_world_size must be an integer >= 1; found {self.trainer_world_size!r}"
            )
        for url in self.admin_base_url or ():
            try:
                AdminPool.check_url(url)
            except ConfigError as exc:
                problems.refused(exc, "admin_base_url")
        for name in (
            "discovery_timeout",
            "request_timeout",
            "poll_interval",
            "admin_timeout",
            "update_timeout",
        ):
            value = getattr(self, name)
            # At least the client's shortest interval: below it a poll or retry loop runs tight.
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value < MIN_INTERVAL
            ):
                problems.add(
                    f"{name} must be a finite number of seconds >= {MIN_INTERVAL}; found {value!r}"
                )
        for name in ("max_body_bytes", "max_concurrency"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                problems.add(f"{name} must be an integer >= 1; found {value!r}")
        if self.components is not None and not self.components:
            problems.add("components, when set, must name at least one component")
        if self.elastic is not None and not self.elastic.hostname:
            problems.add("elastic.hostname must be a non-empty host name")
        try:
            Credentials(allowed_hosts=self.admin_allowed_hosts)
        except ConfigError as exc:
            problems.refused(exc, "admin_allowed_hosts")
        try:
            # The key and static headers are checked now (the message never shows them); a key
            # from api_key_var is checked when the credentials are read.
            Credentials(api_key=self.api_key, headers=dict(self.headers))
        except ConfigError as exc:
            problems.refused(exc)
        return problems

    # --- derived views ---------------------------------------------------------------------------

    @property
    def inference_source(self) -> str:
        """``"dynamo"``, ``"static"`` or ``"elastic"``."""
        if self.dynamo_discovery_url is not None:
            return "dynamo"
        return "static" if self.admin_base_url else "elastic"

    @property
    def is_dynamo(self) -> bool:
        """Whether engines come from Dynamo discovery."""
        return self.inference_source == "dynamo"

    @property
    def convention(self) -> Convention | None:
        """The rank-numbering convention of the weight broadcast (None for filesystem)."""
        return WEIGHT_BROADCAST_TYPES[self.weight_broadcast]

    def credentials(self, environ: Mapping[str, str] | None = None) -> Credentials:
        """The credentials admin calls carry (the API key from ``api_key`` or ``api_key_var``)."""
        if self.api_key is not None:
            return Credentials(
                api_key=self.api_key,
                headers=dict(self.headers),
                headers_from_env=dict(self.headers_from_env),
                allowed_hosts=self.admin_allowed_hosts,
            )
        return Credentials.from_env(
            api_key_var=self.api_key_var,
            headers=self.headers,
            headers_from_env=self.headers_from_env,
            allowed_hosts=self.admin_allowed_hosts,
            environ=environ,
        )

    def discovery_client(
        self,
        environ: Mapping[str, str] | None = None,
        *,
        policy: ReadinessPolicy | None = None,
        polling: PollingPolicy | None = None,
        **options: Any,
    ) -> DiscoveryClient:
        """A DiscoveryClient with this configuration.

        ``policy`` and ``polling`` replace :meth:`readiness_policy` and :meth:`polling_policy`
        (``dataclasses.replace(config.polling_policy(), poll_interval=0.1)``); ``options`` are
        DiscoveryClient's other keywords (``progress``, ``transport``, ...) and win over this
        configuration's.
        """
        if self.dynamo_discovery_url is None:
            raise ConfigError(
                f"no dynamo_discovery_url: the inference source is {self.inference_source}"
            )
        headers: dict[str, str] = {}
        if self.discovery_credentials:
            creds = self.credentials(environ)
            host = httpx.URL(normalize_discovery_url(self.dynamo_discovery_url)).host
            if not creds.allows(host):
                raise ConfigError(
                    f"CRED-3: discovery_credentials is set but the discovery host {host} is outside "
                    f"the admin host allow-list {list(creds.allowed_hosts or ())}",
                    requirement="CRED-3",
                )
            headers = creds.resolve(environ)
        kwargs: dict[str, Any] = {
            "max_body_bytes": self.max_body_bytes,
            "trust_env": self.trust_env,
            "headers": headers,
            **options,
        }
        return DiscoveryClient(
            self.dynamo_discovery_url,
            self.readiness_policy() if policy is None else policy,
            self.polling_policy() if polling is None else polling,
            **kwargs,
        )

    def readiness_policy(self) -> ReadinessPolicy:
        """What "ready" means for this run: W, the model, the components, and world sizes
        required exactly when the transfer plans ranks."""
        return ReadinessPolicy(
            self.inference_world_size,
            model=self.model,
            components=self.components,
            require_world_size=self.convention is not None,
        )

    def polling_policy(self) -> PollingPolicy:
        """How discovery polls for this run: its deadline, request timeout and interval."""
        return PollingPolicy(
            timeout=self.discovery_timeout,
            request_timeout=self.request_timeout,
            poll_interval=self.poll_interval,
        )

    def pool_options(self, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
        """Keyword arguments for AdminPool constructors (credentials, timeouts, concurrency)."""
        return {
            "credentials": self.credentials(environ),
            "timeout": self.admin_timeout,
            "update_timeout": self.update_timeout,
            "max_concurrency": self.max_concurrency,
            "environ": environ,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DynamoClientConfig:
        """Build from parsed TOML/JSON; unknown keys are refused rather than silently ignored."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown Dynamo client settings: {', '.join(unknown)}")
        values = dict(data)
        if isinstance(values.get("elastic"), Mapping):
            values["elastic"] = ElasticConfig(**values["elastic"])
        return cls(**values)


def local_gpu_check_applies(config: DynamoClientConfig, *, has_local_inference: bool) -> bool:
    """Whether Prime-RL's "NCCL needs at least 2 local GPUs" check applies to this run.

    It applies to NCCL broadcasts only, and not when inference is external (no local inference
    section) with an explicit inference_world_size: the inference ranks are then remote.
    """
    if config.convention not in (Convention.PRIME_NCCL, Convention.VLLM_NATIVE_NCCL):
        return False
    external = not has_local_inference and config.inference_world_size is not None
    return not external


def check_local_gpus(
    config: DynamoClientConfig,
    *,
    num_train_gpus: int,
    num_infer_gpus: int,
    has_local_inference: bool,
) -> None:
    """Raise ConfigError when the local-GPU check applies and fewer than 2 local GPUs are used."""
    if not local_gpu_check_applies(config, has_local_inference=has_local_inference):
        return
    local = num_train_gpus + (num_infer_gpus if has_local_inference else 0)
    if local < 2:
        raise ConfigError(
            f"NCCL weight broadcast requires at least 2 local GPUs (found {local}) or an explicit "
            "external inference_world_size"
        )


class _Problem(NamedTuple):
    """One reason a configuration is unusable: its line and the requirement it breaks, if any."""

    requirement: str | None
    text: str


class _Problems(list[_Problem]):
    def add(self, text: str, *, requirement: str | None = None) -> None:
        self.append(_Problem(requirement, f"{requirement}: {text}" if requirement else text))

    def refused(self, exc: ConfigError, setting: str | None = None) -> None:
        """A check's refusal, under the setting's name when it names one."""
        text = f"{setting}: {exc}" if setting else str(exc)
        self.append(_Problem(exc.requirement, text))
