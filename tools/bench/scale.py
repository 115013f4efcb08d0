"""Listing latency at 64, 128 and 256 engines on both frontends, and the 256-engine round trip.

For each size the reference fleet and a real Dynamo fleet (the harness, several engines per stub
process) run at once and GETs alternate between them. On the real Dynamo fleet the section also
times the round trip: start-up, then polling until the listing equals the registered fleet
(``conformance.roundtrip.compare_listing``: every engine once, with its URLs, world size, routes
and model), and measures the fleet's memory (RSS of every process). Not a test: figures only.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

from tools.bench.discovery import (
    FRONTENDS,
    NO_DYNAMO,
    FleetUnavailable,
    _Frontend,
    _reference_frontend,
    fleet_topology,
    fleets_per_size,
    frontend_series,
    latency_ratios,
    measure_gets,
    require,
)
from tools.bench.progress import NullReporter, Reporter
from tools.bench.stats import summarize

__all__ = ["ScaleConfig", "run_scale"]


@dataclass(frozen=True)
class ScaleConfig:
    """What the scale section measures."""

    sizes: tuple[int, ...] = (64, 128, 256)
    requests: int = 20  # GETs per frontend and size (a 256-engine Dynamo GET takes ~0.5 s)
    warmup: int = 2
    frontends: tuple[str, ...] = FRONTENDS
    engine_world_size: int = 2
    engines_per_process: int = 16  # stub packing on the Dynamo side (docs/harness.md, Scale)
    model: str | None = "bench/model"  # registered by every Dynamo stub through the runtime
    roundtrip_timeout_s: float = 60.0
    start_timeout_s: float = 240.0


@dataclass
class _DynamoRun(_Frontend):
    roundtrip_s: float = 0.0
    roundtrip_ok: bool = False
    problems: tuple[str, ...] = ()
    memory_bytes: int = 0
    processes: int = 0


@contextlib.contextmanager
def _dynamo_roundtrip(topology: dict[str, Any], config: ScaleConfig) -> Iterator[_DynamoRun]:
    """Start the fleet, time until its listing equals it, measure memory; yield while it runs."""
    require(
        "dynamo.runtime", "conformance.roundtrip", "prime_rl_dynamo.suite.harness", reason=NO_DYNAMO
    )
    from conformance.roundtrip import compare_listing
    from prime_rl_dynamo.suite.harness import DynamoFleet
    from prime_rl_dynamo.topology import topology_from_dict

    began = time.perf_counter()
    fleet = DynamoFleet(
        topology_from_dict(topology, source="<bench scale topology>"),
        engines_per_process=config.engines_per_process,
        startup_timeout=config.start_timeout_s,
    )
    with fleet:
        try:
            fleet.start()
        except Exception as exc:  # the harness may fail in many ways; report, never guess
            raise FleetUnavailable(f"the Dynamo harness failed to start: {exc}") from exc
        started = time.perf_counter()
        deadline = started + config.roundtrip_timeout_s
        problems = ["no listing yet"]
        while time.perf_counter() < deadline:
            problems = compare_listing(fleet.listing(), fleet.engines, set(), when="scale")
            if not problems:
                break
        done = time.perf_counter()
        run = _DynamoRun(
            discovery_url=fleet.discovery_url,
            startup_s=started - began,
            roundtrip_s=done - began,
            roundtrip_ok=not problems,
            problems=tuple(problems[:5]),
            memory_bytes=fleet.memory_bytes(),
            processes=len(fleet.processes),
        )
        yield run


def run_scale(
    config: ScaleConfig | None = None, reporter: Reporter | None = None
) -> dict[str, Any]:
    """Measure every size on both frontends; returns the ``scale`` section of the report."""
    config = config or ScaleConfig()
    reporter = reporter or NullReporter()
    series = frontend_series(config.frontends)
    ratios: list[dict[str, Any]] = []
    phase = reporter.phase("scale", (config.requests + 1) * len(config.sizes))

    def start(name: str, engines: int) -> contextlib.AbstractContextManager[_Frontend]:
        topology = {**fleet_topology(engines, config.engine_world_size), "model": config.model}
        if name == "dynamo":
            return _dynamo_roundtrip(topology, config)
        return _reference_frontend(topology, config.start_timeout_s)

    for engines, stack, running in fleets_per_size(config.sizes, series, start, phase, reporter):
        if not running:
            phase.advance(config.requests)
            continue
        latency, body_sizes = measure_gets(
            stack, running, engines, config.warmup, config.requests, phase, timeout_s=60.0
        )
        for name, fe in running.items():
            point: dict[str, Any] = {
                "engines": engines,
                "startup_s": fe.startup_s,
                "body_bytes": max(body_sizes[name]) if body_sizes[name] else None,
                "latency_s": summarize(latency[name]),
                "ready_s": None,
                "ready_skipped": "not measured in this section",
            }
            if isinstance(fe, _DynamoRun):
                point.update(
                    roundtrip_s=fe.roundtrip_s,
                    roundtrip_ok=fe.roundtrip_ok,
                    roundtrip_problems=list(fe.problems),
                    memory_bytes=fe.memory_bytes,
                    processes=fe.processes,
                    engines_per_process=config.engines_per_process,
                )
                reporter.log(
                    f"dynamo {engines} engines: round trip {fe.roundtrip_s:.1f} s "
                    f"(start-up {fe.startup_s:.1f} s), {fe.memory_bytes / 2**30:.2f} GiB "
                    f"in {fe.processes} processes, listing equals fleet: {fe.roundtrip_ok}"
                )
            series[name]["points"].append(point)
        if "reference" in running and "dynamo" in running:
            ratios.append(latency_ratios(engines, latency))
    phase.done()
    return {
        "config": asdict(config),
        "ratio_of": "dynamo / reference",
        "series": series,
        "ratios": ratios,
    }
