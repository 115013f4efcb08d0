"""The client profile's set-up, in one direction: scenarios, then runs, then checks.

The set-up runs what the selected checks need (each check names its runs in its registration,
conformance/client/registration.py) through conformance/client_runs.py, and records every run in
the profile's context; the checks judge the records afterwards. No check runs during set-up. Two
decisions of the set-up rest on runs already recorded, read through the checks' registrations:

- a composite scenario runs only when each of its parts, judged alone (``alone``), passed;
- a run against real Dynamo is left out when no verdict could rest on it (the client never
  completed the conformant baseline) or when every check it feeds already finds problems in the
  reference runs (``judge``): it could only add problems to a failed check, and a client that
  misbehaves everywhere would wait out real Dynamo's deadlines.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from conformance import native_lifecycle
from conformance.client.registration import CLIENT_CHECKS, RunJudge, not_judged
from conformance.client_call import SECRET_ENV, load_client
from conformance.client_runs import CONVENTIONS, ClientContext, Runner
from conformance.client_scenarios import SCENARIOS, Scenario
from conformance.registry import CheckError, Skipped
from conformance.runner import RunContext, profile_setup, select_checks

__all__ = ["checks_of_scenario", "related_checks", "why_not_made"]


def checks_of_scenario(scenario_id: str) -> list[str]:
    """The check IDs that judge a scenario's run."""
    return [c.id for c in CLIENT_CHECKS.values() if scenario_id in c.needs]


def related_checks(check_id: str) -> list[str]:
    """The client checks a narrowed run of ``check_id`` can judge with no run more: those whose
    runs are all among its own (real Dynamo aside). The kill matrix runs a counterpart against
    these, so that it shows the one requirement failing and the others, on the same runs, not."""
    own = set(CLIENT_CHECKS[check_id].needs) | {"dynamo"}
    for s in SCENARIOS:
        if s.id in own:
            own.update(s.parts)
    return [c.id for c in CLIENT_CHECKS.values() if set(c.needs) <= own]


def _wanted(run: RunContext) -> set[str]:
    """What the selected checks need, with every part of a needed composite."""
    chosen = [CLIENT_CHECKS[c.id] for c in select_checks(run.options) if c.profile == "client"]
    # The baseline always runs: every verdict rests on it (registration.not_judged).
    wanted = {"baseline"} | {need for c in chosen for need in c.needs}
    for s in SCENARIOS:
        if s.id in wanted:
            wanted.update(s.parts)
    return wanted


def _alone(scenario_id: str) -> RunJudge:
    return next(c.alone[scenario_id] for c in CLIENT_CHECKS.values() if scenario_id in c.alone)


def _parts_failed(ctx: ClientContext, composite: Scenario) -> str | None:
    """Why a composite is not run: the first of its parts that failed alone (None: all passed)."""
    for part in composite.parts:
        try:
            run = ctx.scenario(part)
        except CheckError as exc:
            return str(exc)
        problems = _alone(part)(run)
        if problems:
            return f"its part {part} failed alone ({problems[0].reason}: {problems[0].text})"
    return None


def why_not_made(ctx: ClientContext, kind: str) -> str | None:
    """Why the run against real Dynamo ``kind`` would change no verdict (None: make it): the
    client never completed the conformant baseline (every check it feeds is not judged), or every
    check it feeds already finds problems in the runs recorded (a run can only add problems to a
    failed check)."""
    cause = ctx.baseline_cause()
    if cause is not None:
        return cause
    fed = [c for c in CLIENT_CHECKS.values() if kind in c.real]
    for c in fed:
        assert c.judge is not None  # registration: real runs are read with a judge
        try:
            problems = c.judge(ctx)
        except (Skipped, CheckError):
            return None
        if not problems or not_judged(ctx, c.id, {p.run.kind for p in problems}) is not None:
            return None
    return f"{', '.join(c.id for c in fed)} already failed on the reference fleets"


@profile_setup("client")
@contextlib.contextmanager
def _setup(run: RunContext) -> Iterator[ClientContext]:
    try:
        import prime_rl_dynamo.suite.reference
        import prime_rl_dynamo.suite.strategies  # noqa: F401
    except ImportError as exc:
        raise Skipped(f"the client profile needs the conformance extra: {exc}") from exc
    opts = run.options
    client = load_client(opts.client, opts.client_cmd)
    declared = tuple(getattr(opts, "client_conventions", ()) or CONVENTIONS)
    ctx = ClientContext(run, client, declared)
    wanted = _wanted(run)
    n_generated = max(1, opts.topologies) if "rank" in wanted else 0
    n_scenarios = sum(1 for s in SCENARIOS if s.id in wanted)
    run.notes.append(
        f"client profile: {client.description} ({', '.join(declared)}), judged at its pace "
        f"({ctx.pace.describe()}), against reference fleets "
        f"(the pinned [2, 4, 1] fleet per convention, {n_scenarios} pinned scenarios and "
        f"{n_generated} generated topologies, seed {run.seed})"
    )
    rng = run.rng("client")
    secret = f"env-{rng.getrandbits(48):012x}"
    saved = os.environ.get(SECRET_ENV)
    os.environ[SECRET_ENV] = secret
    runner = Runner(ctx, rng)
    try:
        runner.rank_runs(refusal="refusal" in wanted, with_plans="rank" in wanted)
        if "rank" in wanted:
            runner.generated_runs(n_generated, shape=native_lifecycle.shape_for)
        runner.scenarios(wanted, lambda s: _parts_failed(ctx, s))
        if "dynamo" in wanted:
            runner.dynamo_runs(lambda kind: why_not_made(ctx, kind))
        runner.close()
        yield ctx
    finally:
        runner.close()
        if saved is None:
            os.environ.pop(SECRET_ENV, None)
        else:
            os.environ[SECRET_ENV] = saved
