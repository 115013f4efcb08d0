"""What "ready" means, as values: the readiness policy, the polling policy, and a ready Discovery.

:class:`ReadinessPolicy` judges one validated listing (READY-1..6) with no I/O, and
:class:`Streak` carries READY-4 (identical snapshots on consecutive polls) from poll to poll.
:class:`PollingPolicy` says how often to poll, how to back off and when to give up (POLL-1,
POLL-5). The discovery client only does the HTTP around them.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prime_rl_dynamo._urls import admin_key
from prime_rl_dynamo.defaults import DISCOVERY_TIMEOUT, POLL_INTERVAL, REQUEST_TIMEOUT
from prime_rl_dynamo.errors import ConfigError, PendingError, ProtocolError
from prime_rl_dynamo.observation import Observation
from prime_rl_dynamo.plan import (
    BroadcastPlan,
    Convention,
    canonical_order,
    plan_broadcast,
    topology_diff,
)
from prime_rl_dynamo.requirements import Reason
from prime_rl_dynamo.violation import Violation
from prime_rl_dynamo.wire import WorkerId

if TYPE_CHECKING:
    from prime_rl_dynamo._models import Snapshot, Worker

__all__ = [
    "MIN_INTERVAL",
    "Discovery",
    "PollingPolicy",
    "ReadinessPolicy",
    "Streak",
    "assess_snapshot",
    "judge",
]

#: The shortest poll interval, backoff and request timeout a client accepts (seconds).
MIN_INTERVAL = 0.001


@dataclass(frozen=True)
class Discovery(Observation):
    """A ready snapshot: the validated body and the matching workers in canonical order."""

    def plan(
        self,
        convention: Convention | str = Convention.PRIME_NCCL,
        *,
        trainer_world_size: int = 1,
        inference_world_size: int | None = None,
    ) -> BroadcastPlan:
        """The broadcast plan for these workers (TopologyError when it cannot cover [0, W)).

        W is the operator's (``inference_world_size`` here or the client's); it is never derived
        from the listing (READY-3), so a discovery without one needs it passed.
        """
        world = (
            inference_world_size if inference_world_size is not None else self.inference_world_size
        )
        if world is None:
            raise ConfigError(
                f"READY-3: no inference_world_size to plan with (the listing sums to "
                f"{self.world_size_sum}, but W comes from the operator and is never derived from "
                "it): pass plan(inference_world_size=W)",
                requirement="READY-3",
            )
        return plan_broadcast(
            self.workers, world, convention, trainer_world_size=trainer_world_size
        )


def _check_seconds(name: str, value: object, *, minimum: float) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < minimum
    ):
        what = (
            "a finite number >= 0" if minimum == 0 else f"a finite number of seconds >= {minimum}"
        )
        raise ConfigError(f"{name} must be {what}; found {value!r}")


@dataclass(frozen=True)
class PollingPolicy:
    """How a wait polls: the whole wait's deadline (``timeout``), each GET's (``request_timeout``),
    the pause between polls, and the jittered exponential backoff after a failed one (POLL-1)."""

    timeout: float = DISCOVERY_TIMEOUT
    request_timeout: float = REQUEST_TIMEOUT
    poll_interval: float = POLL_INTERVAL
    #: None: half the poll interval, inside SPEC §10's [poll interval / 4, poll interval].
    backoff_initial: float | None = None
    backoff_max: float = 5.0

    def __post_init__(self) -> None:
        _check_seconds("timeout", self.timeout, minimum=0.0)
        if self.backoff_initial is None:
            _check_seconds("poll_interval", self.poll_interval, minimum=MIN_INTERVAL)
            half = max(
                float(self.poll_interval) / 2, MIN_INTERVAL
            )  # within [interval / 4, interval]
            object.__setattr__(self, "backoff_initial", half)
        # Zero would poll or retry in a tight loop, and a zero request timeout fails every request
        # until the deadline: each needs at least a millisecond.
        for name in ("request_timeout", "poll_interval", "backoff_initial", "backoff_max"):
            _check_seconds(name, getattr(self, name), minimum=MIN_INTERVAL)
        for name in (
            "timeout",
            "request_timeout",
            "poll_interval",
            "backoff_initial",
            "backoff_max",
        ):
            object.__setattr__(self, name, float(getattr(self, name)))

    def backoff(self, failures: int, rng: random.Random) -> float:
        """The pause after ``failures`` failed polls in a row: "equal jitter" under a ceiling that
        doubles from ``backoff_initial`` up to ``backoff_max``."""
        # The exponent is capped before exponentiating: after ~1,000 failures (an hour of outage)
        # 2**failures would overflow a float. 2**64 times any interval >= 1 ms exceeds every cap.
        exponent = min(max(0, failures - 1), 64)
        initial = self.backoff_initial or self.poll_interval / 2  # set by __post_init__
        ceiling = min(self.backoff_max, initial * 2.0**exponent)
        # At least half the ceiling, so retries spread without collapsing to zero.
        return ceiling / 2 + rng.uniform(0, ceiling / 2)


def _fingerprint(workers: Sequence[Worker]) -> tuple[Any, ...]:
    return tuple(
        (WorkerId.of(w), w.admin_base_url, w.world_size, w.system_url, w.model, w.error)
        for w in workers
    )


@dataclass(frozen=True)
class ReadinessPolicy:
    """What "ready" means for one run.

    ``inference_world_size`` (W) comes from the operator and is never derived from the listing
    (READY-3); only a transfer that needs no world sizes (``require_world_size=False``) may leave
    it None. ``model`` and ``components`` select the workers (READY-5/6); ``require_admin`` and
    ``require_world_size`` (default: whether W is set) are what every selected worker must list
    (READY-2); ``stable_polls`` identical snapshots in a row are needed (READY-4).
    """

    inference_world_size: int | None
    model: str | None = None
    components: Collection[str] | None = None
    require_admin: bool = True
    require_world_size: bool | None = None
    stable_polls: int = 2

    def __post_init__(self) -> None:
        world = self.inference_world_size
        if world is not None and (
            isinstance(world, bool) or not isinstance(world, int) or world <= 0
        ):
            raise ConfigError(
                f"inference_world_size must be an integer > 0 or None; found {world!r}"
            )
        if world is None and self.require_world_size is not False:
            raise ConfigError(
                "READY-3: inference_world_size is required: W comes from the operator and is never "
                "derived from the listing (only a transfer that needs no world sizes, "
                "require_world_size=False, may leave it None)",
                requirement="READY-3",
            )
        if self.require_world_size is None:
            object.__setattr__(self, "require_world_size", world is not None)
        if self.components is not None:
            object.__setattr__(self, "components", frozenset(self.components))
        if self.stable_polls < 1:
            raise ConfigError(f"stable_polls must be >= 1; found {self.stable_polls}")

    def matches(self, worker: Worker) -> bool:
        """Whether ``worker`` is one this run drives (its component and model)."""
        if self.components is not None and worker.component not in self.components:
            return False
        # Dynamo omits `model` when it does not know it (and always after a failed probe), so an
        # absent model cannot exclude a worker (SPEC §9, READY-5); the sum check (READY-3) guards
        # the rest.
        return self.model is None or worker.model is None or worker.model == self.model

    def assess(self, snapshot: Snapshot) -> tuple[tuple[Worker, ...], list[Reason]]:
        """The matching workers (canonical order) and why this snapshot is not ready.

        Pure: no I/O. An empty list means ready (apart from READY-4, which needs two polls).
        Raises ProtocolError (POLL-2) for duplicate identities or admin URLs among matching workers.
        """
        matching = tuple(canonical_order(w for w in snapshot.workers if self.matches(w)))
        _refuse_duplicates(matching)
        reasons: list[Reason] = []
        if not matching:
            scope = f"model {self.model!r}" if self.model is not None else "any model"
            if self.components is not None:
                scope += f", components {sorted(self.components)}"
            others = ", ".join(f"{w.label} (model {w.model!r})" for w in snapshot.workers) or "none"
            reasons.append(Reason("READY-6", f"no worker matches {scope}; listed: {others}"))
            return matching, reasons
        for w in matching:
            if w.error is not None:
                reasons.append(Reason("READY-1", f"{w.label} reports error: {w.error}", w.label))
        for w in matching:
            lacks = []
            if self.require_admin and w.admin_base_url is None:
                lacks.append("admin_base_url")
            if self.require_world_size and w.world_size is None:
                lacks.append("world_size")
            if lacks and w.error is None:
                reasons.append(
                    Reason(
                        "READY-2",
                        f"{w.label} lacks {' and '.join(lacks)}, which the weight-transfer mode "
                        "needs",
                        w.label,
                    )
                )
        world = self.inference_world_size
        if world is not None:
            total = sum(w.world_size or 0 for w in matching if w.error is None)
            if total != world:
                sizes = ", ".join(
                    f"{w.label}={'error' if w.error is not None else w.world_size if w.world_size is not None else '?'}"
                    for w in matching
                )
                reasons.append(
                    Reason(
                        "READY-3",
                        f"world sizes sum to {total}, expected inference_world_size {world} "
                        f"({sizes})",
                    )
                )
        return matching, reasons


def _refuse_duplicates(matching: Sequence[Worker]) -> None:
    violations: list[Violation] = []
    for key, n in Counter(WorkerId.of(w) for w in matching).items():
        if n > 1:
            violations.append(
                Violation("LIST-2", "/workers", f"identity listed {n} times", worker=str(key))
            )
    admins: dict[str, list[str]] = {}
    for w in matching:
        if w.admin_base_url is not None:
            # The validator's comparison (SPEC LIST-6): the endpoint the admin pool calls.
            admins.setdefault(admin_key(w.admin_base_url), []).append(w.label)
    for url, labels in admins.items():
        if len(labels) > 1:
            violations.append(
                Violation(
                    "LIST-6",
                    "/workers",
                    f"admin_base_url {url} shared by {', '.join(labels)}",
                    worker=labels[0],
                )
            )
    if violations:
        raise ProtocolError(
            "POLL-2: fatal, not retried: " + "; ".join(str(v) for v in violations),
            violations=violations,
            requirement="POLL-2",
        )


def assess_snapshot(
    snapshot: Snapshot,
    *,
    inference_world_size: int | None,
    model: str | None = None,
    components: Collection[str] | None = None,
    require_admin: bool = True,
    require_world_size: bool | None = None,
) -> tuple[tuple[Worker, ...], list[Reason]]:
    """:meth:`ReadinessPolicy.assess` of a policy built from these arguments; without W, world
    sizes are required only when ``require_world_size`` says so."""
    if require_world_size is None:
        require_world_size = inference_world_size is not None
    policy = ReadinessPolicy(
        inference_world_size, model, components, require_admin, require_world_size
    )
    return policy.assess(snapshot)


class Streak:
    """READY-4 across polls: a snapshot is ready once ``stable_polls`` polls in a row found the
    same complete listing. A failed poll breaks the streak (:meth:`broken`)."""

    def __init__(self, policy: ReadinessPolicy, url: str) -> None:
        self.policy = policy
        self.url = url
        self._previous: Observation | None = None
        self._count = 0

    def broken(self) -> None:
        """Start over: the next complete snapshot is the first of a new streak."""
        self._previous, self._count = None, 0

    def judge(self, snapshot: Snapshot, *, polls: int, elapsed: float) -> Discovery | None:
        """The Discovery once the streak is long enough, None while it grows (one more identical
        poll is needed), PendingError when this snapshot itself is not ready."""
        try:
            ready = judge(
                self.policy, snapshot, self._previous, url=self.url, polls=polls, elapsed=elapsed
            )
        except PendingError as exc:
            stability = all(r.requirement == "READY-4" for r in exc.reasons)
            # READY-4 pending means this poll starts a new streak of identical snapshots.
            self._previous = exc.discovery if stability else None
            self._count = 1 if stability else 0
            raise
        self._count += 1
        if self._count >= self.policy.stable_polls:
            return ready
        self._previous = ready
        return None


def judge(
    policy: ReadinessPolicy,
    snapshot: Snapshot,
    previous: Observation | None,
    *,
    url: str,
    polls: int,
    elapsed: float,
) -> Discovery:
    """This poll's Discovery when it is ready against ``previous`` (READY-4), else PendingError."""
    matching, reasons = policy.assess(snapshot)
    current = Discovery(url, snapshot, matching, policy.inference_world_size, polls, elapsed)
    if not reasons and policy.stable_polls > 1:
        if previous is None:
            reasons.append(
                Reason(
                    "READY-4",
                    f"poll {polls} is the first complete snapshot; waiting for an identical one",
                )
            )
        elif _fingerprint(previous.workers) != _fingerprint(matching):
            diff = topology_diff(previous.workers, matching)
            what = "; ".join(diff.lines()) if diff else "system_url, model or error changed"
            reasons.append(
                Reason("READY-4", f"poll {polls} differs from poll {previous.polls}: {what}")
            )
    if reasons:
        raise PendingError(reasons, discovery=current)
    return current
