"""The update lifecycle of vLLM's native NCCL weight transfer, judged from what the fleet recorded.

Under ``vllm-native-nccl`` the weights travel over the NCCL group, so the wire shows who joined it and
when the engines were told to take them. Two requirements (SPEC §12.3):

- **NATIVE-1**: exactly one party initialises each engine, once: an engine that receives two inits
  (the orchestrator's ``collective_rpc`` and the trainer's engine route, or one of them twice) joins
  two rendezvous, and one of them never completes.
- **NATIVE-2**: no engine reloads weights from a path (``/update_weights`` with a ``weight_dir``,
  ``update_weights_from_path`` with a path, ``reload_weights``), and on each planned engine the update
  calls (``start_weight_update``, ``update_weights``, ``finish_weight_update`` in any form) and the
  weight-version commit (``update/update_weight_version``) come after its pause and before its resume,
  the version after the last update; every planned engine is paused, updated and resumed.

The judging is pure functions of the planned engines and the recorded calls
(:func:`init_problems`, :func:`lifecycle_problems`); :func:`check_init_once` and
:func:`check_update_lifecycle` are the client profile's checks over its runs, and
:func:`native_fleet` gives a generated topology the engine routes the native transfer needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from conformance.client_wire import describe_call, is_init, is_update
from conformance.registry import Failed, Skipped
from prime_rl_dynamo.plan import Convention
from prime_rl_dynamo.suite.recording import RecordedRequest
from prime_rl_dynamo.topology import DEFAULT_ROUTES, ENGINE_ROUTE_VOCABULARY

if TYPE_CHECKING:
    from conformance.client_runs import ClientContext, ClientRun

__all__ = [
    "NATIVE",
    "check_init_once",
    "check_update_lifecycle",
    "event",
    "init_problems",
    "lifecycle_problems",
    "native_fleet",
]

NATIVE = Convention.VLLM_NATIVE_NCCL.value
_ENGINE = "/engine/"
_RPC_UPDATES = ("start_weight_update", "update_weights", "finish_weight_update")
_PATH_METHODS = ("update_weights_from_path", "reload_weights")


def _route(r: RecordedRequest) -> str | None:
    if r.server == "system" and r.path.startswith(_ENGINE):
        return r.path[len(_ENGINE) :]
    return None


def _body(r: RecordedRequest) -> dict[str, Any]:
    return r.json if isinstance(r.json, dict) else {}


def reloads_from_path(r: RecordedRequest) -> bool:
    """Whether ``r`` tells an engine to load weights from a path (never the native transfer)."""
    if r.method != "POST" or r.server != "admin":
        return False
    body = _body(r)
    if r.path.endswith("/update_weights"):
        return isinstance(body.get("weight_dir"), str)
    if not r.path.endswith("/collective_rpc"):
        return False
    method = body.get("method")
    if method == "reload_weights":
        return True
    args = body.get("args")
    if method != "update_weights_from_path" or not isinstance(args, list) or not args:
        return False
    return isinstance(args[0], str)


def event(r: RecordedRequest) -> str | None:
    """What ``r`` is in the update lifecycle: ``"init"``, ``"pause"``, ``"update"``,
    ``"version"``, ``"resume"``, or None (reads such as ``is_paused``, health, listings)."""
    if r.method != "POST":
        return None
    if is_init(r):
        return "init"
    route = _route(r)
    name = route.rsplit("/", 1)[-1] if route is not None else None
    if name == "pause_generation" or (route is None and r.path.endswith("/pause")):
        return "pause"
    if name == "resume_generation" or (route is None and r.path.endswith("/resume")):
        return "resume"
    if route == "update/update_weight_version":
        return "version"
    if route == "update/finish_weight_update" or is_update(r):
        return "update"
    if (
        route is None
        and r.path.endswith("/collective_rpc")
        and _body(r).get("method") in (_RPC_UPDATES)
    ):
        return "update"
    return None


def _planned(engines: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Engine key -> label, for the plan's engines (those the fleet can name)."""
    return {e["key"]: e["label"] for e in engines if e.get("key")}


def init_problems(
    engines: Sequence[Mapping[str, Any]], calls: Iterable[RecordedRequest]
) -> list[str]:
    """NATIVE-1: each planned engine that received more than one init, with the forms it got."""
    planned = _planned(engines)
    inits: dict[str, list[RecordedRequest]] = {}
    for r in calls:
        if r.engine in planned and event(r) == "init":
            inits.setdefault(r.engine, []).append(r)
    return [
        f"{planned[key]} was initialised {len(got)} times ({'; '.join(describe_call(r) for r in got)})"
        "; exactly one party initialises each engine, once"
        for key, got in inits.items()
        if len(got) > 1
    ]


def lifecycle_problems(
    engines: Sequence[Mapping[str, Any]], calls: Iterable[RecordedRequest]
) -> list[str]:
    """NATIVE-2: path reloads, and per planned engine the order and targets of pause, update,
    version and resume (calls in the order the fleet received them)."""
    planned = _planned(engines)
    problems: list[str] = []
    timeline: dict[str, list[tuple[str, RecordedRequest]]] = {key: [] for key in planned}
    for r in calls:
        if r.engine not in planned:
            continue
        if reloads_from_path(r):
            problems.append(
                f"{describe_call(r)} reloads weights from a path; under native NCCL they arrive "
                "over the group (start_weight_update, update_weights, finish_weight_update)"
            )
            continue
        kind = event(r)
        if kind in ("pause", "update", "version", "resume"):
            timeline[r.engine].append((kind, r))
    if not any(kind == "update" for events in timeline.values() for kind, _ in events):
        return problems
    for key, events in timeline.items():
        label = planned[key]
        kinds = [kind for kind, _ in events]
        if "update" not in kinds:
            problems.append(f"{label} received no update call although other engines did")
        if "pause" not in kinds:
            problems.append(f"{label} was never paused")
        paused = committed = False
        for kind, r in events:
            if kind == "pause":
                paused, committed = True, False
            elif kind == "resume":
                paused = False
            elif not paused:
                problems.append(f"{label}: {describe_call(r)} while the engine was not paused")
            elif kind == "version":
                committed = True
            elif committed:
                problems.append(f"{label}: {describe_call(r)} after the weight version was set")
        if paused:
            problems.append(f"{label} was left paused (no resume after its last pause)")
    return problems


def _runs(ctx: ClientContext) -> list[ClientRun]:
    ctx.declared(NATIVE)
    runs = [r for r in ctx.normal_runs(NATIVE) if r.returned]
    if not runs:
        raise Skipped(f"no {NATIVE} run completed, so no lifecycle can be judged")
    return runs


def _verdict(
    results: list[tuple[ClientRun, list[str]]], passed: str, reasons: Iterable[str]
) -> str:
    """``passed`` when no run has a problem, else a Failed naming each, with the reason codes
    (stable, for tests and the kill matrix) in its details."""
    lines: list[str] = []
    for run, problems in results:
        if problems:
            lines.append(f"{run.name}, W={run.inference_world_size} (client {run.outcome}):")
            lines.extend(f"  {p}" for p in problems[:12])
    if lines:
        raise Failed("\n".join(lines[:40]), details={"reasons": sorted(set(reasons))})
    return passed


def check_init_once(ctx: ClientContext) -> str | None:
    """vLLM native NCCL: exactly one party initialises each engine, once."""
    runs = _runs(ctx)
    results = [(run, init_problems(run.engines, run.admin_calls)) for run in runs]
    return _verdict(
        results, f"{len(runs)} run(s): every engine initialised exactly once", ["init-not-once"]
    )


def check_update_lifecycle(ctx: ClientContext) -> str | None:
    """vLLM native NCCL: no path reload; pause, update, version, resume in order on every engine."""
    runs = _runs(ctx)
    updated = [r for r in runs if any(event(c) == "update" for c in r.admin_calls)]
    if not updated:
        raise Skipped(f"the client made no weight update in any {NATIVE} run")
    results = [(run, lifecycle_problems(run.engines, run.admin_calls)) for run in runs]
    reasons: set[str] = set()
    for run, problems in results:
        reloads = sum(1 for c in run.admin_calls if reloads_from_path(c))
        if reloads:
            reasons.add("path-reload")
        if len(problems) > reloads:
            reasons.add("lifecycle-order")
    return _verdict(
        results,
        f"{len(updated)} run(s): pause -> update -> version -> resume on every engine, "
        "nothing reloaded from a path",
        reasons,
    )


def native_fleet(data: dict[str, Any]) -> dict[str, Any]:
    """A topology whose engines list the native transfer's engine routes and ``nccl`` as their
    ``weight_transfer_backend`` (what Prime-RL's latest generation requires of a native fleet)."""
    groups = []
    for group in data["engines"]:
        routes = list(
            dict.fromkeys([*group.get("routes", DEFAULT_ROUTES), *ENGINE_ROUTE_VOCABULARY])
        )
        groups.append({**group, "routes": sorted(routes), "weight_transfer_backend": "nccl"})
    return {**data, "engines": groups}


def shape_for(data: dict[str, Any], convention: str) -> dict[str, Any]:
    """A generated topology as a run of ``convention`` needs it: native fleets for NATIVE."""
    return native_fleet(data) if convention == NATIVE else data
