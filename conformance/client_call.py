"""The calling contract of the client profile: what a client under test is given, and the one
structured thing it may hand back.

* Python callable (``--client module:function``)::

      function(discovery_url: str, inference_world_size: int, convention: str,
               credentials: Credentials, *, model: str | None, master_address: str,
               master_port: int, timeout: float) -> object

* Shell command (``--client-cmd CMD``, run with ``sh -c``): the same values in the environment
  variables of :meth:`ClientCall.to_env` (``CONFORMANCE_DISCOVERY_URL`` ...);
  :meth:`ClientCall.from_env` reads them back.

Both forms also get ``CONFORMANCE_MAX_BODY_BYTES`` (the listing size cap the operator configured,
POLL-3), ``CONFORMANCE_POLL_INTERVAL`` (seconds between polls of a pending listing: each
scenario's deadline is derived from it) and ``CONFORMANCE_RESULT_FILE`` in their environment: a path where a client that refuses
writes one JSON object, its **result** (:func:`write_result`): ``{"requirement": ID}`` naming the
requirement it refused under, and, when it gave up at its deadline, ``"world_size_sum"`` and
``"inference_world_size"`` (what the last snapshot lacked, POLL-5). The suite decides on the wire,
the exit status and this object only; the wording of an error or of stderr never changes a verdict.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from conformance.options import DEFAULT_CLIENT
from prime_rl_dynamo.defaults import NO_API_KEY

__all__ = [
    "DEFAULT_CLIENT",
    "ENV_PREFIX",
    "MAX_BODY_ENV",
    "POLL_INTERVAL_ENV",
    "RESULT_ENV",
    "SECRET_ENV",
    "ClientCall",
    "ClientUnderTest",
    "Credentials",
    "arguments_from_env",
    "load_client",
    "read_result",
    "write_result",
]

ENV_PREFIX = "CONFORMANCE_"
#: The environment variable the suite fills with a secret for ``headers_from_env``.
SECRET_ENV = "CONFORMANCE_SECRET_TOKEN"
#: Where a refusing client writes its result (a JSON object), both forms.
RESULT_ENV = "CONFORMANCE_RESULT_FILE"
#: The listing size cap the operator configured (bytes), both forms.
MAX_BODY_ENV = "CONFORMANCE_MAX_BODY_BYTES"
#: The poll interval (seconds) the scenarios' deadlines are derived from, both forms.
POLL_INTERVAL_ENV = "CONFORMANCE_POLL_INTERVAL"


class UsageError(KeyError):
    """The CONFORMANCE_* environment lacks a variable (the command was not run by the suite)."""


@dataclass(frozen=True)
class Credentials:
    """What the client must attach to admin calls, and where it may."""

    api_key: str | None = None  # sent as "Authorization: Bearer <api_key>"; "EMPTY": no key
    headers: dict[str, str] = field(default_factory=dict)  # static headers
    headers_from_env: dict[str, str] = field(default_factory=dict)  # header -> env variable
    allowed_hosts: tuple[str, ...] | None = None  # None: no allow-list (every admin host)

    def expected_headers(self) -> dict[str, str]:
        """Lower-cased header -> value every admin call to an allowed host must carry."""
        out = {k.lower(): v for k, v in self.headers.items()}
        for header, var in self.headers_from_env.items():
            out[header.lower()] = os.environ.get(var, "")
        if self.api_key is not None and self.api_key != NO_API_KEY:
            out["authorization"] = f"Bearer {self.api_key}"
        return out

    def absent_headers(self) -> tuple[str, ...]:
        """Lower-cased headers that must not be sent: ``EMPTY`` is no key (CRED-2, Prime-RL's)."""
        return ("authorization",) if self.api_key == NO_API_KEY else ()

    def allows(self, host: str) -> bool:
        """Whether credentials may go to ``host`` (SPEC CRED-3: exact, ``*.suffix``, CIDR)."""
        if self.allowed_hosts is None:
            return True
        from prime_rl_dynamo.credentials import host_allowed

        return host_allowed(host, self.allowed_hosts)


@dataclass(frozen=True)
class ClientCall:
    """The arguments of one call of a client under test (both forms of the contract)."""

    discovery_url: str
    inference_world_size: int
    convention: str
    credentials: Credentials
    model: str | None
    master_address: str
    master_port: int
    timeout: float
    #: The listing size cap the operator configured (POLL-3); None: the client's own default.
    max_body_bytes: int | None = None
    #: Where to write the result of a refusal (:func:`write_result`); None: nowhere.
    result_file: str | None = None
    #: The poll interval to use (seconds; each scenario's deadline allows for it); None: the
    #: client's own.
    poll_interval: float | None = None

    def to_env(self) -> dict[str, str]:
        """The CONFORMANCE_* variables of ``--client-cmd`` (unset ones are left out)."""
        creds = self.credentials
        env = {
            f"{ENV_PREFIX}DISCOVERY_URL": self.discovery_url,
            f"{ENV_PREFIX}INFERENCE_WORLD_SIZE": str(self.inference_world_size),
            f"{ENV_PREFIX}CONVENTION": self.convention,
            f"{ENV_PREFIX}MODEL": self.model or "",
            f"{ENV_PREFIX}MASTER_ADDRESS": self.master_address,
            f"{ENV_PREFIX}MASTER_PORT": str(self.master_port),
            f"{ENV_PREFIX}TIMEOUT": str(self.timeout),
            f"{ENV_PREFIX}HEADERS": json.dumps(creds.headers),
            f"{ENV_PREFIX}HEADERS_FROM_ENV": json.dumps(creds.headers_from_env),
        }
        if creds.api_key is not None:
            env[f"{ENV_PREFIX}API_KEY"] = creds.api_key
        if creds.allowed_hosts is not None:
            env[f"{ENV_PREFIX}ALLOWED_HOSTS"] = json.dumps(list(creds.allowed_hosts))
        env.update(self.side_env())
        return env

    def side_env(self) -> dict[str, str]:
        """The variables both forms get: the size cap, the poll interval and the result file."""
        env = {}
        if self.max_body_bytes is not None:
            env[MAX_BODY_ENV] = str(self.max_body_bytes)
        if self.poll_interval is not None:
            env[POLL_INTERVAL_ENV] = str(self.poll_interval)
        if self.result_file is not None:
            env[RESULT_ENV] = self.result_file
        return env

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ClientCall:
        """The call a ``--client-cmd`` process was given (UsageError names a missing variable)."""
        env = os.environ if environ is None else environ

        def get(name: str) -> str:
            try:
                return env[ENV_PREFIX + name]
            except KeyError:
                raise UsageError(
                    f"{ENV_PREFIX}{name} is not set (run me through --client-cmd)"
                ) from None

        allowed = env.get(ENV_PREFIX + "ALLOWED_HOSTS")
        creds = Credentials(
            api_key=env.get(ENV_PREFIX + "API_KEY"),
            headers=json.loads(env.get(ENV_PREFIX + "HEADERS", "{}")),
            headers_from_env=json.loads(env.get(ENV_PREFIX + "HEADERS_FROM_ENV", "{}")),
            allowed_hosts=tuple(json.loads(allowed)) if allowed is not None else None,
        )
        cap = env.get(MAX_BODY_ENV)
        return cls(
            discovery_url=get("DISCOVERY_URL"),
            inference_world_size=int(get("INFERENCE_WORLD_SIZE")),
            convention=get("CONVENTION"),
            credentials=creds,
            model=env.get(ENV_PREFIX + "MODEL") or None,
            master_address=get("MASTER_ADDRESS"),
            master_port=int(get("MASTER_PORT")),
            timeout=float(get("TIMEOUT")),
            max_body_bytes=int(cap) if cap else None,
            result_file=env.get(RESULT_ENV) or None,
            poll_interval=_seconds(env.get(POLL_INTERVAL_ENV)),
        )

    def arguments(self) -> tuple[tuple[str, int, str, Credentials], dict[str, Any]]:
        """The callable form's (args, kwargs): ``func(*args, **kwargs)``."""
        args = (self.discovery_url, self.inference_world_size, self.convention, self.credentials)
        kwargs = {
            "model": self.model,
            "master_address": self.master_address,
            "master_port": self.master_port,
            "timeout": self.timeout,
        }
        return args, kwargs

    def with_side_env(self, environ: Mapping[str, str] | None = None) -> ClientCall:
        """This call with the cap, the poll interval and the result file read from the
        environment (callables)."""
        env = os.environ if environ is None else environ
        cap = env.get(MAX_BODY_ENV)
        return _replace(
            self,
            max_body_bytes=int(cap) if cap else self.max_body_bytes,
            result_file=env.get(RESULT_ENV) or self.result_file,
            poll_interval=_seconds(env.get(POLL_INTERVAL_ENV)) or self.poll_interval,
        )


def _seconds(value: str | None) -> float | None:
    return float(value) if value else None


def _replace(call: ClientCall, **changes: Any) -> ClientCall:
    values = {f.name: getattr(call, f.name) for f in fields(call)}
    values.update(changes)
    return ClientCall(**values)


def arguments_from_env(
    environ: Mapping[str, str] | None = None,
) -> tuple[tuple[str, int, str, Credentials], dict[str, Any]]:
    """The calling contract's (args, kwargs) from the CONFORMANCE_* environment of --client-cmd.

    Lets a command-line client reuse a Python implementation: ``func(*args, **kwargs)``.
    """
    return ClientCall.from_env(environ).arguments()


def write_result(requirement: str, environ: Mapping[str, str] | None = None, **found: Any) -> bool:
    """Write a refusal's result to ``CONFORMANCE_RESULT_FILE`` (when the suite set it).

    ``requirement``: the requirement ID the client refused under (``"DIALECT-1"``, ``"POLL-5"``
    ...); ``found``: what SPEC asks the error to say, e.g. ``world_size_sum=6,
    inference_world_size=8`` at a deadline (POLL-5). Returns whether a file was written.
    """
    env = os.environ if environ is None else environ
    path = env.get(RESULT_ENV)
    if not path:
        return False
    with open(path, "w", encoding="utf-8") as out:
        json.dump({"requirement": requirement, **found}, out)
    return True


def read_result(path: str) -> dict[str, Any] | None:
    """The result a client wrote at ``path`` (None: none, or not one JSON object)."""
    try:
        with open(path, encoding="utf-8") as src:
            value = json.load(src)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


ClientCallable = Callable[..., object]


@dataclass(frozen=True)
class ClientUnderTest:
    """A client given by import path or by shell command."""

    description: str
    func: ClientCallable | None = None
    command: str | None = None


def load_client(import_path: str | None, command: str | None) -> ClientUnderTest:
    """Resolve ``module:function`` (or take the command); default: the project's own client."""
    from conformance.registry import CheckError

    if command:
        return ClientUnderTest(description=f"command {command!r}", command=command)
    path = import_path or DEFAULT_CLIENT
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise CheckError(f"--client expects MODULE:FUNCTION, got {path!r}")
    try:
        module = importlib.import_module(module_name)
        func = getattr(module, attr)
    except (ImportError, AttributeError) as exc:
        raise CheckError(f"cannot load the client {path!r}: {exc}") from exc
    if not callable(func):
        raise CheckError(f"the client {path!r} is not callable")
    return ClientUnderTest(description=path, func=func)
