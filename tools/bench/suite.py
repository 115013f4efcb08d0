"""Wall time of the default conformance run, against the reference frontend and real Dynamo.

Each run is a fresh process (what a user of ``prime-rl-dynamo conformance`` waits for, imports and
fleet start-up included); the two targets alternate within each repetition.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from tools.bench.progress import NullReporter, Phase, Reporter
from tools.bench.stats import paired_ratio, summarize

__all__ = ["SuiteConfig", "run_suite"]

TARGETS = ("reference", "dynamo")


@dataclass(frozen=True)
class SuiteConfig:
    """Which targets the default conformance run is timed on, and how often."""

    targets: tuple[str, ...] = TARGETS
    profiles: tuple[str, ...] = ()  # empty: the default run (every profile)
    repetitions: int = 3
    timeout_s: float = 900.0  # one whole suite run


# Run in the child: the default conformance run against one target, its outcome as JSON.
_CHILD = """
import json, sys, time
from conformance.runner import run
start = time.perf_counter()
report = run(target=sys.argv[1], profiles=[p for p in sys.argv[2].split(",") if p])
not_passed = {}
for r in report.results:
    if r.status.value != "pass":
        not_passed.setdefault(r.status.value, [])
        if r.requirement not in not_passed[r.status.value]:
            not_passed[r.status.value].append(r.requirement)
print(json.dumps({"run_s": time.perf_counter() - start, "ok": report.ok,
                  "counts": report.counts(), "not_passed": not_passed,
                  "target": report.target.get("kind")}))
"""


def _unavailable(target: str) -> str | None:
    try:
        import conformance.runner  # noqa: F401
    except ImportError as exc:
        return f"the conformance suite is not importable: {exc}"
    if target == "dynamo":
        from conformance.runner import dynamo_available

        if not dynamo_available():
            return "real Dynamo is unavailable (install prime-rl-dynamo[dynamo] and the harness)"
    return None


def timed_child(
    code: str, args: Sequence[str], timeout_s: float, what: str
) -> tuple[float, dict[str, Any]]:
    """Run ``python -c code *args`` in a fresh process: its wall time and its last JSON line.

    RuntimeError (naming ``what``, with the end of stderr) when it fails or prints no JSON."""
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    wall = time.perf_counter() - start
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{what} exited {proc.returncode}: {proc.stderr[-800:]}")
    outcome: dict[str, Any] = json.loads(lines[-1])
    return wall, outcome


def _one_run(
    target: str, profiles: tuple[str, ...], timeout_s: float
) -> tuple[float, dict[str, Any]]:
    wall, outcome = timed_child(
        _CHILD, [target, ",".join(profiles)], timeout_s, f"conformance run against {target}"
    )
    if outcome.get("target") != target:
        raise RuntimeError(
            f"conformance run asked for target {target!r} but ran against {outcome.get('target')!r}"
        )
    return wall, outcome


def run_suite(
    config: SuiteConfig | None = None, reporter: Reporter | None = None
) -> dict[str, Any]:
    """Time the default conformance run per target; returns the ``suite`` section of the report."""
    config = config or SuiteConfig()
    reporter = reporter or NullReporter()
    series: dict[str, dict[str, Any]] = {}
    targets = []
    for target in config.targets:
        reason = _unavailable(target)
        if reason is None:
            targets.append(target)
            series[target] = {"status": "ok", "reason": None}
        else:
            series[target] = {"status": "skipped", "reason": reason}
    phase = reporter.phase("conformance suite", config.repetitions * max(len(targets), 1))
    walls = rotated_runs(
        targets,
        config.repetitions,
        lambda target: _one_run(target, config.profiles, config.timeout_s),
        series,
        phase,
        reporter,
        what="conformance",
        preposition="against",
        advance_skipped=False,
        # status -> requirement IDs of the last run that did not pass (docs quote them)
        keep=("not_passed",),
    )
    result: dict[str, Any] = {
        "config": asdict(config),
        "run": "default (every profile)"
        if not config.profiles
        else "profiles " + ", ".join(config.profiles),
        "series": series,
    }
    if all(series.get(t, {}).get("status") == "ok" for t in TARGETS):
        result["ratio_dynamo_over_reference"] = paired_ratio(walls["dynamo"], walls["reference"])
    return result


def rotated_runs(
    labels: Sequence[str],
    repetitions: int,
    one_run: Callable[[str], tuple[float, dict[str, Any]]],
    series: dict[str, dict[str, Any]],
    phase: Phase,
    reporter: Reporter,
    *,
    what: str,
    preposition: str,
    advance_skipped: bool,
    keep: tuple[str, ...] = (),
) -> dict[str, list[float]]:
    """Run ``one_run(label)`` ``repetitions`` times per label, rotating who goes first.

    Each label that ran gets ``wall_s``, ``run_s`` (summaries), ``counts``, the ``keep`` keys of
    its last outcome and ``ok`` (every run ok) in ``series``; returns each label's wall times. A
    run that fails (RuntimeError, a time-out, ValueError) marks the label skipped in ``series``
    with the reason, logged as ``"{what} {preposition} {label} skipped: ..."``, and the label runs
    no more; ``advance_skipped`` also advances ``phase`` for each of its runs left out. Ends the
    phase."""
    labels = list(labels)
    walls: dict[str, list[float]] = {label: [] for label in labels}
    outcomes: dict[str, list[dict[str, Any]]] = {label: [] for label in labels}
    for rep in range(repetitions):
        shift = rep % len(labels) if labels else 0
        for label in labels[shift:] + labels[:shift]:
            if series[label]["status"] != "ok":
                if advance_skipped:
                    phase.advance()
                continue
            phase.note(f"run {rep + 1}/{repetitions} {preposition} {label}")
            try:
                wall, outcome = one_run(label)
            except (RuntimeError, subprocess.TimeoutExpired, ValueError) as exc:
                series[label] = {"status": "skipped", "reason": str(exc)[-800:]}
                reporter.log(f"{what} {preposition} {label} skipped: {exc}")
                continue
            finally:
                phase.advance()
            walls[label].append(wall)
            outcomes[label].append(outcome)
    phase.done()
    for label in labels:
        if series[label]["status"] == "ok" and walls[label]:
            last = outcomes[label][-1]
            series[label].update(
                wall_s=summarize(walls[label]),
                run_s=summarize([o["run_s"] for o in outcomes[label]]),
                counts=last["counts"],
                **{key: last.get(key, {}) for key in keep},
                ok=all(o["ok"] for o in outcomes[label]),
            )
    return walls
