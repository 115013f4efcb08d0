"""Wall time of the whole client profile, per client under test, side by side in one run.

Each run is a fresh process (``conformance.run(profiles=["client"], client=...)``, imports and
every fleet included); the clients alternate within each repetition. The conformant clients (the
project's, the spec client) and the misbehaving ones bound what a trainer team waits for: a zoo
client, one that waits out every deadline (``never_ready``: the slowest a client can make the
profile without hanging) and one that never returns (``hangs``). The section reports the slowest
conformant and the slowest misbehaving client's whole-profile time (``bounds``): issue #20 asks
at most 40 s and 120 s.
"""

from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass
from typing import Any

from tools.bench import refuse_unknown
from tools.bench.progress import NullReporter, Reporter
from tools.bench.stats import paired_ratio
from tools.bench.suite import rotated_runs, timed_child

__all__ = [
    "CLIENTS",
    "DEFAULT_CLIENTS",
    "ClientProfileConfig",
    "bounds",
    "client_profile_says",
    "hangs",
    "never_ready",
    "run_client_profile",
]

#: label -> client under test (module:function).
CLIENTS: dict[str, str] = {
    "project client": "conformance.examples.project_client:run",
    "spec client": "conformance.examples.spec_client:run",
    "zoo: treats 429 as fatal": "conformance.examples.zoo:treats_429_as_fatal",
    # The one that held the profile longest before each scenario had its own deadline (285 s).
    "zoo: ignores the model filter": "conformance.examples.zoo:ignores_model_filter",
    "never ready (waits out every deadline)": "tools.bench.client_profile:never_ready",
    "hangs (never returns)": "tools.bench.client_profile:hangs",
}
#: What a run times by default: the conformant clients and the two slowest misbehaving ones (the
#: zoo clients fall between them; name them to time them too).
DEFAULT_CLIENTS = (
    "project client",
    "spec client",
    "never ready (waits out every deadline)",
    "hangs (never returns)",
)
#: The clients that pass every check; every other one misbehaves.
CONFORMANT = ("project client", "spec client")


def never_ready(discovery_url: str, *args: Any, timeout: float, **kwargs: Any) -> None:
    """A client under test that polls the listing until its deadline and then gives up, in every
    run: what a client that never finds a fleet ready costs the profile."""
    import time

    import httpx

    end = time.monotonic() + timeout
    with httpx.Client(timeout=1.0, trust_env=False) as http:
        while time.monotonic() < end:
            with contextlib.suppress(httpx.HTTPError):
                http.get(discovery_url)
            time.sleep(0.1)
    raise TimeoutError(f"not ready after {timeout} s")


def hangs(*args: Any, **kwargs: Any) -> None:
    """A client under test that never returns (the profile stops waiting for it)."""
    import threading

    threading.Event().wait()


@dataclass(frozen=True)
class ClientProfileConfig:
    """Which clients the client profile is timed with, and how often."""

    clients: tuple[str, ...] = DEFAULT_CLIENTS
    repetitions: int = 3
    topologies: int = 3  # generated topologies per run (the default of the command)
    seed: int = 1
    timeout_s: float = 300.0  # one whole profile run
    target: str = "reference"  # the fleets: "reference" only, or "auto" (real Dynamo too)
    #: The pace the bounds are measured at (--client-poll-interval): the fast one, which the
    #: project's and the spec client follow through CONFORMANCE_POLL_INTERVAL.
    poll_interval: float = 0.1
    #: Conformant clients also timed at a trainer's real pace (1 s, whole-second timeouts): their
    #: series are labelled "(1 s pace)" and stay out of the bounds.
    real_pace_clients: tuple[str, ...] = ()


_CHILD = """
import json, sys, time
from conformance.runner import run
start = time.perf_counter()
pace = float(sys.argv[5])
report = run(profiles=["client"], client=sys.argv[1], topologies=int(sys.argv[2]),
             seed=int(sys.argv[3]), target=sys.argv[4], client_poll_interval=pace,
             client_whole_seconds=pace >= 1.0)
print(json.dumps({"run_s": time.perf_counter() - start, "ok": report.ok,
                  "counts": report.counts()}))
"""


#: The suffix of a series timed at a trainer's real pace, and that pace (seconds).
REAL_PACE, REAL_PACE_S = " (1 s pace)", 1.0


def _one_run(label: str, config: ClientProfileConfig) -> tuple[float, dict[str, Any]]:
    real = label.endswith(REAL_PACE)
    client = CLIENTS[label.removesuffix(REAL_PACE)]
    pace = REAL_PACE_S if real else config.poll_interval
    args = [client, str(config.topologies), str(config.seed), config.target, str(pace)]
    return timed_child(_CHILD, args, config.timeout_s, f"client profile with {client}")


def run_client_profile(
    config: ClientProfileConfig | None = None, reporter: Reporter | None = None
) -> dict[str, Any]:
    """Time the client profile per client; returns the ``client`` section of the report."""
    config = config or ClientProfileConfig()
    reporter = reporter or NullReporter()
    refuse_unknown("clients", (*config.clients, *config.real_pace_clients), CLIENTS)
    labels = [*config.clients, *(c + REAL_PACE for c in config.real_pace_clients)]
    series: dict[str, dict[str, Any]] = {
        label: {"status": "ok", "reason": None} for label in labels
    }
    phase = reporter.phase("client profile", config.repetitions * len(labels))
    walls = rotated_runs(
        labels,
        config.repetitions,
        lambda label: _one_run(label, config),
        series,
        phase,
        reporter,
        what="client profile",
        preposition="with",
        advance_skipped=True,
    )
    result: dict[str, Any] = {
        "status": "ok",
        "config": asdict(config),
        "run": (
            f"client profile (seed {config.seed}, {config.topologies} generated topologies, "
            f"target {config.target})"
        ),
        "series": series,
        "bounds": bounds(series),
    }
    first = labels[0] if labels else None
    if first and walls.get(first):
        result["ratios_over_" + first.replace(" ", "_")] = {
            label: paired_ratio(walls[label], walls[first])
            for label in labels[1:]
            if len(walls[label]) == len(walls[first]) and walls[label]
        }
    return result


def bounds(series: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The slowest conformant and the slowest misbehaving client (median whole-profile wall
    time, seconds) among those that ran."""
    medians = {
        label: s["wall_s"]["median"]
        for label, s in series.items()
        if s.get("status") == "ok" and not label.endswith(REAL_PACE)
    }
    out: dict[str, Any] = {}
    for key, labels in (
        ("conformant", [m for m in medians if m in CONFORMANT]),
        ("misbehaving", [m for m in medians if m not in CONFORMANT]),
    ):
        if labels:
            slowest = max(labels, key=medians.__getitem__)
            out[key] = {"client": slowest, "wall_s": medians[slowest]}
    return out


def client_profile_says(report: dict[str, Any]) -> str:
    """The docs' sentence on the client profile's bounds (docs/bench.md, block client-profile)."""
    section = report.get("client") or {}
    found = section.get("bounds") or {}
    if not {"conformant", "misbehaving"} <= found.keys():
        return "not measured in this report"
    machine = (
        section.get("run", {}).get("machine") if isinstance(section.get("run"), dict) else None
    )
    load = (machine or {}).get("load_average") or [None]
    at = f" at a load of {load[0]:.1f}" if load[0] is not None else ""
    ok, bad = found["conformant"], found["misbehaving"]
    target = section.get("config", {}).get("target", "reference")
    fast = section.get("config", {}).get("poll_interval", 0.1)
    real = {
        label.removesuffix(REAL_PACE): s["wall_s"]["median"]
        for label, s in (section.get("series") or {}).items()
        if label.endswith(REAL_PACE) and s.get("status") == "ok"
    }
    slow = ""
    if real:
        worst = max(real, key=real.__getitem__)
        fast_wall = section["series"].get(worst, {}).get("wall_s", {}).get("median")
        side = f", against {fast_wall:.0f} s at the {fast:g} s pace" if fast_wall else ""
        slow = (
            f"; at a trainer's {REAL_PACE_S:g} s pace with whole-second timeouts the slowest "
            f"conformant client ({worst}) takes {real[worst]:.0f} s{side}"
        )
    return (
        f"the whole client profile ({target} fleets) takes "
        f"{ok['wall_s']:.0f} s for the slowest conformant client ({ok['client']}) and "
        f"{bad['wall_s']:.0f} s for the slowest misbehaving one ({bad['client']}){at}{slow}"
    )
