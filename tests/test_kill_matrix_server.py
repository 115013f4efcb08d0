"""The server side of the kill matrix: every server check has a deliberately broken counterpart
(a reference fault or variant, ``conformance.kill_matrix.SERVER_COUNTERPARTS``) that fails it, and
that counterpart fails exactly the requirements it declares.

Each frontend, frontend-v2 and workers counterpart runs twice against one shared reference fleet (its faults replaced between runs,
which restarts their request count): narrowed to its check, which must fail; and over the check's
whole profile, whose failed requirements must be exactly the declared ones. The clean fleet passes
every check a counterpart targets, so each failure is the counterpart's doing. The roundtrip
checks judge real Dynamo end to end; their counterparts run the same roundtrip (listing, scope,
kill, restart, resize) on a reference fleet with the fault, which a clean reference fleet passes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import conformance
from conformance.kill_matrix import SERVER_COUNTERPARTS, Counterpart
from conformance.registry import Failed, Skipped, all_checks
from conformance.results import Report, Status
from conformance.roundtrip import reference_roundtrip
from prime_rl_dynamo.suite.reference import start_reference_fleet
from prime_rl_dynamo.suite.reference.faults import parse_fault

pytestmark = pytest.mark.integration

SERVER_PROFILES = ("frontend", "frontend-v2", "workers", "roundtrip")
#: Profiles a counterpart runs against on the reference fleet (roundtrip needs real Dynamo).
REFERENCE_PROFILES = ("frontend", "frontend-v2", "workers")
# Small and strict: a SHOULD failure counts as a failure; a load of 4 pollers meets the overload
# faults, and 3 polls are enough for the first-GET-only faults.
RUN: dict[str, Any] = {"load_clients": 4, "load_requests": 3, "polls": 3, "seed": 1, "strict": True}

CHECKS = {c.id: c for c in all_checks(list(SERVER_PROFILES))}


def _fault_spec(counterpart: Counterpart) -> str:
    return counterpart.name if counterpart.kind == "fault" else f"variant={counterpart.name}"


def _label(counterpart: Counterpart) -> str:
    return f"{counterpart.check}<-{_fault_spec(counterpart)}"


REFERENCE_COUNTERPARTS = [
    c for c in SERVER_COUNTERPARTS if c.check in CHECKS and CHECKS[c.check].profile != "roundtrip"
]
#: The roundtrip checks judge real Dynamo; their counterparts run the same roundtrip on a
#: reference fleet (conformance.roundtrip.reference_roundtrip) with the fault.
ROUNDTRIP_COUNTERPARTS = [
    c for c in SERVER_COUNTERPARTS if c.check in CHECKS and CHECKS[c.check].profile == "roundtrip"
]


@pytest.fixture(scope="module")
def fleet() -> Iterator[Any]:
    with start_reference_fleet(seed=1) as running:
        yield running


def _run(fleet: Any, counterpart: Counterpart | None, profile: str, **narrow: Any) -> Report:
    fleet.set_faults([_fault_spec(counterpart)] if counterpart is not None else [])
    return conformance.run(url=fleet.frontend_url, profiles=[profile], **RUN, **narrow)


def _seen(report: Report) -> list[str]:
    return [
        f"{r.status.value} {r.check}: {r.message[:160]}"
        for r in report.results
        if r.status is not Status.PASS
    ]


def _missing(profiles: tuple[str, ...]) -> list[str]:
    covered = {c.check for c in SERVER_COUNTERPARTS}
    return sorted(i for i, c in CHECKS.items() if c.profile in profiles and i not in covered)


def test_every_server_check_on_the_reference_has_a_counterpart() -> None:
    missing = _missing(REFERENCE_PROFILES)
    assert missing == [], f"server checks without a counterpart that fails them: {missing}"


def test_every_roundtrip_check_has_a_counterpart() -> None:
    missing = _missing(("roundtrip",))
    assert missing == [], f"roundtrip checks without a counterpart that fails them: {missing}"


def test_every_counterpart_names_a_server_check_and_a_fault_the_reference_has() -> None:
    for counterpart in SERVER_COUNTERPARTS:
        check = CHECKS.get(counterpart.check)
        assert check is not None, f"{_label(counterpart)}: no such server check"
        assert check.requirement in counterpart.fails, _label(counterpart)
        assert counterpart.kind in ("fault", "variant") and counterpart.wrong, _label(counterpart)
        parse_fault(_fault_spec(counterpart))  # ConfigError when the reference has no such fault


def test_the_clean_reference_passes_every_check_a_counterpart_targets(fleet: Any) -> None:
    targeted = {c.check for c in REFERENCE_COUNTERPARTS}
    for profile in REFERENCE_PROFILES:
        report = _run(fleet, None, profile)
        # HTTP-5 is skipped: the clean fleet answers 200, so there is no failure body to judge.
        not_passed = {
            r.check: r.status.value
            for r in report.results
            if r.check in targeted and r.status not in (Status.PASS, Status.SKIP)
        }
        skipped = {r.check for r in report.results if r.status is Status.SKIP}
        assert not_passed == {}, _seen(report)
        assert skipped <= {"HTTP-5::discovery-failed-body"}, _seen(report)


@pytest.mark.parametrize("counterpart", REFERENCE_COUNTERPARTS, ids=_label)
def test_the_counterpart_fails_its_check_alone_and_only_what_it_declares(
    fleet: Any, counterpart: Counterpart
) -> None:
    check = CHECKS[counterpart.check]
    alone = _run(fleet, counterpart, check.profile, checks=(check.id,))
    assert [(r.check, r.status) for r in alone.results] == [(check.id, Status.FAIL)], _seen(alone)
    whole = _run(fleet, counterpart, check.profile)
    verdict = {r.check: r.status for r in whole.results}
    assert verdict[check.id] is Status.FAIL, _seen(whole)
    assert set(whole.failed_requirements()) == counterpart.fails, _seen(whole)
    assert not whole.by_status(Status.ERROR), _seen(whole)


def _roundtrip_verdicts(faults: tuple[str, ...]) -> dict[str, str]:
    """Check ID -> "pass", "fail" or "skip" of every roundtrip check, on a reference fleet."""
    ctx = reference_roundtrip(faults)
    verdicts = {}
    for check_id, check in CHECKS.items():
        if check.profile != "roundtrip":
            continue
        try:
            check.func(ctx)
            verdicts[check_id] = "pass"
        except Failed:
            verdicts[check_id] = "fail"
        except Skipped:
            verdicts[check_id] = "skip"
    return verdicts


def test_the_clean_reference_passes_the_roundtrip() -> None:
    verdicts = _roundtrip_verdicts(())
    assert set(verdicts.values()) == {"pass"}, verdicts


@pytest.mark.parametrize("counterpart", ROUNDTRIP_COUNTERPARTS, ids=_label)
def test_the_roundtrip_counterpart_fails_its_check_and_only_what_it_declares(
    counterpart: Counterpart,
) -> None:
    verdicts = _roundtrip_verdicts((_fault_spec(counterpart),))
    assert verdicts[counterpart.check] == "fail", verdicts
    failed = {CHECKS[c].requirement for c, v in verdicts.items() if v == "fail"}
    assert failed == counterpart.fails, verdicts
