"""Discovery latency and time to a ready snapshot against fleet size, on both frontends.

For each fleet size both frontends run at once (the reference fleet in a process of its own, the
real Dynamo frontend through the harness) and requests alternate between them, so that both see
the same machine noise. A frontend that cannot run here is reported as skipped, with the reason.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import httpx

from prime_rl_dynamo.errors import PrimeRLDynamoError
from tools.bench import child_argv, child_env, refuse_unknown
from tools.bench.progress import NullReporter, Phase, Reporter
from tools.bench.stats import interleaved, paired_ratio, summarize

__all__ = [
    "FRONTENDS",
    "DiscoveryConfig",
    "fleet_topology",
    "fleets_per_size",
    "frontend_series",
    "latency_ratios",
    "run_discovery",
]

#: Frontends in the order they are reported; ratios are dynamo / reference.
FRONTENDS = ("reference", "dynamo")

#: Neither fleet reports a model: the harness's stub workers register no model card with the real
#: frontend, so the reference fleet omits it too and both listings have the same shape.
MODEL: str | None = None


@dataclass(frozen=True)
class DiscoveryConfig:
    """What the discovery benchmark measures and how hard."""

    sizes: tuple[int, ...] = (1, 8, 64)
    requests: int = 300  # GET /v1/rl/workers per frontend and fleet size
    ready_repetitions: int = 15  # DiscoveryClient runs to a ready snapshot, per frontend and size
    frontends: tuple[str, ...] = FRONTENDS
    engine_world_size: int = 2
    warmup: int = 5
    start_timeout_s: float = 180.0


class FleetUnavailable(Exception):
    """A frontend could not be started here; the message says why.

    ``permanent`` means no fleet size can work (a missing package), so the series is skipped.
    """

    def __init__(self, reason: str, *, permanent: bool = False) -> None:
        super().__init__(reason)
        self.permanent = permanent


#: Why a Dynamo series cannot run, ``{exc}`` being the import error.
NO_DYNAMO = "real Dynamo is unavailable ({exc}); install prime-rl-dynamo[dynamo]"


def require(*modules: str, reason: str) -> None:
    """Import ``modules``, or raise a permanent FleetUnavailable: ``reason`` with ``{exc}`` filled."""
    try:
        for module in modules:
            importlib.import_module(module)
    except ImportError as exc:
        raise FleetUnavailable(reason.format(exc=exc), permanent=True) from exc


def fleet_topology(engines: int, world_size: int, *, namespace: str = "bench") -> dict[str, Any]:
    """A topology of ``engines`` identical decode engines (topology.v1 document)."""
    if engines < 1:
        raise ValueError(f"a benchmark fleet needs at least one engine, got {engines}")
    return {
        "version": 1,
        "namespace": namespace,
        "model": MODEL,
        "seed": 7,
        "engines": [{"component": "decode", "count": engines, "world_size": world_size}],
    }


@dataclass
class _Frontend:
    discovery_url: str
    startup_s: float


@contextlib.contextmanager
def _reference_frontend(topology: dict[str, Any], timeout_s: float) -> Iterator[_Frontend]:
    start = time.perf_counter()
    require(
        "prime_rl_dynamo.suite.reference", reason="the reference fleet is not importable: {exc}"
    )
    # stderr goes to a file: a pipe nobody reads would stall a chatty child.
    with tempfile.TemporaryFile(mode="w+") as errors:
        proc = subprocess.Popen(
            child_argv("fleet_server", json.dumps(topology)),
            env=child_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
        try:
            line = _readline_with_deadline(proc, timeout_s)
            if not line:
                proc.wait(timeout=10)
                errors.seek(0)
                raise FleetUnavailable(
                    "the reference fleet process exited before announcing its URL: "
                    + errors.read()[-600:]
                )
            urls = json.loads(line)
            frontend = _Frontend(urls["discovery_url"], 0.0)
            _wait_listing_ready(frontend.discovery_url, _engine_count(topology), start + timeout_s)
            frontend.startup_s = time.perf_counter() - start
            yield frontend
        finally:
            # Closing its stdin tells the child to stop its fleet and exit.
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def _readline_with_deadline(proc: subprocess.Popen[str], timeout_s: float) -> str:
    # A reader thread keeps a hung child from hanging the benchmark.
    box: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        box.append(proc.stdout.readline())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout_s)
    if not box:
        proc.kill()
        raise FleetUnavailable(f"the reference fleet did not announce its URL within {timeout_s}s")
    return box[0]


@contextlib.contextmanager
def _dynamo_frontend(topology: dict[str, Any], timeout_s: float) -> Iterator[_Frontend]:
    start = time.perf_counter()
    require("dynamo.runtime", "prime_rl_dynamo.suite.harness", reason=NO_DYNAMO)
    from prime_rl_dynamo.suite.harness import start_dynamo_fleet
    from prime_rl_dynamo.topology import topology_from_dict

    try:
        fleet = start_dynamo_fleet(
            topology_from_dict(topology, source="<bench topology>"), startup_timeout=timeout_s
        )
    except Exception as exc:  # the harness may fail in many ways; report, never guess
        raise FleetUnavailable(f"the Dynamo harness failed to start: {exc!r}") from exc
    with fleet:
        _wait_listing_ready(fleet.discovery_url, _engine_count(topology), start + timeout_s)
        yield _Frontend(fleet.discovery_url, time.perf_counter() - start)


def _engine_count(topology: dict[str, Any]) -> int:
    return sum(int(group.get("count", 1)) for group in topology["engines"])


def _wait_listing_ready(url: str, engines: int, deadline: float) -> None:
    """Wait until the listing shows every engine with an admin URL and no error."""
    last = "no answer yet"
    with httpx.Client(timeout=10.0) as client:
        while time.perf_counter() < deadline:
            try:
                response = client.get(url)
                if response.status_code == 200:
                    workers = response.json().get("workers", [])
                    healthy = [w for w in workers if "error" not in w and "admin_base_url" in w]
                    if len(healthy) == engines and len(workers) == engines:
                        return
                    last = f"{len(healthy)} healthy of {len(workers)} listed, want {engines}"
                else:
                    last = f"HTTP {response.status_code}"
            except (httpx.HTTPError, ValueError) as exc:
                last = repr(exc)
            time.sleep(0.1)  # polling a server we do not control; bounded by the deadline
    raise FleetUnavailable(f"{url} did not list {engines} ready engines in time ({last})")


def _get_call(client: httpx.Client, url: str, sizes: list[int]) -> Callable[[], None]:
    def get() -> None:
        response = client.get(url)
        if response.status_code != 200:
            raise RuntimeError(f"GET {url}: expected 200, found {response.status_code}")
        sizes.append(len(response.content))

    return get


def record_unavailable(
    series: dict[str, Any], name: str, engines: int, exc: FleetUnavailable, reporter: Reporter
) -> None:
    """Note in one frontend's ``series`` that its fleet of ``engines`` could not start.

    A permanent reason skips the frontend at every size; any other marks the series partial
    with a skipped point at this size."""
    reason = str(exc)
    if exc.permanent:
        series.update(status="skipped", reason=reason)
    else:
        series["status"] = "partial"
        series["points"].append({"engines": engines, "skipped": reason})
    reporter.log(f"{name} at {engines} engines skipped: {reason}")


def measure_gets(
    stack: contextlib.ExitStack,
    running: Mapping[str, _Frontend],
    engines: int,
    warmup: int,
    requests: int,
    phase: Phase,
    *,
    timeout_s: float,
) -> tuple[dict[str, list[float]], dict[str, list[int]]]:
    """GET /v1/rl/workers on every running frontend, interleaved, after ``warmup`` rounds.

    Returns each frontend's latencies (seconds) and body sizes (bytes); one ``phase`` step a
    request round."""
    clients = {name: stack.enter_context(httpx.Client(timeout=timeout_s)) for name in running}
    body_sizes: dict[str, list[int]] = {name: [] for name in running}
    gets = {
        name: _get_call(clients[name], fe.discovery_url, body_sizes[name])
        for name, fe in running.items()
    }
    phase.note(f"GET /v1/rl/workers at {engines} engines")
    for _ in range(warmup):
        for get in gets.values():
            get()
    latency = interleaved(gets, requests, after_each=lambda _rep: phase.advance())
    return latency, body_sizes


#: DiscoveryClient settings for the time-to-ready figure: the shortest pause between polls the
#: client accepts (1 ms; zero is refused as a tight loop), so the figure is the client's own work
#: plus that 1 ms (stable_polls=2 by default: two GETs, each validated and assessed).
READY_CLIENT_SETTINGS: dict[str, Any] = {"poll_interval": 0.001, "timeout": 20.0}


def _ready_call(url: str, world_size: int) -> Callable[[], object]:
    """One end-to-end DiscoveryClient run: construct, poll, validate, return a ready snapshot."""
    from prime_rl_dynamo.client import PollingPolicy, ReadinessPolicy, discover_sync

    policy = ReadinessPolicy(world_size, model=MODEL)
    polling = PollingPolicy(**READY_CLIENT_SETTINGS)

    def ready() -> object:
        return discover_sync(url, policy, polling)

    return ready


def frontend_series(frontends: Sequence[str]) -> dict[str, dict[str, Any]]:
    """One result series per frontend (ValueError naming an unknown one): its status, why it was
    skipped, and its points, one per fleet size."""
    refuse_unknown("frontends", frontends, FRONTENDS)
    return {name: {"status": "ok", "reason": None, "points": []} for name in frontends}


def fleets_per_size(
    sizes: Sequence[int],
    series: Mapping[str, dict[str, Any]],
    start: Callable[[str, int], contextlib.AbstractContextManager[_Frontend]],
    phase: Phase,
    reporter: Reporter,
) -> Iterator[tuple[int, contextlib.ExitStack, dict[str, _Frontend]]]:
    """Per fleet size, every frontend of ``series`` with a fleet of that many engines, started
    side by side (``start(frontend, engines)``) and stopped when the caller asks for the next
    size: ``(engines, stack, running)``. A frontend whose fleet cannot start is recorded in its
    series (:func:`record_unavailable`); one skipped for good is not started again."""
    for engines in sizes:
        with contextlib.ExitStack() as stack:
            running: dict[str, _Frontend] = {}
            for name, line in series.items():
                if line["status"] == "skipped":
                    continue  # unavailable at a smaller size: it will not work at a larger one
                phase.note(f"starting {name} fleet of {engines}")
                try:
                    running[name] = stack.enter_context(start(name, engines))
                except FleetUnavailable as exc:
                    record_unavailable(line, name, engines, exc, reporter)
            phase.advance()
            yield engines, stack, running


def latency_ratios(engines: int, latency: Mapping[str, list[float]]) -> dict[str, Any]:
    """The dynamo / reference ratios of one size's listing latencies: p50, p99 (each of its own
    distribution) and the paired ratio of the interleaved GETs."""
    dynamo, reference = latency["dynamo"], latency["reference"]
    return {
        "engines": engines,
        "latency_p50": _ratio(dynamo, reference, "p50"),
        "latency_p99": _ratio(dynamo, reference, "p99"),
        "latency_paired": paired_ratio(dynamo, reference),
    }


def run_discovery(
    config: DiscoveryConfig | None = None, reporter: Reporter | None = None
) -> dict[str, Any]:
    """Measure every fleet size on every frontend; returns the ``discovery`` section of the report."""
    config = config or DiscoveryConfig()
    reporter = reporter or NullReporter()
    series = frontend_series(config.frontends)
    starters = {"reference": _reference_frontend, "dynamo": _dynamo_frontend}
    ratios: list[dict[str, Any]] = []
    steps_per_size = config.requests + config.ready_repetitions + 1
    phase = reporter.phase("discovery", steps_per_size * len(config.sizes))
    ready_reason = _ready_unavailable_reason()

    def start(name: str, engines: int) -> contextlib.AbstractContextManager[_Frontend]:
        topology = fleet_topology(engines, config.engine_world_size)
        return starters[name](topology, config.start_timeout_s)

    for engines, stack, running in fleets_per_size(config.sizes, series, start, phase, reporter):
        world_size = engines * config.engine_world_size
        if not running:
            phase.advance(steps_per_size - 1)
            continue

        latency, body_sizes = measure_gets(
            stack, running, engines, config.warmup, config.requests, phase, timeout_s=30.0
        )

        ready: dict[str, list[float]] = {}
        ready_failed: dict[str, str] = {}
        if ready_reason is None:
            phase.note(f"time to a ready snapshot at {engines} engines")
            calls = {}
            for name, fe in running.items():
                call = _ready_call(fe.discovery_url, world_size)
                try:
                    call()  # warm-up, and proof that a ready snapshot comes before timing
                except PrimeRLDynamoError as exc:
                    ready_failed[name] = f"DiscoveryClient failed: {exc}"[:800]
                    reporter.log(f"{name} at {engines} engines: {ready_failed[name]}")
                    continue
                calls[name] = call
            if calls:
                ready = interleaved(
                    calls, config.ready_repetitions, after_each=lambda _rep: phase.advance()
                )
            else:
                phase.advance(config.ready_repetitions)
        else:
            phase.advance(config.ready_repetitions)

        for name, fe in running.items():
            point: dict[str, Any] = {
                "engines": engines,
                "inference_world_size": world_size,
                "startup_s": fe.startup_s,
                "body_bytes": max(body_sizes[name]) if body_sizes[name] else None,
                "latency_s": summarize(latency[name]),
                "ready_s": summarize(ready[name]) if name in ready else None,
            }
            if name not in ready:
                point["ready_skipped"] = ready_failed.get(name, ready_reason)
            series[name]["points"].append(point)
        if "reference" in running and "dynamo" in running:
            ratio = latency_ratios(engines, latency)
            if "reference" in ready and "dynamo" in ready:
                ratio["ready_paired"] = paired_ratio(ready["dynamo"], ready["reference"])
            ratios.append(ratio)
    phase.done()
    return {
        "config": asdict(config),
        "ready_client_settings": READY_CLIENT_SETTINGS,
        "ratio_of": "dynamo / reference",
        "series": series,
        "ratios": ratios,
    }


def _ratio(numerator: list[float], denominator: list[float], key: str) -> float:
    """Ratio of one percentile of two latency distributions (not paired: percentiles of each)."""
    below = summarize(denominator)[key]
    return float(summarize(numerator)[key] / below) if below > 0 else float("inf")


def _ready_unavailable_reason() -> str | None:
    try:
        from prime_rl_dynamo.client import discover_sync  # noqa: F401
    except ImportError as exc:
        return f"the discovery client is not available: {exc}"
    return None
