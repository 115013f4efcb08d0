"""Driving a client under test: the calling contract, one run's record, the pinned scenarios and
their fault tables, and running the client against reference fleets and real Dynamo.

The calling contract (also in docs/conformance.md):

* Python callable (``--client module:function``)::

      function(discovery_url: str, inference_world_size: int, convention: str,
               credentials: Credentials, *, model: str | None, master_address: str,
               master_port: int, timeout: float) -> object

* Shell command (``--client-cmd CMD``, run with ``sh -c``): the same values in environment
  variables ``CONFORMANCE_DISCOVERY_URL``, ``CONFORMANCE_INFERENCE_WORLD_SIZE``,
  ``CONFORMANCE_CONVENTION``, ``CONFORMANCE_MODEL`` (empty: any), ``CONFORMANCE_MASTER_ADDRESS``,
  ``CONFORMANCE_MASTER_PORT``, ``CONFORMANCE_TIMEOUT``, ``CONFORMANCE_API_KEY`` (unset: none),
  ``CONFORMANCE_HEADERS`` (JSON object), ``CONFORMANCE_HEADERS_FROM_ENV`` (JSON object: header
  -> variable name) and ``CONFORMANCE_ALLOWED_HOSTS`` (JSON array; unset: no allow-list).

The client discovers the engines at ``discovery_url`` (the full ``.../v1/rl/workers`` URL),
waits for a ready snapshot of ``model`` whose world sizes sum to ``inference_world_size``, and
initialises the weight broadcast on every engine in any wire form trainers use (direct
``POST {admin}/init_broadcaster``, ``collective_rpc`` ``init_broadcaster`` with keywords or
positional args, ``collective_rpc`` ``init_weight_transfer_engine``, or the engine route
``{system_url}/engine/update/init_weight_transfer_engine``; conformance/client_wire.py reads them
all) with ``master_address``/``master_port`` as the group's coordinates. It
may then pause, update weights and resume. Every admin call carries the credentials, subject to
the allow-list. It returns (exit 0) when done, raises (non-zero exit) when it refuses, and gives
up within ``timeout`` seconds.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from conformance.client_wire import InitRecord, Uninterpretable, init_record
from conformance.client_wire import is_init as _is_init
from conformance.client_wire import is_update as _is_update
from conformance.options import DEFAULT_CLIENT
from conformance.registry import CheckError, Skipped
from conformance.runner import ProfileContext, RunContext
from prime_rl_dynamo.defaults import NO_API_KEY
from prime_rl_dynamo.plan import Convention
from prime_rl_dynamo.recording import RecordedRequest
from prime_rl_dynamo.topology import ENGINE_ROUTE_VOCABULARY
from prime_rl_dynamo.wire import WorkerId

if TYPE_CHECKING:
    from prime_rl_dynamo.fleet import Fleet

__all__ = [
    "CONVENTIONS",
    "SCENARIOS",
    "SECRET_ENV",
    "ClientContext",
    "ClientRun",
    "ClientUnderTest",
    "Credentials",
    "arguments_from_env",
    "load_client",
]

CONVENTIONS = Convention.names()
ENV_PREFIX = "CONFORMANCE_"
#: The environment variable the suite fills with a secret for ``headers_from_env``.
SECRET_ENV = "CONFORMANCE_SECRET_TOKEN"


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
        """Whether credentials may go to ``host`` (exact names only in the suite's scenarios)."""
        return self.allowed_hosts is None or host in self.allowed_hosts


ClientCallable = Callable[..., object]


def arguments_from_env(
    environ: dict[str, str] | None = None,
) -> tuple[tuple[str, int, str, Credentials], dict[str, Any]]:
    """The calling contract's (args, kwargs) from the CONFORMANCE_* environment of --client-cmd.

    Lets a command-line client reuse a Python implementation: ``func(*args, **kwargs)``.
    """
    env = os.environ if environ is None else environ

    def get(name: str) -> str:
        try:
            return env[ENV_PREFIX + name]
        except KeyError:
            raise KeyError(f"{ENV_PREFIX}{name} is not set (run me through --client-cmd)") from None

    allowed = env.get(ENV_PREFIX + "ALLOWED_HOSTS")
    creds = Credentials(
        api_key=env.get(ENV_PREFIX + "API_KEY"),
        headers=json.loads(env.get(ENV_PREFIX + "HEADERS", "{}")),
        headers_from_env=json.loads(env.get(ENV_PREFIX + "HEADERS_FROM_ENV", "{}")),
        allowed_hosts=tuple(json.loads(allowed)) if allowed is not None else None,
    )
    args = (get("DISCOVERY_URL"), int(get("INFERENCE_WORLD_SIZE")), get("CONVENTION"), creds)
    kwargs = {
        "model": env.get(ENV_PREFIX + "MODEL") or None,
        "master_address": get("MASTER_ADDRESS"),
        "master_port": int(get("MASTER_PORT")),
        "timeout": float(get("TIMEOUT")),
    }
    return args, kwargs


@dataclass(frozen=True)
class ClientUnderTest:
    """A client given by import path or by shell command."""

    description: str
    func: ClientCallable | None = None
    command: str | None = None


def load_client(import_path: str | None, command: str | None) -> ClientUnderTest:
    """Resolve ``module:function`` (or take the command); default: the project's own client."""
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


@dataclass
class ClientRun:
    """One run of the client under test against one fleet, and what the fleet recorded."""

    name: str  # e.g. "pinned topology [2, 4, 1] (prime-nccl)" or "scenario error-then-ready"
    kind: str  # "rank" (judged on its plan), "refusal" (W off by one) or a scenario id
    convention: str
    inference_world_size: int  # what the client was told
    credentials: Credentials
    master_address: str
    master_port: int
    engines: list[dict[str, Any]] = field(default_factory=list)  # the plan's engines, canonical
    others: list[dict[str, Any]] = field(default_factory=list)  # listed, outside the plan
    admin_calls: list[RecordedRequest] = field(default_factory=list)  # admin + engine routes
    listing_calls: list[RecordedRequest] = field(default_factory=list)  # to the RL listener
    outcome: str = ""  # "returned" | "raised: ..." | "exit N: ..." | "timed out"
    returned: bool = False
    message: str = ""  # the client's whole error text (exception or stderr), for message checks
    exit_code: int | None = None  # shell commands only
    started: float = 0.0  # time.time() when the client was started
    elapsed: float = 0.0
    ready_at: float | None = None  # time.time() from which the fleet was ready (recoveries)
    ready_from_listing: int | None = None  # listing request number from which it was ready
    foreign: list[RecordedRequest] = field(default_factory=list)  # what reached another origin
    harness_problem: str = ""  # real Dynamo runs: why the fleet could not present the scenario
    log: list[dict[str, Any]] = field(default_factory=list)  # what the client logged (warnings+)

    @property
    def expect_refusal(self) -> bool:
        """Whether W was wrong on purpose (no engine may be initialised)."""
        return self.kind == "refusal"

    def init_calls(self) -> dict[str, list[RecordedRequest]]:
        """Engine key -> the broadcast-init calls it received (every wire form)."""
        out: dict[str, list[RecordedRequest]] = {}
        for r in self.admin_calls:
            if _is_init(r):
                out.setdefault(r.engine, []).append(r)
        return out

    def init_records(self) -> dict[str, list[InitRecord]]:
        """Engine key -> its inits read into one record; CheckError names a call none reads."""
        out: dict[str, list[InitRecord]] = {}
        for key, calls in self.init_calls().items():
            for call in calls:
                try:
                    out.setdefault(key, []).append(init_record(call))
                except Uninterpretable as exc:
                    raise CheckError(
                        f"{self.name}: the suite cannot read this init call, so it judges "
                        f"nothing about it: {exc}"
                    ) from None
        return out

    def first_init_time(self) -> float | None:
        """time.time() of the first broadcast init any engine received."""
        times = [r.time for calls in self.init_calls().values() for r in calls]
        return min(times) if times else None

    def updates(self) -> list[RecordedRequest]:
        """Weight-update calls (and pauses, which start one) in every wire form."""
        return [
            r
            for r in self.admin_calls
            if _is_update(r) or r.path.endswith("/pause") or r.path.endswith("pause_generation")
        ]


@dataclass(frozen=True)
class Scenario:
    """A pinned fleet that exercises one client requirement, run whatever the seed.

    ``expect`` is ``"complete"`` (the client must initialise the final fleet and return),
    ``"fatal"`` (refuse quickly: no init, no success) or ``"fail"`` (no success).
    """

    id: str
    requirement: str
    what: str
    topology: dict[str, Any]
    inference_world_size: int
    expect: str = "complete"
    faults: tuple[str, ...] = ()
    timeout: float = 5.0
    ready_after: float | None = None  # seconds after start (the topology's schedule)
    ready_from_listing: int | None = None  # listing request number (a fault's :COUNT)
    api_key: str | None = None  # None: a random key
    allowed_hosts: tuple[str, ...] | None = None
    userinfo_url: bool = False  # give the client a discovery URL carrying user info
    proxy: bool = False  # point the proxy variables at another origin
    engine_setup: tuple[tuple[str, str, Any], ...] = ()  # (engine key, attribute, value)


def _fleet(*engines: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "version": 1,
        "namespace": "dynamo",
        "model": "Qwen/Qwen3-0.6B",
        "seed": 11,
        "engines": list(engines),
        **extra,
    }


_A = {"component": "engine-a", "world_size": 2}
_B = {"component": "engine-b", "world_size": 1}
_BASE = _fleet(_A, _B)  # W = 3, heterogeneous
_OTHER = "other/model"


def _join(at: float, leave: str | None, join: str) -> list[dict[str, Any]]:
    events = [{"at": at, "action": "join", "engine": join}]
    if leave:
        events.insert(0, {"at": at, "action": "leave", "engine": leave})
    return events


#: Faults of the listing of the base fleet (W = 3): id, requirement, what the listing does, the
#: fault, and what the client must do (``fatal`` and ``fail`` within 3 s).
_LISTING_FAULTS = (
    (
        "schema-violation",
        "POLL-2",
        "a listing that breaks WORKER-9 (world_size out of range)",
        "break=WORKER-9",
        "fatal",
    ),
    (
        "duplicates",
        "POLL-2",
        "a listing with a duplicate identity (LIST-2)",
        "break=LIST-2",
        "fatal",
    ),
    ("forbidden", "POLL-2", "the listing answers 403", "status=403", "fatal"),
    ("oversized", "POLL-3", "a valid listing padded past 16 MiB", "oversized=16777216", "fail"),
    (
        "cross-origin-redirect",
        "POLL-4",
        "the listing answers 307 to the same URL under host localhost",
        "redirect-host=localhost",
        "fail",
    ),
    (
        "userinfo-listed",
        "CRED-1",
        "a listed admin_base_url carries user info (WORKER-8)",
        "break=WORKER-8",
        "fatal",
    ),
    ("version-2", "VERSION-2", "a listing with protocol_version 2", "version=2", "fatal"),
    (
        "unknown-fields",
        "BODY-5",
        "unknown fields at the top, in every worker and in every transport",
        "unknown-fields",
        "complete",
    ),
    (
        "smg-dialect",
        "DIALECT-1",
        "the SMG gateway's body at the same path",
        "break=DIALECT-1",
        "fatal",
    ),
)

#: Misbehaviour of one engine of the base fleet that must fail the client within 3 s: id,
#: requirement, what the engine does, and the engine's reference setting (key, attribute, value).
_ENGINE_FAULTS: tuple[tuple[str, str, str, tuple[str, str, Any]], ...] = (
    (
        "admin-redirect",
        "CRED-4",
        "engine-b's admin API answers 307 to the same URL under host localhost",
        ("dynamo.engine-b#0", "admin_redirect_host", "localhost"),
    ),
    (
        "resize-after-init",
        "TOPO-1",
        "engine-a reports world size 4 once it answered its init",
        ("dynamo.engine-a#0", "resize_after_init", 4),
    ),
    (
        "init-error-in-200",
        "ADMIN-3",
        'engine-b answers its init with 200 {"status": "error"} (as Dynamo\'s engine routes do)',
        ("dynamo.engine-b#0", "admin_error_in_200", True),
    ),
)


def _pending_until_join(
    id: str,
    requirement: str,
    what: str,
    w: int,
    listed: list[dict[str, Any]],
    joining: dict[str, Any],
    *,
    replaces: str | None = None,
) -> Scenario:
    """A fleet that is not ready for W while only ``listed`` is, until ``joining`` joins (and
    ``replaces`` leaves) after 0.4 s."""
    schedule = _join(0.4, replaces, f"dynamo.{joining['component']}#0")
    fleet = _fleet(*listed, {**joining, "present": False}, schedule=schedule)
    return Scenario(id, requirement, what, fleet, w, ready_after=0.4)


def _listing_fault(id: str, requirement: str, what: str, fault: str, expect: str) -> Scenario:
    timeout = 5.0 if expect == "complete" else 3.0
    return Scenario(id, requirement, what, _BASE, 3, expect, (fault,), timeout)


def _engine_fault(id: str, requirement: str, what: str, setup: tuple[str, str, Any]) -> Scenario:
    return Scenario(id, requirement, what, _BASE, 3, "fail", timeout=3.0, engine_setup=(setup,))


#: Every pinned scenario of the profile, one or more per client requirement.
SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "error-then-ready",
        "READY-1",
        "a matching worker carries error for the first 3 polls",
        _BASE,
        3,
        faults=("error-workers=1:3",),
        ready_from_listing=4,
    ),
    _pending_until_join(
        "no-admin-then-ready",
        "READY-2",
        "a matching worker has no admin URL until it is replaced after 0.4 s",
        4,
        [_A, _B, {"component": "engine-c", "world_size": 1, "admin": False}],
        {"component": "engine-d", "world_size": 1},
        replaces="dynamo.engine-c#0",
    ),
    _pending_until_join(
        "sum-then-ready",
        "READY-3",
        "world sizes sum to 3 of W = 5 until an engine joins after 0.4 s",
        5,
        [_A, _B],
        {"component": "engine-d", "world_size": 2},
    ),
    _pending_until_join(
        "none-then-ready",
        "READY-6",
        "only another model's worker is listed until the model's engine joins after 0.4 s",
        2,
        [{"component": "judge", "world_size": 1, "model": _OTHER}],
        {"component": "engine-d", "world_size": 2},
    ),
    Scenario(
        "mixed-fleet",
        "RANK-1",
        "prefix scope, a model-less worker, other models (with and without admin); canonical "
        "order differs from (component, instance_id); API key EMPTY",
        _fleet(
            {"component": "alpha", "namespace": "dynamo-b", "world_size": 1},
            {"component": "zeta", "namespace": "dynamo-a", "world_size": 2, "model": None},
            {"component": "judge", "namespace": "dynamo-a", "world_size": 4, "model": _OTHER},
            {"component": "embed", "world_size": 1, "model": _OTHER, "admin": False},
        ),
        3,
        api_key=NO_API_KEY,
    ),
    Scenario(
        "retryable",
        "POLL-1",
        "a connection reset, then 429 with Retry-After: 1, then 503",
        _BASE,
        3,
        faults=("reset:1", "rate-limit=1:2", "unavailable:3"),
        ready_from_listing=4,
    ),
    Scenario(
        "proxy-environment",
        "POLL-4",
        "HTTP_PROXY, HTTPS_PROXY and ALL_PROXY name another origin",
        _BASE,
        3,
        proxy=True,
    ),
    Scenario(
        "userinfo-url",
        "CRED-1",
        "the configured discovery URL carries user:password@",
        _BASE,
        3,
        expect="fatal",
        userinfo_url=True,
        timeout=3.0,
    ),
    Scenario(
        "allow-list",
        "CRED-3",
        "allow-list 127.0.0.1; engine-b advertises localhost",
        _fleet(_A, {**_B, "admin_host": "localhost"}),
        3,
        allowed_hosts=("127.0.0.1",),
    ),
    Scenario(
        "init-fails",
        "ADMIN-3",
        "engine-b answers its init with 500",
        _fleet(_A, {**_B, "faults": {"admin_fail": ["init_broadcaster", "collective_rpc"]}}),
        3,
        expect="fail",
        timeout=3.0,
    ),
    *(_listing_fault(*row) for row in _LISTING_FAULTS),
    *(_engine_fault(*row) for row in _ENGINE_FAULTS),
)


class ClientContext(ProfileContext):
    """Every client run of this profile (done in setup; the checks judge the records)."""

    def __init__(
        self, run: RunContext, client: ClientUnderTest, conventions: tuple[str, ...] = CONVENTIONS
    ) -> None:
        super().__init__()
        self.run = run
        self.client = client
        self.conventions = conventions
        self.runs: list[ClientRun] = []

    def normal_runs(self, convention: str | None = None) -> list[ClientRun]:
        """Rank runs on a fleet whose W was right (optionally of one convention)."""
        return [
            r
            for r in self.runs
            if r.kind == "rank" and (convention is None or r.convention == convention)
        ]

    def scenario(self, scenario_id: str) -> ClientRun:
        """The run of one pinned scenario."""
        for r in self.runs:
            if r.kind == scenario_id:
                return r
        raise CheckError(f"the scenario {scenario_id!r} was not run")

    def declared(self, convention: str) -> None:
        """Skipped unless the client declared ``convention`` (--client-conventions)."""
        if convention not in self.conventions:
            raise Skipped(
                f"the client does not implement {convention} (--client-conventions "
                f"{','.join(self.conventions)})"
            )


_START_FAILURES = ("ModuleNotFoundError: ", "ImportError: ", "No module named ")


def _start_failure(run: ClientRun) -> str | None:
    """Why a command could not start at all (exit 126/127, an import error), else None."""
    if run.exit_code in (126, 127):
        return f"exit {run.exit_code}: {run.message.strip()[-300:]}"
    started = run.listing_calls or run.exit_code in (None, 0)
    if not started and any(text in run.message for text in _START_FAILURES):
        return f"exit {run.exit_code}: {run.message.strip().splitlines()[-1][:300]}"
    return None


@contextlib.contextmanager
def _environment(extra: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in extra}
    os.environ.update(extra)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _call_client(
    client: ClientUnderTest,
    run: ClientRun,
    discovery_url: str,
    model: str | None,
    timeout: float,
    extra_env: dict[str, str] | None = None,
) -> None:
    creds = run.credentials
    extra = dict(extra_env or {})
    run.started = time.time()
    if client.command is not None:
        env = dict(os.environ)
        env.update(extra)
        env.update(
            {
                f"{ENV_PREFIX}DISCOVERY_URL": discovery_url,
                f"{ENV_PREFIX}INFERENCE_WORLD_SIZE": str(run.inference_world_size),
                f"{ENV_PREFIX}CONVENTION": run.convention,
                f"{ENV_PREFIX}MODEL": model or "",
                f"{ENV_PREFIX}MASTER_ADDRESS": run.master_address,
                f"{ENV_PREFIX}MASTER_PORT": str(run.master_port),
                f"{ENV_PREFIX}TIMEOUT": str(timeout),
                f"{ENV_PREFIX}HEADERS": json.dumps(creds.headers),
                f"{ENV_PREFIX}HEADERS_FROM_ENV": json.dumps(creds.headers_from_env),
            }
        )
        if creds.api_key is not None:
            env[f"{ENV_PREFIX}API_KEY"] = creds.api_key
        if creds.allowed_hosts is not None:
            env[f"{ENV_PREFIX}ALLOWED_HOSTS"] = json.dumps(list(creds.allowed_hosts))
        try:
            proc = subprocess.run(
                ["sh", "-c", client.command],
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout + 15,
                check=False,
            )
        except subprocess.TimeoutExpired:
            run.outcome = f"timed out after {timeout + 15:g} s"
            return
        run.exit_code = proc.returncode
        run.returned = proc.returncode == 0
        run.message = (proc.stderr or proc.stdout or "")[-4000:]
        tail = run.message.strip().splitlines()[-3:]
        run.outcome = "returned" if run.returned else f"exit {proc.returncode}: " + " | ".join(tail)
        return
    assert client.func is not None
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            client.func(  # type: ignore[misc]
                discovery_url,
                run.inference_world_size,
                run.convention,
                creds,
                model=model,
                master_address=run.master_address,
                master_port=run.master_port,
                timeout=timeout,
            )
            box["ok"] = True
        except BaseException as exc:  # the client refused (or broke): recorded, judged by checks
            box["error"] = f"{type(exc).__name__}: {exc}"

    from conformance.client_logs import captured

    with _environment(extra), captured() as run.log:
        thread = threading.Thread(target=target, name="client-under-test", daemon=True)
        thread.start()
        thread.join(timeout + 15)
    if thread.is_alive():
        run.outcome = f"timed out after {timeout + 15:g} s (still running)"
    elif box.get("ok"):
        run.returned, run.outcome = True, "returned"
    else:
        run.message = str(box.get("error", "?"))
        run.outcome = "raised: " + run.message.splitlines()[0][:300]


def _listed_engines(
    fleet: Fleet, model: str | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(matching engines in canonical order, every other listed engine), from the listing.

    A worker matches when its ``model`` is absent or equal to ``model`` (SPEC §9.1). Each other
    entry says whether a client could have called it at all (a listed admin or system URL).
    """
    with httpx.Client(timeout=10, trust_env=False) as http:
        response = http.get(fleet.discovery_url)
    if response.status_code != 200:
        raise CheckError(f"the reference fleet answered {response.status_code} to its own listing")
    body = response.json()
    key_by_url: dict[str, str] = {}
    for engine in fleet.engines:
        for known in (engine.system_url, engine.admin_base_url):
            if known:
                key_by_url[known.rstrip("/")] = engine.spec.key
    ready, others = [], []
    for w in body["workers"]:
        url = w.get("admin_base_url")
        reachable = url or w.get("system_url")
        key = key_by_url.get(reachable.rstrip("/")) if reachable else None
        identity = WorkerId.from_entry(w)
        entry = {
            "label": str(identity),
            "identity": identity,
            "world_size": w.get("world_size"),
            "admin_base_url": url,
            "host": httpx.URL(url).host if url else None,
            "key": key,
            "reachable": bool(reachable),
        }
        matches = model is None or w.get("model") in (None, model)
        usable = "error" not in w and url and isinstance(w.get("world_size"), int)
        if usable and matches:
            ready.append(entry)
        else:
            why = (
                "another model"
                if not matches
                else ("error" if "error" in w else "no admin URL or world_size")
            )
            others.append({**entry, "why": why})
    ready.sort(key=lambda e: e["identity"])
    return ready, others


#: The engine-route vocabulary of the latest Prime-RL generation, presented by the
#: pinned vllm-native-nccl fleet so that a trainer needing it can be judged on its rank math.
_VOCABULARY: dict[str, Any] = {
    "routes": ["pause_generation", "resume_generation", *ENGINE_ROUTE_VOCABULARY],
    "weight_transfer_backend": "nccl",
}

#: A heterogeneous fleet, run once per declared convention: world sizes [2, 4, 1], W = 7.
#: An even split sends offsets [0, 2, 4] here: rank 4 taken twice, rank 6 by nobody.
PINNED_TOPOLOGY: dict[str, Any] = {
    "version": 1,
    "namespace": "dynamo",
    "model": "Qwen/Qwen3-0.6B",
    "seed": 7,
    "engines": [
        {"component": "engine-a", "world_size": 2},
        {"component": "engine-b", "world_size": 4},
        {"component": "engine-c", "world_size": 1},
    ],
}

#: The same fleet for the vllm-native-nccl run, presenting the engine-route vocabulary.
PINNED_NATIVE_TOPOLOGY: dict[str, Any] = {
    **PINNED_TOPOLOGY,
    "engines": [{**g, **_VOCABULARY} for g in PINNED_TOPOLOGY["engines"]],
}


def _group_world_size(group: dict[str, Any]) -> int:
    if group.get("world_size"):
        return int(group["world_size"])
    return int(group.get("tp", 1) * group.get("pp", 1) * group.get("pcp", 1) * group.get("dp", 1))


def _heterogeneous(data: dict[str, Any]) -> dict[str, Any]:
    """At least two distinct world sizes among the model's engines (the even split needs them)."""
    model = data.get("model")
    mine = [
        g
        for g in data["engines"]
        if g.get("model", model) in (None, model) and g.get("admin", True) and "faults" not in g
    ]
    sizes = {_group_world_size(g) for g in mine}
    count = sum(g.get("count", 1) for g in mine)
    if len(sizes) >= 2 and count >= 2:
        return data
    size = next(iter(sizes), 1)
    extra = {"component": "hetero", "count": 1, "world_size": size + 1 if size < 8 else size - 1}
    return {**data, "engines": [*data["engines"], extra]}


def _with_disallowed_host(data: dict[str, Any]) -> dict[str, Any]:
    """Make sure some planned engine advertises "localhost", outside the allow-list 127.0.0.1."""
    groups = [dict(g) for g in data["engines"]]
    ready = [
        g for g in groups[1:] if "model" not in g and g.get("admin", True) and "faults" not in g
    ]
    if any(g.get("admin_host") for g in ready) or groups[0].get("admin_host"):
        return data
    if ready:
        ready[-1]["admin_host"] = "localhost"
    else:
        groups.append({"component": "decodex", "count": 1, "tp": 2, "admin_host": "localhost"})
    return {**data, "engines": groups}


def _credentials(rng: Any, *, api_key: str | None = None, allowed: Any = None) -> Credentials:
    return Credentials(
        api_key=api_key if api_key is not None else f"key-{rng.getrandbits(64):016x}",
        headers={"X-Static-Token": f"static-{rng.getrandbits(48):012x}"},
        headers_from_env={"X-Env-Token": SECRET_ENV},
        allowed_hosts=allowed,
    )


def _new_run(
    rng: Any, name: str, kind: str, convention: str, width: int, **fields: Any
) -> ClientRun:
    """A run to do for W = ``width``: fresh credentials (unless ``fields`` has them) and a random
    master port (the group's coordinates) drawn from ``rng``; ``fields`` are ClientRun's others."""
    credentials = fields.pop("credentials", None) or _credentials(rng)
    port = 29500 + rng.randrange(400)
    return ClientRun(name, kind, convention, width, credentials, "127.0.0.1", port, **fields)


def _with_userinfo(url: str) -> str:
    return url.replace("http://", "http://rl-user:url-secret@", 1)


_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy")


#: The fleet of the real Dynamo runs: the pinned [2, 4, 1] fleet, engine-b registering no model (a
#: model-less worker, which matches, SPEC §9.1) and a judge of another model with an admin URL (a
#: worker a client could call and must leave alone, READY-5); models come from the runtime's cards.
DYNAMO_TOPOLOGY: dict[str, Any] = {
    **PINNED_TOPOLOGY,
    "engines": [
        {"component": "engine-a", "world_size": 2},
        {"component": "engine-b", "world_size": 4, "model": None},
        {"component": "engine-c", "world_size": 1},
        {"component": "judge", "world_size": 2, "model": _OTHER},
    ],
}


#: How the name of every run against real Dynamo starts.
_REAL = "real Dynamo 1.6.1"


def _real_listing_problem(
    run: ClientRun, ready: list[dict[str, Any]], others: list[dict[str, Any]], width: int
) -> None:
    """Say (as ``run.harness_problem``) what the real listing failed to present of the scenario."""
    missing = []
    if width != 7 or len(ready) != 3:
        missing.append(f"3 matching engines summing to 7 (listed {len(ready)}, sum {width})")
    if not any(o["why"] == "another model" and o["reachable"] for o in others):
        missing.append("a reachable engine of another model")
    if missing:
        run.harness_problem = f"the real listing did not present {' and '.join(missing)}"


def _dynamo_runs(ctx: ClientContext, one: Callable[..., None], convention: str, rng: Any) -> None:
    """What real Dynamo 1.6.1 can present, through the harness: a plan, an error, a resize."""
    from conformance.runner import dynamo_available

    opts = ctx.run.options
    if opts.target == "reference" or not dynamo_available():
        why = "--target reference" if opts.target == "reference" else "no dynamo extra"
        ctx.run.notes.append(f"client profile: no real Dynamo runs ({why})")
        return
    from prime_rl_dynamo.harness import start_dynamo_fleet  # type: ignore[attr-defined,unused-ignore]
    from prime_rl_dynamo.topology import topology_from_dict

    topology = topology_from_dict(DYNAMO_TOPOLOGY, source="real Dynamo [2, 4, 1]")
    key = "dynamo.engine-c#0"

    def make(name: str, kind: str, width: int) -> ClientRun:
        return _new_run(rng, f"{_REAL} [2, 4, 1], {name}", kind, convention, width)

    def during(fleet: Fleet, client_run: ClientRun, change: Callable[[], object]) -> None:
        _during(ctx, one, fleet, topology.model, client_run, change)

    with start_dynamo_fleet(topology, discovery=opts.discovery) as fleet:
        ready, others = _listed_engines(fleet, topology.model)
        width = sum(e["world_size"] for e in ready)
        plan = make(f"{convention}, a model-less engine and another model's", "rank", width)
        plan.engines, plan.others = ready, others
        _real_listing_problem(plan, ready, others, width)
        one(fleet, plan, model=topology.model, timeout=opts.client_timeout)
        fleet.kill(key)
        fleet.wait_ready(timeout=30)  # engine-c listed with an error (or gone); the judge is ready
        during(
            fleet,
            make("engine-c killed, restarted after 1 s", "dynamo:error-then-ready", width),
            lambda: fleet.restart(key),
        )
        during(
            fleet,
            make("engine-c resized 1 -> 3 after 1 s", "dynamo:sum-then-ready", width + 2),
            lambda: fleet.resize(key, 3),
        )
        # TOPO-1: engine-a's routes reply reports world size 4 once it answered its init (the
        # real frontend probes every worker on each GET, so the next listing shows the resize).
        resized = make(
            "engine-a reports world size 4 once initialised", "dynamo:resize-after-init", 0
        )
        fleet.resize_after_init["dynamo.engine-a#0"] = 4
        try:
            fleet.restart("dynamo.engine-a#0")
            fleet.wait_ready(timeout=30)
        except Exception as exc:  # the harness, not the client
            resized.harness_problem = f"the harness could not restart engine-a: {exc}"
        resized.engines, resized.others = _listed_engines(fleet, topology.model)
        resized.inference_world_size = sum(e["world_size"] for e in resized.engines)
        if not resized.harness_problem:
            one(fleet, resized, model=topology.model, timeout=min(opts.client_timeout, 10.0))
        else:
            ctx.runs.append(resized)
    ctx.run.notes.append("client profile: 4 runs against real Dynamo 1.6.1 through the harness")


def _during(
    ctx: ClientContext,
    one: Callable[..., None],
    fleet: Fleet,
    model: str | None,
    client_run: ClientRun,
    change: Callable[[], object],
) -> None:
    """Run the client while the harness changes the fleet; a change that raises or outlasts the
    client's deadline is recorded as ``harness_problem`` (an error of the run, never a failure)."""
    opts = ctx.run.options
    # The harness changes the fleet from this thread; the client runs in another.
    failure: list[BaseException] = []

    def client() -> None:
        try:
            one(fleet, client_run, model=model, timeout=opts.client_timeout)
        except BaseException as exc:  # reported below, in this thread
            failure.append(exc)

    worker = threading.Thread(target=client, name="client-run", daemon=True)
    worker.start()
    time.sleep(1.0)
    client_run.ready_at = time.time()  # nothing is ready before the change starts
    try:
        change()
    except Exception as exc:  # the harness, not the client
        client_run.harness_problem = f"the harness could not change the fleet: {exc}"
    took = time.time() - client_run.ready_at
    worker.join(opts.client_timeout + 30)
    if failure:
        raise failure[0]
    client_run.engines, client_run.others = _listed_engines(fleet, model)
    if not client_run.harness_problem and took > opts.client_timeout - 2.0:
        client_run.harness_problem = (
            f"the harness took {took:.1f} s to change the fleet, longer than the client's "
            f"{opts.client_timeout:g} s deadline allows (a loaded machine?)"
        )


def _run_scenario(
    scenario: Scenario,
    ctx: ClientContext,
    one: Callable[..., None],
    other: Any,
    convention: str,
    rng: Any,
    start_reference_fleet: Callable[..., Any],
) -> None:
    from prime_rl_dynamo.topology import topology_from_dict

    topology = topology_from_dict(scenario.topology, source=f"scenario {scenario.id}")
    with start_reference_fleet(topology, faults=scenario.faults) as fleet:
        for key, attribute, value in scenario.engine_setup:
            setattr(fleet.engine(key), attribute, value)
        client_run = _new_run(
            rng,
            f"scenario {scenario.id} ({scenario.what})",
            scenario.id,
            convention,
            scenario.inference_world_size,
            credentials=_credentials(rng, api_key=scenario.api_key, allowed=scenario.allowed_hosts),
            ready_from_listing=scenario.ready_from_listing,
        )
        if scenario.ready_after is not None:
            since_start = time.monotonic() - fleet.frontend.started
            client_run.ready_at = time.time() - since_start + scenario.ready_after
        extra_env: dict[str, str] = {}
        if scenario.proxy:
            proxy = other.frontend_url
            extra_env = {name: proxy for name in _PROXY_VARIABLES}
            extra_env.update({"NO_PROXY": "", "no_proxy": ""})
            other.recorder.clear()
        url = _with_userinfo(fleet.discovery_url) if scenario.userinfo_url else None
        one(
            fleet,
            client_run,
            model=topology.model,
            timeout=min(scenario.timeout, ctx.run.options.client_timeout),
            url=url,
            extra_env=extra_env,
        )
        if scenario.proxy:
            client_run.foreign = other.recorder.requests()
        else:
            client_run.foreign = [
                r
                for r in client_run.listing_calls + client_run.admin_calls
                if r.host == "localhost"
            ]
        # The plan the client should have reached: the fleet as it is now, faults lifted.
        fleet.set_faults([])
        for key, attribute, _ in scenario.engine_setup:
            if attribute == "admin_redirect_host":
                fleet.engine(key).admin_redirect_host = None
        client_run.engines, client_run.others = _listed_engines(fleet, topology.model)
