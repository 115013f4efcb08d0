"""The ``client`` profile (black box): a client under test against generated reference fleets.

For each generated topology the suite stands up a reference fleet, runs the client, and checks
what the fleet's admin servers recorded: offsets per convention, ranks covering [0, W) exactly
once, the same W/host/port everywhere, credentials where allowed and nowhere else.

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
initialises the weight broadcast on every engine (``POST {admin}/init_broadcaster`` for
``prime-nccl`` and ``nixl``, ``POST {admin}/collective_rpc`` with ``init_weight_transfer_engine``
for ``vllm-native-nccl``) with ``master_address``/``master_port`` as the group's coordinates. It
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
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from conformance.registry import CheckError, Failed, Skipped, check
from conformance.results import cut
from conformance.runner import ProfileContext, RunContext, profile_setup
from prime_rl_dynamo.recording import RecordedRequest

__all__ = [
    "CONVENTIONS",
    "ClientRun",
    "ClientUnderTest",
    "Credentials",
    "arguments_from_env",
    "load_client",
]

CONVENTIONS = ("prime-nccl", "vllm-native-nccl", "nixl")
DEFAULT_CLIENT = "conformance.examples.project_client:run"
ENV_PREFIX = "CONFORMANCE_"
#: The environment variable the suite fills with a secret for ``headers_from_env``.
SECRET_ENV = "CONFORMANCE_SECRET_TOKEN"


@dataclass(frozen=True)
class Credentials:
    """What the client must attach to admin calls, and where it may."""

    api_key: str | None = None  # sent as "Authorization: Bearer <api_key>"
    headers: dict[str, str] = field(default_factory=dict)  # static headers
    headers_from_env: dict[str, str] = field(default_factory=dict)  # header -> env variable
    allowed_hosts: tuple[str, ...] | None = None  # None: no allow-list (every admin host)

    def expected_headers(self) -> dict[str, str]:
        """Lower-cased header -> value every admin call to an allowed host must carry."""
        out = {k.lower(): v for k, v in self.headers.items()}
        for header, var in self.headers_from_env.items():
            out[header.lower()] = os.environ.get(var, "")
        if self.api_key is not None:
            out["authorization"] = f"Bearer {self.api_key}"
        return out

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

    name: str  # e.g. "topology 2 (prime-nccl)"
    convention: str
    inference_world_size: int  # what the client was told
    expect_refusal: bool  # True: W was wrong on purpose; no engine may be initialised
    credentials: Credentials
    master_address: str
    master_port: int
    engines: list[dict[str, Any]]  # listed ready engines in canonical order (with "key", "host")
    others: list[dict[str, Any]]  # listed engines the client must leave alone (key, url, why)
    admin_calls: list[RecordedRequest] = field(default_factory=list)
    outcome: str = ""  # "returned" | "raised: ..." | "exit N: ..." | "timed out"
    returned: bool = False

    def init_calls(self) -> dict[str, list[RecordedRequest]]:
        """Engine key -> the broadcast-init calls it received."""
        out: dict[str, list[RecordedRequest]] = {}
        for r in self.admin_calls:
            if _is_init(r):
                out.setdefault(r.engine, []).append(r)
        return out


def _is_init(r: RecordedRequest) -> bool:
    if r.method != "POST":
        return False
    if r.path.endswith("/init_broadcaster"):
        return True
    body = r.json if isinstance(r.json, dict) else {}
    return r.path.endswith("/collective_rpc") and body.get("method") in (
        "init_weight_transfer_engine",
        "init_broadcaster",
    )


def _init_values(r: RecordedRequest) -> dict[str, Any]:
    """rank_offset, world sizes and coordinates from either init shape."""
    body = r.json if isinstance(r.json, dict) else {}
    if r.path.endswith("/collective_rpc"):
        raw_kwargs = body.get("kwargs")
        kwargs: dict[str, Any] = raw_kwargs if isinstance(raw_kwargs, dict) else {}
        raw_info = kwargs.get("init_info")
        info: dict[str, Any] = raw_info if isinstance(raw_info, dict) else kwargs
        return {
            "rank_offset": info.get("rank_offset"),
            "group_world_size": info.get("world_size"),
            "host": info.get("master_address"),
            "port": info.get("master_port"),
        }
    return {
        "rank_offset": body.get("rank_offset"),
        "inference_world_size": body.get("inference_world_size"),
        "engine_world_size": body.get("engine_world_size"),
        "host": body.get("host"),
        "port": body.get("port"),
        "session_id": body.get("session_id"),
    }


class ClientContext(ProfileContext):
    """Every client run of this profile (done in setup; the checks judge the records)."""

    def __init__(self, run: RunContext, client: ClientUnderTest) -> None:
        super().__init__()
        self.run = run
        self.client = client
        self.runs: list[ClientRun] = []

    def normal_runs(self, convention: str | None = None) -> list[ClientRun]:
        """Runs on a fleet whose W was right (optionally of one convention)."""
        return [
            r
            for r in self.runs
            if not r.expect_refusal and (convention is None or r.convention == convention)
        ]


def _call_client(
    client: ClientUnderTest, run: ClientRun, discovery_url: str, model: str | None, timeout: float
) -> None:
    creds = run.credentials
    if client.command is not None:
        env = dict(os.environ)
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
        run.returned = proc.returncode == 0
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
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

    thread = threading.Thread(target=target, name="client-under-test", daemon=True)
    thread.start()
    thread.join(timeout + 15)
    if thread.is_alive():
        run.outcome = f"timed out after {timeout + 15:g} s (still running)"
    elif box.get("ok"):
        run.returned, run.outcome = True, "returned"
    else:
        run.outcome = "raised: " + str(box.get("error", "?")).splitlines()[0][:300]


def _listed_engines(
    fleet: Any, model: str | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(ready engines of ``model`` in canonical order, every other listed engine), from the listing."""
    with httpx.Client(timeout=10, trust_env=False) as http:
        response = http.get(fleet.discovery_url)
    if response.status_code != 200:
        raise CheckError(f"the reference fleet answered {response.status_code} to its own listing")
    body = response.json()
    key_by_url: dict[str, str] = {}
    for engine in fleet.engines:
        if engine.admin_base_url:
            key_by_url[engine.admin_base_url.rstrip("/")] = engine.spec.key
    ready, others = [], []
    for w in body["workers"]:
        url = w.get("admin_base_url")
        key = key_by_url.get(url.rstrip("/")) if url else None
        entry = {
            "label": f"{w['namespace']}.{w['component']}.{w['endpoint']}#{w['instance_id']}",
            "identity": (w["namespace"], w["component"], w["endpoint"], w["instance_id"]),
            "world_size": w.get("world_size"),
            "admin_base_url": url,
            "host": httpx.URL(url).host if url else None,
            "key": key,
        }
        usable = "error" not in w and url and isinstance(w.get("world_size"), int)
        if usable and (model is None or w.get("model") == model):
            ready.append(entry)
        else:
            why = "error" if "error" in w else ("no admin URL" if not url else "another model")
            others.append({**entry, "why": why})
    ready.sort(key=lambda e: e["identity"])
    return ready, others


#: FACTS.md §3's example, always run first: world sizes [2, 4, 1] in canonical order, W = 7.
#: The original even split sends offsets [0, 2, 4]: rank 4 taken twice, rank 6 by nobody.
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


@profile_setup("client")
@contextlib.contextmanager
def _setup(run: RunContext) -> Iterator[ClientContext]:
    try:
        from prime_rl_dynamo.reference import start_reference_fleet
        from prime_rl_dynamo.strategies import sample, topologies
        from prime_rl_dynamo.topology import topology_from_dict
    except ImportError as exc:
        raise Skipped(f"the client profile needs the conformance extra: {exc}") from exc
    opts = run.options
    client = load_client(opts.client, opts.client_cmd)
    ctx = ClientContext(run, client)
    run.notes.append(
        f"client profile: {client.description} against reference fleets "
        f"(the pinned [2, 4, 1] fleet and {max(0, opts.topologies)} generated, seed {run.seed})"
    )
    rng = run.rng("client")
    secret = f"env-{rng.getrandbits(48):012x}"
    saved = os.environ.get(SECRET_ENV)
    os.environ[SECRET_ENV] = secret
    try:
        drawn = [PINNED_TOPOLOGY, *sample(topologies(), max(0, opts.topologies), run.seed)]
        for index, data in enumerate(drawn):
            # The pinned fleet uses Prime's NCCL convention; generated ones rotate conventions.
            convention = (
                CONVENTIONS[(index - 1 + run.seed) % len(CONVENTIONS)] if index else "prime-nccl"
            )
            restricted = index % 2 == 0 and index > 0  # every other generated run: an allow-list
            if restricted:
                data = _with_disallowed_host(data)
            source = "pinned topology [2, 4, 1]" if index == 0 else f"generated topology {index}"
            topology = topology_from_dict(data, source=source)
            creds = Credentials(
                api_key=f"key-{rng.getrandbits(64):016x}",
                headers={"X-Static-Token": f"static-{rng.getrandbits(48):012x}"},
                headers_from_env={"X-Env-Token": SECRET_ENV},
                allowed_hosts=("127.0.0.1",) if restricted else None,
            )
            with start_reference_fleet(topology) as fleet:
                ready, others = _listed_engines(fleet, topology.model)
                width = sum(e["world_size"] for e in ready)
                name = (
                    source + f" ({convention}" + (", allow-list 127.0.0.1)" if restricted else ")")
                )
                runs = [(name, convention, width, False)]
                if index == 0:
                    # One refusal run per profile: W off by one must initialise nobody (RANK-2).
                    runs.append((f"{source}, told the wrong W", "prime-nccl", width + 1, True))
                for name, conv, told, refusal in runs:
                    fleet.recorder.clear()
                    client_run = ClientRun(
                        name=name,
                        convention=conv,
                        inference_world_size=told,
                        expect_refusal=refusal,
                        credentials=creds,
                        master_address="127.0.0.1",
                        master_port=29500 + rng.randrange(400),
                        engines=ready,
                        others=others,
                    )
                    timeout = min(opts.client_timeout, 3.0) if refusal else opts.client_timeout
                    started = time.monotonic()
                    _call_client(client, client_run, fleet.discovery_url, topology.model, timeout)
                    client_run.admin_calls = fleet.recorder.requests(server="admin")
                    client_run.outcome += f" in {time.monotonic() - started:.1f} s"
                    ctx.runs.append(client_run)
        yield ctx
    finally:
        if saved is None:
            os.environ.pop(SECRET_ENV, None)
        else:
            os.environ[SECRET_ENV] = saved


# --- checks -----------------------------------------------------------------------------------

Problems = list[tuple[ClientRun, str]]


def _describe(run: ClientRun) -> str:
    return f"{run.name}, W={run.inference_world_size}"


def _failure(problems: Problems, header: str = "") -> Failed:
    """One Failed listing the problems run by run, each run headed by what the client did."""
    lines: list[str] = [header] if header else []
    current: ClientRun | None = None
    for run, text in problems:
        if run is not current:
            current = run
            lines.append(f"{_describe(run)} (client {run.outcome}):")
        lines.append(f"  {text}")
    if len(lines) > 40:
        lines = [*lines[:40], f"  ... {len(lines) - 40} more lines"]
    return Failed("\n".join(lines))


def _offset_check(ctx: ClientContext, convention: str, first: int) -> str | None:
    runs = ctx.normal_runs(convention)
    if not runs:
        raise Skipped(f"no generated topology used the {convention} convention in this run")
    problems: Problems = []
    for run in runs:
        calls = run.init_calls()
        offset = first
        for engine in run.engines:
            got = calls.get(engine["key"], [])
            if not got:
                problems.append((run, f"{engine['label']} received no broadcast init"))
            for call in got:
                values = _init_values(call)
                if values["rank_offset"] != offset:
                    problems.append(
                        (
                            run,
                            f"{engine['label']} (world_size {engine['world_size']}): expected "
                            f"rank_offset {offset}, found {values['rank_offset']!r}",
                        )
                    )
                if convention != "vllm-native-nccl":
                    for key, want in (
                        ("engine_world_size", engine["world_size"]),
                        ("inference_world_size", run.inference_world_size),
                    ):
                        if values.get(key) != want:
                            problems.append(
                                (
                                    run,
                                    f"{engine['label']}: expected {key} {want}, "
                                    f"found {values.get(key)!r}",
                                )
                            )
            offset += engine["world_size"]
    if problems:
        raise _failure(problems)
    return f"{len(runs)} run(s): offsets right on every engine"


@check(
    "client",
    "RANK-3",
    "prime-nccl-offsets",
    "Prime NCCL: offsets are the exclusive prefix sum from 0",
)
def check_prime_offsets(ctx: ClientContext) -> str | None:
    return _offset_check(ctx, "prime-nccl", 0)


@check(
    "client",
    "RANK-4",
    "vllm-native-offsets",
    "vLLM native NCCL: offsets start at 1, group 1+W",
)
def check_native_offsets(ctx: ClientContext) -> str | None:
    problems: Problems = []
    for run in ctx.normal_runs("vllm-native-nccl"):
        for key, calls in run.init_calls().items():
            for call in calls:
                size = _init_values(call)["group_world_size"]
                if size != run.inference_world_size + 1:
                    problems.append(
                        (
                            run,
                            f"{key}: expected world_size {run.inference_world_size + 1} "
                            f"(1 + W), found {size!r}",
                        )
                    )
    note = _offset_check(ctx, "vllm-native-nccl", 1)
    if problems:
        raise _failure(problems)
    return note


@check("client", "RANK-5", "nixl-offsets", "NIXL: offsets are the exclusive prefix sum from 0")
def check_nixl_offsets(ctx: ClientContext) -> str | None:
    return _offset_check(ctx, "nixl", 0)


def _ranges(ranks: list[int]) -> str:
    """Compact rank list: [4, 5, 6, 9] -> '4-6, 9'."""
    out: list[list[int]] = []
    for r in sorted(set(ranks)):
        if out and out[-1][1] == r - 1:
            out[-1][1] = r
        else:
            out.append([r, r])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in out)


@check(
    "client",
    "RANK-6",
    "ranks-cover-once",
    "The inference ranks cover [0, W) exactly once",
)
def check_coverage(ctx: ClientContext) -> str | None:
    runs = ctx.normal_runs()
    if not runs:
        raise CheckError("no client run to judge")
    problems: Problems = []
    for run in runs:
        first = 1 if run.convention == "vllm-native-nccl" else 0
        owners: dict[int, list[str]] = {}
        sizes = {e["key"]: e for e in run.engines}
        for key, calls in run.init_calls().items():
            engine = sizes.get(key)
            if engine is None:
                continue  # READY-5 reports inits sent to engines outside the plan
            offset = _init_values(calls[-1])["rank_offset"]
            if not isinstance(offset, int):
                continue
            for rank in range(offset - first, offset - first + engine["world_size"]):
                owners.setdefault(rank, []).append(engine["label"])
        width = run.inference_world_size
        twice = {r: who for r, who in owners.items() if len(who) > 1}
        missing = [r for r in range(width) if r not in owners]
        outside = [r for r in owners if not 0 <= r < width]
        if twice or missing or outside:
            problems.append((run, f"inference ranks [0, {width}) are not covered exactly once"))
            for rank in sorted(twice):
                problems.append((run, f"rank {rank} collides: claimed by {', '.join(twice[rank])}"))
            if missing:
                problems.append((run, f"missing ranks (owned by nobody): {_ranges(missing)}"))
            if outside:
                problems.append((run, f"ranks outside [0, {width}): {_ranges(outside)}"))
    if problems:
        raise _failure(problems)
    return f"{len(runs)} run(s): every rank owned exactly once"


@check(
    "client",
    "RANK-8",
    "same-coordinates",
    "Every engine is sent the same W, host and port",
)
def check_coordinates(ctx: ClientContext) -> str | None:
    runs = ctx.normal_runs()
    if not runs:
        raise CheckError("no client run to judge")
    problems: Problems = []
    for run in runs:
        seen: dict[str, Counter[str]] = {}
        for calls in run.init_calls().values():
            for call in calls:
                values = _init_values(call)
                for key in (
                    "host",
                    "port",
                    "inference_world_size",
                    "group_world_size",
                    "session_id",
                ):
                    if key in values and (values[key] is not None or key in ("host", "port")):
                        seen.setdefault(key, Counter())[repr(values[key])] += 1
        for key, counter in seen.items():
            if len(counter) > 1:
                problems.append((run, f"engines were sent different {key}: {dict(counter)}"))
        hosts, ports = seen.get("host", Counter()), seen.get("port", Counter())
        if hosts and set(hosts) != {repr(run.master_address)}:
            problems.append((run, f"expected host {run.master_address!r}, found {dict(hosts)}"))
        if ports and set(ports) != {repr(run.master_port)}:
            problems.append((run, f"expected port {run.master_port}, found {dict(ports)}"))
        if run.convention == "nixl" and run.init_calls() and "session_id" not in seen:
            problems.append((run, "NIXL init carried no session_id"))
    if problems:
        raise _failure(problems)
    return f"{len(runs)} run(s): one set of group coordinates per run"


@check(
    "client",
    "RANK-2",
    "refuse-wrong-sum",
    "A fleet whose world sizes do not sum to W is refused before any request",
)
def check_refusal(ctx: ClientContext) -> str | None:
    refusals = [r for r in ctx.runs if r.expect_refusal]
    if not refusals:
        raise CheckError("no refusal run was made")
    problems: Problems = []
    for run in refusals:
        inits = run.init_calls()
        total = sum(e["world_size"] for e in run.engines)
        if inits:
            problems.append(
                (
                    run,
                    f"the engines sum to {total}, yet {len(inits)} engine(s) were initialised: "
                    f"{', '.join(sorted(inits))}",
                )
            )
        elif run.returned:
            problems.append((run, "the client returned success instead of refusing"))
    if problems:
        raise _failure(problems)
    return f"refused: {cut(refusals[0].outcome.splitlines()[0], 200)}"


@check(
    "client",
    "READY-5",
    "others-left-alone",
    "Engines of another model (or without admin) get no admin call",
)
def check_others(ctx: ClientContext) -> str | None:
    problems: Problems = []
    judged = 0
    for run in ctx.normal_runs():
        planned = {e["key"] for e in run.engines}
        for other in run.others:
            judged += 1
            calls = [r for r in run.admin_calls if r.engine == other["key"]]
            if other["key"] is not None and calls:
                paths = ", ".join(sorted({r.method + " " + r.path for r in calls}))
                problems.append((run, f"{other['label']} ({other['why']}) received {paths}"))
        known = planned | {o["key"] for o in run.others}
        stray = sorted({r.engine for r in run.admin_calls} - known)
        if stray:
            problems.append((run, f"admin calls to unlisted engines {stray}"))
    if problems:
        raise _failure(problems)
    if not judged:
        raise Skipped("no generated topology listed an engine of another model or without admin")
    return f"{judged} engine(s) outside the plan left alone"


def _credential_problems(run: ClientRun, *, allowed: bool) -> tuple[int, Problems]:
    want = run.credentials.expected_headers()
    problems: Problems = []
    judged = 0
    for call in run.admin_calls:
        if run.credentials.allows(call.host) != allowed:
            continue
        judged += 1
        where = f"{call.method} {call.path} to {call.engine} (host {call.host})"
        if allowed:
            wrong = sorted(h for h, v in want.items() if call.headers.get(h) != v)
            if wrong:
                problems.append((run, f"{where}: missing or wrong {', '.join(wrong)}"))
        else:
            leaked = sorted(h for h, v in want.items() if call.headers.get(h) == v)
            if leaked:
                allow = list(run.credentials.allowed_hosts or ())
                problems.append(
                    (run, f"{where}, outside the allow-list {allow}: carried {', '.join(leaked)}")
                )
    return judged, problems


@check(
    "client",
    "CRED-2",
    "credentials-sent",
    "API key, static headers and headers from env go with every admin call",
)
def check_credentials_sent(ctx: ClientContext) -> str | None:
    judged, problems = 0, Problems()
    for run in ctx.normal_runs():
        n, found = _credential_problems(run, allowed=True)
        judged, problems = judged + n, problems + found
    if not judged:
        raise Failed("no admin call reached an allowed host, so no credential was seen")
    if problems:
        raise _failure(problems, f"{len(problems)} of {judged} admin calls to allowed hosts:")
    return f"{judged} admin calls carried every credential"


@check(
    "client",
    "CRED-3",
    "credentials-allow-list",
    "With an allow-list, credentials go only to allowed hosts",
)
def check_credentials_withheld(ctx: ClientContext) -> str | None:
    judged, problems = 0, Problems()
    for run in ctx.normal_runs():
        if run.credentials.allowed_hosts is None:
            continue
        n, found = _credential_problems(run, allowed=False)
        judged, problems = judged + n, problems + found
    if not judged:
        raise Skipped("no generated run had an admin call to a host outside its allow-list")
    if problems:
        raise _failure(problems, f"{len(problems)} of {judged} admin calls outside the allow-list:")
    return f"{judged} admin calls outside the allow-list carried no credential"
