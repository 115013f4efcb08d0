"""The admin and native family: a failed admin call (5xx, 200 with status error, 3xx) is a
failure, never success (ADMIN-3); and under vLLM's native NCCL transfer, each engine initialised
once by one party (NATIVE-1) and the update lifecycle in order (NATIVE-2), judged by the pure
functions of conformance/native_lifecycle.py on the runs recorded.
"""

from __future__ import annotations

from conformance import native_lifecycle
from conformance.client.registration import client_check
from conformance.client.verdicts import Problem, Problems, verdict
from conformance.client_runs import ClientContext
from conformance.client_wire import describe_call

__all__ = ["check_admin_failure"]


#: Scenario -> (the failing engine, whether only its init fails; else every admin call does).
_ADMIN_FAILURES = {
    "init-fails": ("dynamo.engine-b#0", True),
    "init-error-in-200": ("dynamo.engine-b#0", True),
    "admin-redirect": ("dynamo.engine-b#0", False),
    "admin-redirect-same-origin": ("dynamo.engine-b#0", False),
}


@client_check("ADMIN-3", "failed-admin-call", needs=(*_ADMIN_FAILURES, "rank"))
def check_admin_failure(ctx: ClientContext) -> str | None:
    """A failed admin call (5xx, 200 with status error, 3xx) is a failure, never success."""
    problems: Problems = []
    for scenario_id, (engine, init_only) in _ADMIN_FAILURES.items():
        run = ctx.scenario(scenario_id)
        if init_only:
            failing = run.init_calls().get(engine, [])
        else:
            failing = [r for r in run.admin_calls if r.engine == engine]
        if not failing:
            what = "init" if init_only else "admin call"
            problems.append(
                Problem(
                    run, "failing-engine-not-called", f"{engine}, the failing engine, got no {what}"
                )
            )
            continue
        after = [r for r in run.updates() if r.time > failing[0].time]
        if after:
            problems.append(
                Problem(
                    run,
                    "updated-after-failure",
                    f"{len(after)} update call(s) after {engine}'s init failed",
                )
            )
        if run.returned:
            problems.append(
                Problem(
                    run, "returned", f"the client returned success although {engine}'s init failed"
                )
            )
    for run in ctx.normal_runs():
        rejected = [
            describe_call(r) + f" -> HTTP {r.status}"
            for calls in run.init_calls().values()
            for r in calls
            if not 200 <= r.status < 300
        ]
        if rejected and run.returned:
            problems.append(
                Problem(run, "returned", f"returned success after {'; '.join(rejected[:3])}")
            )
    return verdict(
        problems,
        f"{len(_ADMIN_FAILURES)} failed admin calls (500; 200 with status error; 307 to another "
        "origin and to the same one) reported as failures",
    )


client_check("NATIVE-1", "native-init-once", needs=("rank",))(native_lifecycle.check_init_once)
client_check("NATIVE-2", "native-update-lifecycle", needs=("rank",))(
    native_lifecycle.check_update_lifecycle
)
