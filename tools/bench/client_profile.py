"""Wall time of the whole client profile, per client under test, side by side in one run.

Each run is a fresh process (``conformance.run(profiles=["client"], client=...)``, imports and
every reference fleet included); the clients alternate within each repetition. The project's
client, the spec client and zoo clients that wait out their deadlines (the slowest misbehaving
clients) bound what a trainer team waits for.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from tools.bench import refuse_unknown
from tools.bench.progress import NullReporter, Reporter
from tools.bench.stats import paired_ratio
from tools.bench.suite import rotated_runs, timed_child

__all__ = ["CLIENTS", "ClientProfileConfig", "run_client_profile"]

#: label -> client under test (module:function).
CLIENTS: dict[str, str] = {
    "project client": "conformance.examples.project_client:run",
    "spec client": "conformance.examples.spec_client:run",
    "zoo: treats 429 as fatal": "conformance.examples.zoo:treats_429_as_fatal",
    # The two that held the profile longest before each scenario had its own deadline (285 s and
    # 219 s): they wait out every deadline they meet.
    "zoo: ignores the model filter": "conformance.examples.zoo:ignores_model_filter",
    "zoo: excludes model-less workers": "conformance.examples.zoo:excludes_model_less",
}


@dataclass(frozen=True)
class ClientProfileConfig:
    """Which clients the client profile is timed with, and how often."""

    clients: tuple[str, ...] = tuple(CLIENTS)
    repetitions: int = 3
    topologies: int = 3  # generated topologies per run (the default of the command)
    seed: int = 1
    timeout_s: float = 300.0  # one whole profile run


_CHILD = """
import json, sys, time
from conformance.runner import run
start = time.perf_counter()
report = run(profiles=["client"], client=sys.argv[1], topologies=int(sys.argv[2]),
             seed=int(sys.argv[3]))
print(json.dumps({"run_s": time.perf_counter() - start, "ok": report.ok,
                  "counts": report.counts()}))
"""


def _one_run(client: str, config: ClientProfileConfig) -> tuple[float, dict[str, Any]]:
    args = [client, str(config.topologies), str(config.seed)]
    return timed_child(_CHILD, args, config.timeout_s, f"client profile with {client}")


def run_client_profile(
    config: ClientProfileConfig | None = None, reporter: Reporter | None = None
) -> dict[str, Any]:
    """Time the client profile per client; returns the ``client`` section of the report."""
    config = config or ClientProfileConfig()
    reporter = reporter or NullReporter()
    refuse_unknown("clients", config.clients, CLIENTS)
    labels = list(config.clients)
    series: dict[str, dict[str, Any]] = {
        label: {"status": "ok", "reason": None} for label in labels
    }
    phase = reporter.phase("client profile", config.repetitions * len(labels))
    walls = rotated_runs(
        labels,
        config.repetitions,
        lambda label: _one_run(CLIENTS[label], config),
        series,
        phase,
        reporter,
        what="client profile",
        preposition="with",
        advance_skipped=True,
    )
    result: dict[str, Any] = {
        "config": asdict(config),
        "run": f"client profile (seed {config.seed}, {config.topologies} generated topologies)",
        "series": series,
    }
    first = labels[0] if labels else None
    if first and walls.get(first):
        result["ratios_over_" + first.replace(" ", "_")] = {
            label: paired_ratio(walls[label], walls[first])
            for label in labels[1:]
            if len(walls[label]) == len(walls[first]) and walls[label]
        }
    return result
