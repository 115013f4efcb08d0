"""Running a client under test: one run's record, calling the client in either form of the
contract (conformance/client_call.py), and the runs of the profile against reference fleets
(pinned and generated topologies, the scenarios of conformance/client_scenarios.py) and real
Dynamo.

What a run keeps is what the fleet recorded (requests, order, timing, headers, bodies), the exit
status and the client's structured result: the only evidence the checks decide on. The client's
error text is kept for the report's detail (``message``) and never judged.
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

import httpx

from conformance.client_call import (
    ClientCall,
    ClientUnderTest,
    Credentials,
    read_result,
)
from conformance.client_scenarios import (
    BASE,
    DYNAMO_TOPOLOGY,
    MAX_BODY_BYTES,
    PINNED_NATIVE_TOPOLOGY,
    PINNED_TOPOLOGY,
    SCENARIOS,
    Pace,
    Scenario,
    heterogeneous,
    plain,
    with_disallowed_host,
)
from conformance.client_wire import InitRecord, Uninterpretable, init_record, is_init, is_update
from conformance.registry import CheckError
from conformance.runner import ProfileContext, RunContext
from prime_rl_dynamo.plan import Convention
from prime_rl_dynamo.suite.recording import RecordedRequest
from prime_rl_dynamo.wire import WorkerId

if TYPE_CHECKING:
    from prime_rl_dynamo.suite.fleet import Fleet
    from prime_rl_dynamo.suite.reference.fleet import ReferenceFleet
    from prime_rl_dynamo.topology import Topology

__all__ = [
    "CONVENTIONS",
    "GRACE_S",
    "HANG_LIMIT",
    "REAL_DYNAMO",
    "ClientContext",
    "ClientRun",
    "ListedEngine",
    "OtherEngine",
    "Runner",
    "call_client",
    "during",
    "listed_engines",
    "real_listing_problem",
]

CONVENTIONS = Convention.names()
#: How long past its deadline a client may run before it is stopped (and judged as hanging):
#: its last request's answer and its exit.
GRACE_S = 1.5
#: After this many runs in which the client hung past its deadline, every later run gets the
#: short deadline and grace below: a client that ignores its deadline is judged on each run all
#: the same, but costs the profile at most about two minutes in all.
HANG_LIMIT = 2
#: What a command may take to start (an interpreter and its imports, on a loaded machine): added
#: to its grace, since its own deadline counts from when it is up.
COMMAND_START_S = 5.0
HUNG_TIMEOUT_S, HUNG_GRACE_S = 0.5, 0.5
#: A rank run's deadline, in plans: a fleet that is ready from the start needs two polls, the inits
#: and one update (a plan, ``Pace.plan``), on up to a dozen engines: twice a scenario's.
RANK_PLANS = 2
#: The deadlines of the real Dynamo runs: a plan on a fleet that is ready (the real frontend probes
#: every worker on each poll), and a run during which the harness kills, restarts or resizes an
#: engine (the change itself takes seconds).
DYNAMO_PLAN_TIMEOUT_S, DYNAMO_CHANGE_TIMEOUT_S = 8.0, 15.0
#: How the name of every run against real Dynamo starts (the release follows: ``1.5.1``).
REAL_DYNAMO = "real Dynamo"


def _real() -> str:
    """``real Dynamo 1.5.1``: the prefix and the installed release."""
    from conformance.runner import dynamo_release

    return f"{REAL_DYNAMO} {dynamo_release()}"


LISTING_PATH = "/v1/rl/workers"


def is_listing(r: RecordedRequest) -> bool:
    """Whether a request on the RL listener is a listing request: ``GET /v1/rl/workers``."""
    return r.method == "GET" and r.path == LISTING_PATH


class ListedEngine(TypedDict):
    """One engine of the listing as the suite read it (``listed_engines``)."""

    label: str  # its worker identity, as the reports name it
    identity: WorkerId
    world_size: Any  # as listed: an int for every engine of a plan
    admin_base_url: str | None
    host: str | None  # the admin URL's host
    key: str | None  # the fleet's engine key (None: no URL of a known engine)
    reachable: bool  # whether it lists any URL a client could call
    model: str | None


class OtherEngine(ListedEngine):
    """A listed engine outside the plan, and why."""

    why: str  # "another model", "error" or "no admin URL or world_size"


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
    engines: list[ListedEngine] = field(default_factory=list)  # the plan's engines, canonical
    others: list[OtherEngine] = field(default_factory=list)  # listed, outside the plan
    admin_calls: list[RecordedRequest] = field(default_factory=list)  # admin + engine routes
    listing_calls: list[RecordedRequest] = field(default_factory=list)  # GET /v1/rl/workers
    other_listener_calls: list[RecordedRequest] = field(default_factory=list)  # the rest of it
    outcome: str = ""  # "returned" | "raised" | "exit N" | "timed out", for the report
    returned: bool = False
    hung: bool = False  # still running at its deadline plus GRACE_S (stopped)
    message: str = ""  # the client's error text (exception or stderr): report detail only
    result: dict[str, object] | None = None  # what the client wrote to CONFORMANCE_RESULT_FILE
    exit_code: int | None = None  # shell commands only
    started: float = 0.0  # time.time() when the client was started
    elapsed: float = 0.0
    ready_at: float | None = None  # time.time() from which the fleet was ready (recoveries)
    ready_from_listing: int | None = None  # listing request number from which it was ready
    pending_listings: tuple[int, ...] = ()  # listing request numbers that presented it pending
    foreign: list[RecordedRequest] = field(default_factory=list)  # what reached another origin
    harness_problem: str = ""  # real Dynamo runs: why the fleet could not present the scenario
    log: list[dict[str, Any]] = field(default_factory=list)  # what the client logged (warnings+)
    parts: tuple[str, ...] = ()  # a composite's single-variable scenarios

    @property
    def expect_refusal(self) -> bool:
        """Whether W was wrong on purpose (no engine may be initialised)."""
        return self.kind == "refusal"

    @property
    def refused_under(self) -> str | None:
        """The requirement ID the client's result names (None: it wrote no result)."""
        value = (self.result or {}).get("requirement")
        return value if isinstance(value, str) else None

    @property
    def worker(self) -> str:
        """The Prime worker a ``collective_rpc`` init reaches under this run's convention."""
        return "nixl" if self.convention == Convention.NIXL.value else "nccl"

    def init_calls(self) -> dict[str, list[RecordedRequest]]:
        """Engine key -> the broadcast-init calls it received (every wire form)."""
        out: dict[str, list[RecordedRequest]] = {}
        for r in self.admin_calls:
            if is_init(r):
                out.setdefault(r.engine, []).append(r)
        return out

    def init_records(self) -> dict[str, list[InitRecord]]:
        """Engine key -> its inits read into one record; CheckError names a call none reads."""
        out: dict[str, list[InitRecord]] = {}
        for key, calls in self.init_calls().items():
            for call in calls:
                try:
                    out.setdefault(key, []).append(init_record(call, self.worker))
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
            if is_update(r) or r.path.endswith("/pause") or r.path.endswith("pause_generation")
        ]


#: A client keeps its declared pace when its median wait after a complete poll is at most this
#: multiple of the pace, plus this slack (a loaded machine's scheduling).
PACE_TOLERANCE, PACE_SLACK_S = 1.5, 0.1


def _completed_baseline(run: ClientRun) -> bool:
    """Whether the client returned from ``run`` with every planned engine initialised."""
    inits = run.init_calls()
    return run.returned and all(e["key"] in inits for e in run.engines)


class ClientContext(ProfileContext):
    """Every client run of this profile (done in setup; the checks judge the records)."""

    def __init__(
        self, run: RunContext, client: ClientUnderTest, conventions: tuple[str, ...] = CONVENTIONS
    ) -> None:
        super().__init__()
        self.run = run
        self.client = client
        self.conventions = conventions
        #: The pace the client really has (--client-poll-interval): every deadline derives from it.
        self.pace = Pace(
            float(run.options.client_poll_interval), bool(run.options.client_whole_seconds)
        )
        self.runs: list[ClientRun] = []
        #: Composite scenario id -> why it was not run (a part failed alone).
        self.not_run: dict[str, str] = {}

    def normal_runs(self, convention: str | None = None) -> list[ClientRun]:
        """Rank runs on a fleet whose W was right (optionally of one convention)."""
        return [
            r
            for r in self.runs
            if r.kind == "rank" and (convention is None or r.convention == convention)
        ]

    def baseline_cause(self) -> str | None:
        """Why no verdict can rest on this client: it never completed the conformant baseline
        (the pinned heterogeneous fleet, told the right W, in its main convention), so a refusal
        elsewhere proves nothing. None: it completed it (returned, every engine initialised)."""
        baseline = [
            r
            for r in self.runs
            if r.kind == "rank"
            and r.convention == self.conventions[0]
            and r.name.startswith("pinned")
        ]
        if not baseline or any(_completed_baseline(r) for r in baseline):
            return None
        run = baseline[0]
        sizes = [e["world_size"] for e in run.engines]
        initialised = len(run.init_calls())
        return (
            f"the client did not complete the conformant baseline, a valid heterogeneous fleet "
            f"{sizes} told W={run.inference_world_size} ({run.convention}): client {run.outcome} "
            f"after {len(run.listing_calls)} listing request(s), {initialised} of "
            f"{len(run.engines)} engine(s) initialised (RANK-2)"
        )

    def pace_cause(self) -> str | None:
        """Why a run the client did not finish says nothing of its own requirement: the client
        polls a listing slower than the pace it declared (``--client-poll-interval``), so every
        deadline derived from that pace is too short for it (POLL-1). None: it keeps its pace."""
        slow = self.pace_problem()
        return None if slow is None else f"{slow} (POLL-1)"

    def pace_problem(self) -> str | None:
        """The client's measured poll interval when slower than declared: the median wait after a
        complete (200) listing that did not end its polling, over every run."""
        gaps = sorted(
            b.time - a.time
            for r in self.runs
            for a, b in zip(r.listing_calls, r.listing_calls[1:], strict=False)
            if a.status == 200
        )
        if not gaps:
            return None
        median = gaps[len(gaps) // 2]
        declared = self.pace.poll_interval
        if median <= PACE_TOLERANCE * declared + PACE_SLACK_S:
            return None
        return (
            f"the client polls a pending listing every {median:.2f} s (median of {len(gaps)} "
            f"waits after a 200), slower than its declared pace of {declared:g} s"
        )

    def scenario(self, scenario_id: str) -> ClientRun:
        """The run of one pinned scenario (CheckError when it was not run)."""
        for r in self.runs:
            if r.kind == scenario_id:
                return r
        why = self.not_run.get(scenario_id)
        raise CheckError(f"the scenario {scenario_id!r} was not run" + (f": {why}" if why else ""))

    def declared(self, convention: str) -> None:
        """Skipped unless the client declared ``convention`` (--client-conventions)."""
        from conformance.registry import Skipped

        if convention not in self.conventions:
            raise Skipped(
                f"the client does not implement {convention} (--client-conventions "
                f"{','.join(self.conventions)})"
            )


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


def call_client(
    client: ClientUnderTest,
    run: ClientRun,
    discovery_url: str,
    model: str | None,
    timeout: float,
    extra_env: dict[str, str] | None = None,
    *,
    grace: float = GRACE_S,
    poll_interval: float | None = None,
) -> None:
    """Run the client once (either form) and record its exit, result and error text in ``run``;
    a client still running ``grace`` seconds past its deadline is stopped and marked ``hung``."""
    with tempfile.TemporaryDirectory(prefix="conformance-result-") as tmp:
        result_file = os.path.join(tmp, "result.json")
        call = ClientCall(
            discovery_url,
            run.inference_world_size,
            run.convention,
            run.credentials,
            model,
            run.master_address,
            run.master_port,
            timeout,
            max_body_bytes=MAX_BODY_BYTES,
            result_file=result_file,
            poll_interval=poll_interval,
        )
        run.started = time.time()
        if client.command is not None:
            _call_command(client.command, call, run, extra_env or {}, grace)
        else:
            _call_function(client, call, run, extra_env or {}, grace)
        run.result = read_result(result_file)


def _call_command(
    command: str, call: ClientCall, run: ClientRun, extra: dict[str, str], grace: float
) -> None:
    env = {**os.environ, **extra, **call.to_env()}
    proc = subprocess.Popen(
        ["sh", "-c", command],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # the whole group is stopped at the deadline
    )
    try:
        out, err = proc.communicate(timeout=call.timeout + grace + COMMAND_START_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        run.hung = True
        run.message = (err or out or "")[-4000:]
        stop = call.timeout + grace + COMMAND_START_S
        run.outcome = f"still running {stop:g} s after the start (stopped)"
        return
    run.exit_code = proc.returncode
    run.returned = proc.returncode == 0
    run.message = (err or out or "")[-4000:]
    run.outcome = "returned" if run.returned else f"exit {proc.returncode}"


def _call_function(
    client: ClientUnderTest, call: ClientCall, run: ClientRun, extra: dict[str, str], grace: float
) -> None:
    assert client.func is not None
    box: dict[str, object] = {}
    args, kwargs = call.arguments()

    def target() -> None:
        try:
            client.func(*args, **kwargs)  # type: ignore[misc]
            box["ok"] = True
        except BaseException as exc:  # the client refused (or broke): recorded, judged by checks
            box["error"] = f"{type(exc).__name__}: {exc}"

    from conformance.client_logs import captured

    with _environment({**extra, **call.side_env()}), captured() as run.log:
        thread = threading.Thread(target=target, name="client-under-test", daemon=True)
        thread.start()
        thread.join(call.timeout + grace)
        # A hung callable cannot be stopped; its environment is restored regardless.
    if thread.is_alive():
        run.hung = True
        run.outcome = f"still running {call.timeout + grace:g} s after the start"
    elif box.get("ok"):
        run.returned, run.outcome = True, "returned"
    else:
        run.message = str(box.get("error", "?"))
        run.outcome = "raised"


@functools.cache
def _listing_http() -> httpx.Client:
    """One client for the suite's own listing reads (building one costs a TLS context)."""
    return httpx.Client(timeout=10, trust_env=False)


def listed_engines(fleet: Fleet, model: str | None) -> tuple[list[ListedEngine], list[OtherEngine]]:
    """(matching engines in canonical order, every other listed engine), from the listing.

    A worker matches when its ``model`` is absent or equal to ``model`` (SPEC §9.1). Each other
    entry says whether a client could have called it at all (a listed admin or system URL).
    """
    response = _listing_http().get(fleet.discovery_url)
    if response.status_code != 200:
        raise CheckError(f"the reference fleet answered {response.status_code} to its own listing")
    body = response.json()
    key_by_url: dict[str, str] = {}
    for engine in fleet.engines:
        for known in (engine.system_url, engine.admin_base_url):
            if known:
                key_by_url[known.rstrip("/")] = engine.spec.key
    ready: list[ListedEngine] = []
    others: list[OtherEngine] = []
    for w in body["workers"]:
        url = w.get("admin_base_url")
        reachable = url or w.get("system_url")
        key = key_by_url.get(reachable.rstrip("/")) if reachable else None
        identity = WorkerId.from_entry(w)
        entry: ListedEngine = {
            "label": str(identity),
            "identity": identity,
            "world_size": w.get("world_size"),
            "admin_base_url": url,
            "host": httpx.URL(url).host if url else None,
            "key": key,
            "reachable": bool(reachable),
            "model": w.get("model"),
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
            others.append(OtherEngine(**entry, why=why))
    ready.sort(key=lambda e: e["identity"])
    return ready, others


def _credentials(
    rng: random.Random, *, api_key: str | None = None, allowed: tuple[str, ...] | None = None
) -> Credentials:
    from conformance.client_call import SECRET_ENV

    return Credentials(
        api_key=api_key if api_key is not None else f"key-{rng.getrandbits(64):016x}",
        headers={"X-Static-Token": f"static-{rng.getrandbits(48):012x}"},
        headers_from_env={"X-Env-Token": SECRET_ENV},
        allowed_hosts=allowed,
    )


def _new_run(
    rng: random.Random, name: str, kind: str, convention: str, width: int, **fields: Any
) -> ClientRun:
    """A run to do for W = ``width``: fresh credentials (unless ``fields`` has them) and a random
    master port (the group's coordinates) drawn from ``rng``; ``fields`` are ClientRun's others."""
    credentials = fields.pop("credentials", None) or _credentials(rng)
    port = 29500 + rng.randrange(400)
    return ClientRun(name, kind, convention, width, credentials, "127.0.0.1", port, **fields)


def _with_userinfo(url: str) -> str:
    return url.replace("http://", "http://rl-user:url-secret@", 1)


_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy")


class Runner:
    """Runs the client of ``ctx`` against fleets and appends each run to ``ctx.runs``."""

    def __init__(self, ctx: ClientContext, rng: random.Random) -> None:
        self.ctx = ctx
        self.rng = rng
        declared = ctx.conventions
        self.main = declared[0]
        self._stopping: list[threading.Thread] = []

    @contextlib.contextmanager
    def fleet(self, topology: Topology, faults: tuple[str, ...] = ()) -> Iterator[ReferenceFleet]:
        """A reference fleet for one run, stopped in the background once the run is judged (its
        server's shutdown is a tenth of a second or more, a hung client's open connections
        up to a second): ``close`` waits for every stop."""
        from prime_rl_dynamo.suite.reference import start_reference_fleet

        fleet = start_reference_fleet(topology, faults=faults)
        try:
            yield fleet
        finally:
            stop = threading.Thread(target=fleet.stop, name="fleet-stop", daemon=True)
            stop.start()
            self._stopping.append(stop)

    def close(self) -> None:
        """Wait until every fleet of the runs has stopped."""
        for stop in self._stopping:
            stop.join()
        self._stopping.clear()

    def _plans(self, count: int) -> float:
        """The deadline of ``count`` plans at the client's pace."""
        pace = self.ctx.pace
        return pace.deadline(count * pace.plan)

    @property
    def _timeout(self) -> float:
        return float(self.ctx.run.options.client_timeout)

    def one(
        self,
        fleet: Fleet,
        client_run: ClientRun,
        *,
        model: str | None,
        timeout: float,
        url: str | None = None,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        """One run of the client against ``fleet``, recorded (CheckError: it could not start)."""
        fleet.recorder.clear()
        started = time.monotonic()
        deadline, grace = min(timeout, self._timeout), GRACE_S
        hung = sum(1 for r in self.ctx.runs if r.hung)
        if hung >= HANG_LIMIT:
            deadline, grace = min(deadline, HUNG_TIMEOUT_S), HUNG_GRACE_S
        call_client(
            self.ctx.client,
            client_run,
            url or fleet.discovery_url,
            model,
            deadline,
            extra_env=extra_env,
            grace=grace,
            poll_interval=self.ctx.pace.poll_interval,
        )
        client_run.elapsed = time.monotonic() - started
        client_run.outcome += f" in {client_run.elapsed:.1f} s"
        self._keep_log(client_run)
        calls = fleet.recorder.requests()
        client_run.admin_calls = [r for r in calls if r.server in ("admin", "system")]
        # Only GET /v1/rl/workers is a listing request; any other request on the listener (a
        # health check, say) is kept apart and reported, never judged as a poll.
        listener = [r for r in calls if r.server == "frontend"]
        client_run.listing_calls = [r for r in listener if is_listing(r)]
        client_run.other_listener_calls = [r for r in listener if not is_listing(r)]
        if client_run.other_listener_calls:
            seen = sorted({f"{r.method} {r.path}" for r in client_run.other_listener_calls})
            self.ctx.run.notes.append(
                f"client profile: {client_run.name}: {len(client_run.other_listener_calls)} "
                f"request(s) on the listener other than GET {LISTING_PATH} (not judged as "
                f"listing requests): {', '.join(seen[:5])}"
            )
        failure = self._start_failure(client_run)
        if failure is not None:
            raise CheckError(
                f"the client {self.ctx.client.description} could not be started: {failure}"
            )
        self.ctx.runs.append(client_run)

    def _keep_log(self, client_run: ClientRun) -> None:
        """What the client logged goes into the report (client_log), without the credentials
        it was given: a client may log them."""
        from conformance.client_call import SECRET_ENV
        from prime_rl_dynamo.redaction import scrub

        creds = client_run.credentials
        given = (os.environ.get(SECRET_ENV), creds.api_key, *creds.headers.values())
        secrets = tuple(v for v in given if v)
        self.ctx.run.client_log.extend(
            scrub({"run": client_run.name, **r}, secrets) for r in client_run.log
        )

    def _start_failure(self, run: ClientRun) -> str | None:
        """Why a command could not start at all, judged on its exit and the wire: exit 126/127,
        or a non-zero exit without a single request on the first (conformant) fleet."""
        if run.exit_code is None:
            return None
        tail = run.message.strip()[-300:]
        if run.exit_code in (126, 127):
            return f"exit {run.exit_code}: {tail}"
        first = not self.ctx.runs and run.kind == "rank"
        if first and run.exit_code != 0 and not run.listing_calls:
            return f"exit {run.exit_code} before any request on a conformant fleet: {tail}"
        return None

    # -- the rank runs ------------------------------------------------------------------------

    def rank_runs(self, *, refusal: bool, with_plans: bool = True) -> None:
        """The pinned [2, 4, 1] fleet once per declared convention (with ``with_plans``) and, with
        ``refusal``, once told the wrong W."""
        from prime_rl_dynamo.topology import topology_from_dict

        # Without plans, the main convention's plan alone: the conformant baseline every other
        # verdict rests on (ClientContext.baseline_cause).
        declared, main = self.ctx.conventions if with_plans else (self.main,), self.main
        native = Convention.VLLM_NATIVE_NCCL.value
        fleets = [
            (PINNED_TOPOLOGY, [c for c in declared if c != native], refusal and main != native),
            (
                PINNED_NATIVE_TOPOLOGY,
                [c for c in declared if c == native],
                refusal and main == native,
            ),
        ]
        for data, conventions, with_refusal in fleets:
            if not conventions and not with_refusal:
                continue
            pinned = topology_from_dict(data, source="pinned topology [2, 4, 1]")
            with self.fleet(pinned) as fleet:
                ready, others = listed_engines(fleet, pinned.model)
                width = sum(e["world_size"] for e in ready)
                plans = [
                    (f"pinned topology [2, 4, 1] ({c})", c, width, "rank") for c in conventions
                ]
                if with_refusal:
                    plans.append(
                        ("pinned topology [2, 4, 1], told the wrong W", main, width + 1, "refusal")
                    )
                for name, conv, told, kind in plans:
                    run = _new_run(self.rng, name, kind, conv, told, engines=ready, others=others)
                    # The refusal waits out its whole deadline (READY-3): a plan's is enough.
                    count = 1 if kind == "refusal" else RANK_PLANS
                    self.one(fleet, run, model=pinned.model, timeout=self._plans(count))

    def generated_runs(
        self,
        count: int,
        *,
        shape: Callable[[dict[str, Any], str], dict[str, Any]] | None = None,
    ) -> None:
        """``count`` generated heterogeneous topologies (nothing unusual but sizes and hosts),
        rotating the declared conventions; every second one with an allow-list. ``shape`` may
        adapt a topology to its convention (the engines a native-NCCL client needs)."""
        from prime_rl_dynamo.suite.strategies import sample, topologies
        from prime_rl_dynamo.topology import topology_from_dict

        declared, seed = self.ctx.conventions, self.ctx.run.seed
        # The first drawn example is the strategy's minimal one: draw one more and drop it.
        drawn = sample(topologies(), count + 1, seed)[1:]
        for index, data in enumerate(drawn, start=1):
            convention = declared[(index - 1 + seed) % len(declared)]
            restricted = index % 2 == 0
            data = heterogeneous(plain(data))
            if shape is not None:
                data = shape(data, convention)
            if restricted:
                data = with_disallowed_host(data)
            source = f"generated topology {index}"
            topology = topology_from_dict(data, source=source)
            with self.fleet(topology) as fleet:
                ready, others = listed_engines(fleet, topology.model)
                name = f"{source} ({convention}{', allow-list 127.0.0.1' if restricted else ''})"
                allowed = ("127.0.0.1",) if restricted else None
                client_run = _new_run(
                    self.rng,
                    name,
                    "rank",
                    convention,
                    sum(e["world_size"] for e in ready),
                    credentials=_credentials(self.rng, allowed=allowed),
                    engines=ready,
                    others=others,
                )
                self.one(fleet, client_run, model=topology.model, timeout=self._plans(RANK_PLANS))

    # -- the scenarios ------------------------------------------------------------------------

    def scenarios(self, wanted: set[str], parts_failed: Callable[[Scenario], str | None]) -> None:
        """Every scenario in ``wanted``; a composite only when ``parts_failed`` finds none of its
        parts failing alone (else ``ctx.not_run`` says which)."""
        from prime_rl_dynamo.topology import topology_from_dict

        chosen = [s for s in SCENARIOS if s.id in wanted]
        if not chosen:
            return
        with self.fleet(topology_from_dict(BASE, source="proxy target")) as other:
            for scenario in chosen:
                if scenario.parts:
                    why = parts_failed(scenario)
                    if why is not None:
                        self.ctx.not_run[scenario.id] = why
                        continue
                self.scenario(scenario, other)

    def scenario(self, scenario: Scenario, other: Fleet) -> None:
        """One scenario; the plan the client should have reached is read after it ends."""
        from prime_rl_dynamo.topology import topology_from_dict

        pace = self.ctx.pace
        ready_after = scenario.ready_after(pace)
        topology = topology_from_dict(scenario.fleet(pace), source=f"scenario {scenario.id}")
        with self.fleet(topology, faults=scenario.faults) as fleet:
            for key, attribute, value in scenario.engine_setup:
                setattr(fleet.engine(key), attribute, value)
            creds = _credentials(self.rng, api_key=scenario.api_key, allowed=scenario.allowed_hosts)
            client_run = _new_run(
                self.rng,
                f"scenario {scenario.id} ({scenario.what})",
                scenario.id,
                self.main,
                scenario.inference_world_size,
                credentials=creds,
                ready_from_listing=scenario.ready_from_listing,
                pending_listings=scenario.pending_listings,
                parts=scenario.parts,
            )
            if ready_after is not None:
                # The schedule counts from the client's first listing request.
                fleet.frontend.started = float("inf")
                fleet.frontend.schedule_from_first_listing = True
            extra_env: dict[str, str] = {}
            if scenario.proxy:
                proxy = other.frontend_url
                extra_env = {name: proxy for name in _PROXY_VARIABLES}
                extra_env.update({"NO_PROXY": "", "no_proxy": ""})
                other.recorder.clear()
            url = _with_userinfo(fleet.discovery_url) if scenario.userinfo_url else None
            self.one(
                fleet,
                client_run,
                model=topology.model,
                timeout=scenario.timeout(pace),
                url=url,
                extra_env=extra_env,
            )
            if ready_after is not None:
                first = client_run.listing_calls[0].time if client_run.listing_calls else None
                client_run.ready_at = None if first is None else first + ready_after
                _schedule_done(fleet, client_run.ready_at, ready_after)
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
                if attribute.startswith("admin_redirect_"):
                    setattr(fleet.engine(key), attribute, None)
            client_run.engines, client_run.others = listed_engines(fleet, topology.model)

    # -- real Dynamo --------------------------------------------------------------------------

    def dynamo_runs(self, decided: Callable[[str], str | None] = lambda kind: None) -> None:
        """What real Dynamo can present, through the harness: a plan, an error, a resize.

        ``decided(kind)`` says why a run would change no verdict (its checks already failed on
        the reference fleets): such a run is not made, and no fleet is started when none is left.
        """
        from conformance.runner import dynamo_unavailable

        ctx = self.ctx
        opts = ctx.run.options
        unavailable = dynamo_unavailable()
        if opts.target == "reference" or unavailable:
            why = "--target reference" if opts.target == "reference" else unavailable
            ctx.run.notes.append(f"client profile: no real Dynamo runs ({why})")
            return
        kinds = [f"dynamo:{k}" for k in ("plan", "error-then-ready", "sum-then-ready")]
        kinds.append("dynamo:resize-after-init")
        skipped = {kind: why for kind in kinds if (why := decided(kind)) is not None}
        for kind, why in skipped.items():
            ctx.run.notes.append(f"client profile: no {kind} run on real Dynamo: {why}")
        if len(skipped) == len(kinds):
            return
        from prime_rl_dynamo.suite.harness import start_dynamo_fleet  # type: ignore[attr-defined,unused-ignore]
        from prime_rl_dynamo.topology import topology_from_dict

        topology = topology_from_dict(DYNAMO_TOPOLOGY, source="real Dynamo [2, 4, 1]")
        key = "dynamo.engine-c#0"
        convention = self.main

        real = _real()

        def make(name: str, kind: str, width: int) -> ClientRun:
            return _new_run(self.rng, f"{real} [2, 4, 1], {name}", kind, convention, width)

        def one(fleet: Fleet, run: ClientRun, **kw: Any) -> None:
            self.one(fleet, run, **kw)

        with start_dynamo_fleet(topology, discovery=opts.discovery) as fleet:
            ready, others = listed_engines(fleet, topology.model)
            width = sum(e["world_size"] for e in ready)
            if not ready:
                # A release whose listing carries no admin_base_url or world_size (before 1.5.0)
                # presents nothing a client could plan: no scenario to judge a client on.
                ctx.run.notes.append(
                    f"client profile: no {real} runs: its listing presents no engine a client "
                    "can plan (no admin_base_url with a world_size); the frontend profile judges that"
                )
                return
            plan = make(
                f"{convention}, a model-less engine and another model's", "dynamo:plan", width
            )
            plan.engines, plan.others = ready, others
            real_listing_problem(plan, ready, others, width)
            if plan.kind not in skipped:
                one(fleet, plan, model=topology.model, timeout=DYNAMO_PLAN_TIMEOUT_S)
            if "dynamo:error-then-ready" not in skipped:
                fleet.kill(key)
                fleet.wait_ready(timeout=30)  # engine-c listed with an error (or gone)
                during(
                    ctx,
                    one,
                    fleet,
                    topology.model,
                    make("engine-c killed, restarted after 1 s", "dynamo:error-then-ready", width),
                    lambda: fleet.restart(key),
                )
            if "dynamo:sum-then-ready" not in skipped:
                during(
                    ctx,
                    one,
                    fleet,
                    topology.model,
                    make("engine-c resized 1 -> 3 after 1 s", "dynamo:sum-then-ready", width + 2),
                    lambda: fleet.resize(key, 3),
                )
            if "dynamo:resize-after-init" in skipped:
                ctx.run.notes.append(f"client profile: {4 - len(skipped)} runs against {real}")
                return
            # TOPO-1: engine-a's routes reply reports world size 4 once it answered its init.
            resized = make(
                "engine-a reports world size 4 once initialised", "dynamo:resize-after-init", 0
            )
            fleet.resize_after_init["dynamo.engine-a#0"] = 4
            try:
                fleet.restart("dynamo.engine-a#0")
                fleet.wait_ready(timeout=30)
            except Exception as exc:  # the harness, not the client
                resized.harness_problem = f"the harness could not restart engine-a: {exc}"
            resized.engines, resized.others = listed_engines(fleet, topology.model)
            resized.inference_world_size = sum(e["world_size"] for e in resized.engines)
            if not resized.harness_problem:
                one(
                    fleet,
                    resized,
                    model=topology.model,
                    timeout=min(self._timeout, DYNAMO_PLAN_TIMEOUT_S),
                )
            else:
                ctx.runs.append(resized)
        ctx.run.notes.append(
            f"client profile: {4 - len(skipped)} runs against {real} through the harness"
        )


def _schedule_done(fleet: ReferenceFleet, ready_at: float | None, ready_after: float) -> None:
    """Let the whole schedule happen before the final fleet is read (a client that returned
    early must be judged against the fleet as it ends up, not as it was when it returned)."""
    frontend = fleet.frontend
    frontend.schedule_from_first_listing = False
    if ready_at is None:  # the client never asked: play the schedule out now
        frontend.started = time.monotonic() - ready_after - 1.0
        return
    left = ready_at + 0.05 - time.time()
    if left > 0:
        time.sleep(left)


def real_listing_problem(
    run: ClientRun, ready: list[ListedEngine], others: list[OtherEngine], width: int
) -> None:
    """Say (as ``run.harness_problem``) what the real listing failed to present of the scenario."""
    missing = []
    if width != 7 or len(ready) != 3:
        missing.append(f"3 matching engines summing to 7 (listed {len(ready)}, sum {width})")
    if not any(o["why"] == "another model" and o["reachable"] for o in others):
        missing.append("a reachable engine of another model")
    if missing:
        run.harness_problem = f"the real listing did not present {' and '.join(missing)}"


def during(
    ctx: ClientContext,
    one: Callable[..., None],
    fleet: Fleet,
    model: str | None,
    client_run: ClientRun,
    change: Callable[[], object],
    timeout: float = DYNAMO_CHANGE_TIMEOUT_S,
) -> None:
    """Run the client while the harness changes the fleet; a change that raises or outlasts the
    client's deadline is recorded as ``harness_problem`` (an error of the run, never a failure)."""
    timeout = min(timeout, ctx.run.options.client_timeout)
    # The harness changes the fleet from this thread; the client runs in another.
    failure: list[BaseException] = []

    def client() -> None:
        try:
            one(fleet, client_run, model=model, timeout=timeout)
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
    worker.join(timeout + 30)
    if failure:
        raise failure[0]
    client_run.engines, client_run.others = listed_engines(fleet, model)
    if not client_run.harness_problem and took > timeout - 2.0:
        client_run.harness_problem = (
            f"the harness took {took:.1f} s to change the fleet, longer than the client's "
            f"{timeout:g} s deadline allows (a loaded machine?)"
        )
