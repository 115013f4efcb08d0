"""What every family of client checks shares: a problem found in one run, the verdict that lists
them run by run, and the judgements of one run that several requirements rest on (did it end, did
it reach its plan, did it refuse a listing after one request).

Every problem carries a reason code (``details["reasons"]`` of the result), so a test can tell why
a check failed, not only that it did; and the kinds of the runs it was found in
(``details["runs"]``), which the "not judged" rule of :mod:`conformance.client.registration`
reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from conformance.client_runs import REAL_DYNAMO, ClientContext, ClientRun, ListedEngine
from conformance.client_wire import InitRecord
from conformance.registry import CheckError, Failed
from prime_rl_dynamo.plan import Convention

__all__ = [
    "Problem",
    "Problems",
    "completed",
    "dynamo_plan",
    "ended",
    "failure",
    "fatal_problems",
    "plan_problems",
    "real_dynamo",
    "verdict",
]


@dataclass(frozen=True)
class Problem:
    """One thing a check found wrong in one run: a reason code (stable, for tests) and a line."""

    run: ClientRun
    reason: str
    text: str


Problems = list[Problem]


def _describe(run: ClientRun) -> str:
    return f"{run.name}, W={run.inference_world_size}"


def failure(problems: Problems, header: str = "") -> Failed:
    """One Failed listing the problems run by run, each run headed by what the client did; its
    details carry every problem's reason code and run."""
    lines: list[str] = [header] if header else []
    current: ClientRun | None = None
    for p in problems:
        if p.run is not current:
            current = p.run
            lines.append(f"{_describe(p.run)} (client {p.run.outcome}):")
        lines.append(f"  {p.text}")
    if len(lines) > 40:
        lines = [*lines[:40], f"  ... {len(lines) - 40} more lines"]
    details = {
        "reasons": sorted({p.reason for p in problems}),
        "runs": sorted({p.run.kind for p in problems}),
    }
    return Failed("\n".join(lines), details=details)


def verdict(problems: Problems, note: str | Callable[[], str], header: str = "") -> str:
    """``note`` (what passed; a callable when only a pass can compute it) when there are no
    problems, else the Failed naming each."""
    if problems:
        raise failure(problems, header)
    return note() if callable(note) else note


def _family(convention: str) -> str:
    return "vllm-native" if convention == Convention.VLLM_NATIVE_NCCL.value else "prime"


def ended(run: ClientRun, gave_up: str) -> Problems:
    """A hang, or ``gave_up`` when the client did not return."""
    if run.hung:
        return [Problem(run, "hung", "the client was still running past its deadline (stopped)")]
    if not run.returned:
        return [Problem(run, "did-not-complete", gave_up)]
    return []


def completed(run: ClientRun, gave_up: str) -> Problems:
    """What is wrong with a run that must complete: its plan (offsets aside) and its end."""
    return plan_problems(run, offsets=False) + ended(run, gave_up)


def plan_problems(run: ClientRun, *, sizes: bool = True, offsets: bool = True) -> Problems:
    """Every planned engine got an accepted init; with ``offsets`` (and ``sizes``) its values.

    Scenario checks pass ``offsets=False``: the rank checks judge offsets, so one bug in the
    rank math fails those requirements only.
    """
    problems: Problems = []
    records = run.init_records()
    family = _family(run.convention)
    offset = 1 if family == "vllm-native" else 0
    for engine in run.engines:
        got = records.get(engine["key"] or "", [])
        label = f"{engine['label']} (world_size {engine['world_size']})"
        if not got:
            problems.append(Problem(run, "no-init", f"{label} received no broadcast init"))
        elif not any(r.accepted for r in got):
            statuses = ", ".join(f"{r.form} -> HTTP {r.status}" for r in got)
            problems.append(
                Problem(run, "init-rejected", f"{label}: every init was rejected: {statuses}")
            )
        for rec in got:
            if rec.family != family:
                problems.append(
                    Problem(
                        run,
                        "wrong-family",
                        f"{label}: a {rec.family} init ({rec.form}) under {run.convention}",
                    )
                )
                continue
            if not offsets:
                continue
            if rec.rank_offset != offset:
                problems.append(
                    Problem(
                        run,
                        "wrong-offset",
                        f"{label}: expected rank_offset {offset}, found {rec.rank_offset!r}",
                    )
                )
            if not sizes:
                continue
            problems += _size_problems(run, engine, rec, label)
        offset += engine["world_size"]
    return problems


def _size_problems(run: ClientRun, engine: ListedEngine, rec: InitRecord, label: str) -> Problems:
    if rec.family == "vllm-native":
        if rec.group_world_size != run.inference_world_size + 1:
            return [
                Problem(
                    run,
                    "wrong-group-size",
                    f"{label}: expected world_size {run.inference_world_size + 1} (1 + W), "
                    f"found {rec.group_world_size!r}",
                )
            ]
        return []
    problems: Problems = []
    if rec.binding_problem is not None:
        # A keyword the worker lacks is a TypeError in the engine; a positional argument binds to
        # the parameter at its position (main's sixth, "default", sets quantisation).
        problems.append(
            Problem(run, "unbound-argument", f"{label}: {rec.form} {rec.binding_problem}")
        )
    if rec.inference_world_size != run.inference_world_size:
        problems.append(
            Problem(
                run,
                "wrong-inference-world-size",
                f"{label}: expected inference_world_size {run.inference_world_size}, "
                f"found {rec.inference_world_size!r}",
            )
        )
    # RANK-3: engine_world_size only where the target worker takes it; when sent, it is the
    # engine's own (the rank math needs the offsets and W, which every form carries).
    if rec.engine_world_size is not None and rec.engine_world_size != engine["world_size"]:
        problems.append(
            Problem(
                run,
                "wrong-engine-world-size",
                f"{label}: expected engine_world_size {engine['world_size']}, "
                f"found {rec.engine_world_size!r}",
            )
        )
    return problems


def fatal_problems(run: ClientRun, *, once: bool) -> Problems:
    """What is wrong with a run on a listing to refuse: an init, a success, a hang, and (with
    ``once``) any listing request but the first."""
    problems: Problems = []
    inits = run.init_calls()
    if inits:
        problems.append(
            Problem(
                run, "initialised", f"initialised {', '.join(sorted(inits))} on a listing to refuse"
            )
        )
    if run.returned:
        problems.append(Problem(run, "returned", "the client returned success instead of refusing"))
    if run.hung:
        problems.append(Problem(run, "hung", "the client was still running past its deadline"))
    if once and len(run.listing_calls) != 1:
        problems.append(
            Problem(
                run,
                "retried",
                f"expected exactly one listing request (fatal, not retried), found "
                f"{len(run.listing_calls)}",
            )
        )
    return problems


def real_dynamo(runs: list[ClientRun]) -> str:
    """' (and N on real Dynamo)' for the runs against real Dynamo among ``runs``; CheckError when
    the harness could not present one of them (an error of the run, not of the client)."""
    real = [r for r in runs if r.name.startswith(REAL_DYNAMO)]
    for run in real:
        if run.harness_problem:
            raise CheckError(f"{run.name}: {run.harness_problem}; the client is not judged on it")
    return f" (and {len(real)} on real Dynamo)" if real else ""


def dynamo_plan(ctx: ClientContext) -> list[ClientRun]:
    """The plan run against real Dynamo (none when it was not made)."""
    return [r for r in ctx.runs if r.kind == "dynamo:plan"]
