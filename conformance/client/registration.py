"""How a client check is registered: next to the code that judges it, carrying what it needs.

A check names, in its own registration, the runs it judges (``needs``: ``"rank"``, the pinned and
generated fleets; ``"refusal"``, told the wrong W; ``"baseline"``; scenario ids of
conformance/client_scenarios.py), the runs against real Dynamo it reads besides (``real``, with
``judge``: its problems on the runs recorded so far, which the set-up reads to leave out a real
Dynamo run that could change no verdict), and how a scenario it judges is judged alone when it is
a part of a composite (``alone``). The set-up (conformance/client/profile.py) reads these, and
only these: no check runs during set-up.

One root cause, one failure: the rule is applied to every client check's verdict, from the runs
recorded, by :func:`not_judged`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from conformance.client.verdicts import Problems
from conformance.client_runs import ClientContext, ClientRun
from conformance.registry import CheckFunction, Failed, Skipped, check

__all__ = ["CLIENT_CHECKS", "ClientCheck", "RunJudge", "client_check", "not_judged"]

#: How one run is judged on its own: its problems.
RunJudge = Callable[[ClientRun], Problems]


@dataclass(frozen=True)
class ClientCheck:
    """What a client check carries besides its function: the runs it needs and reads."""

    id: str
    #: The runs it judges: "rank", "refusal", "baseline", "dynamo" (real Dynamo, when available)
    #: and scenario ids.
    needs: tuple[str, ...]
    #: The runs against real Dynamo it reads (their kinds, ``dynamo:...``).
    real: tuple[str, ...] = ()
    #: Its problems on the runs recorded so far (with ``real``): when they fail it before any real
    #: Dynamo run, such a run can only add problems to a failed check.
    judge: Callable[[ClientContext], Problems] | None = None
    #: Scenario -> how one run of it is judged alone (a part of a composite).
    alone: Mapping[str, RunJudge] = field(default_factory=dict)


#: Check ID -> what it carries, in the order the checks were registered.
CLIENT_CHECKS: dict[str, ClientCheck] = {}

#: The checks that name a root cause themselves: the others report "not judged" with it.
_BASELINE_CHECK = "RANK-2::refuse-wrong-sum"
_PACE_CHECK = "POLL-1::retry-transient"


def client_check(
    requirement_id: str,
    slug: str,
    title: str | None = None,
    *,
    needs: tuple[str, ...] = (),
    real: tuple[str, ...] = (),
    judge: Callable[[ClientContext], Problems] | None = None,
    alone: Mapping[str, RunJudge] | None = None,
) -> Callable[[CheckFunction], CheckFunction]:
    """Register a check of the client profile that judges the runs ``needs`` names (and, with
    ``real``, those runs against real Dynamo, ``judge`` saying what it finds before them); its
    title is its docstring (without the period) unless given, and its slug where docstrings are
    stripped."""
    if bool(real) != (judge is not None):
        raise ValueError(f"{requirement_id}::{slug}: real Dynamo runs are read with a judge")

    def register(func: CheckFunction) -> CheckFunction:
        named = title or (func.__doc__ or slug).strip().rstrip(".")
        check_id = f"{requirement_id}::{slug}"
        for scenario_id in alone or {}:
            if any(scenario_id in c.alone for c in CLIENT_CHECKS.values()):
                raise ValueError(f"{check_id}: scenario {scenario_id} is judged alone twice")
        CLIENT_CHECKS[check_id] = ClientCheck(
            check_id, (*needs, "dynamo") if real else needs, real, judge, dict(alone or {})
        )

        def judged(ctx: ClientContext) -> str | None:
            cause = ctx.baseline_cause()
            if cause is not None and check_id != _BASELINE_CHECK:
                raise Skipped(f"not judged: {cause}")
            try:
                return func(ctx)
            except Failed as failed:
                cause = not_judged(ctx, check_id, (failed.details or {}).get("runs", ()))
                if cause is not None:
                    raise Skipped(f"not judged: {cause}") from None
                raise

        judged.__name__, judged.__doc__ = func.__name__, func.__doc__
        check("client", requirement_id, slug, named)(judged)
        return func

    return register


def not_judged(ctx: ClientContext, check_id: str, kinds: Iterable[str]) -> str | None:
    """One root cause, one failure: why a failure of ``check_id`` found in the runs of ``kinds``
    is not judged (None: it is a failure).

    A client that never completed the conformant baseline fails RANK-2 alone (a valid
    heterogeneous fleet must be accepted): without it a refusal elsewhere proves nothing, so every
    other check is not judged (``ctx.baseline_cause``, checked before any check runs). A client
    slower than its declared pace fails POLL-1: another check's failure that rests only on runs it
    did not finish is not judged (their deadlines were derived from the pace it declared)."""
    cause = ctx.pace_cause() if check_id != _PACE_CHECK else None
    failed = set(kinds)
    unfinished = {r.kind for r in ctx.runs if not r.returned}
    if cause is not None and failed and failed <= unfinished:
        return cause
    return None
