"""Whatever makes a run not ok appears in its failed results: ``report.failed_requirements()`` and
the JSON report's ``failed_requirements`` name an expired waiver, an interrupt, an inconclusive run
and an empty one, so that ``assert report.ok, report.failed_requirements()`` says why."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import conformance
from conformance.reporting import write_json
from conformance.results import Report, Result, Status
from prime_rl_dynamo.suite.reference import start_reference_fleet

SMALL = {"load_clients": 1, "load_requests": 1, "seed": 1}


def _report(*statuses: Status, **fields: Any) -> Report:
    results = [
        Result(f"HTTP-{i}::x", f"HTTP-{i}", "MUST", "frontend", "t", s, "why")
        for i, s in enumerate(statuses, 1)
    ]
    return Report(target={}, options={}, seed=1, versions={}, results=results, **fields)


def _says_why(report: Report) -> str:
    with pytest.raises(AssertionError) as raised:
        assert report.ok, report.failed_requirements()  # the documented snippet
    return str(raised.value)


def test_an_ok_run_has_no_failed_results_and_the_snippet_passes() -> None:
    report = _report(Status.PASS, Status.WARN, Status.SKIP)
    assert report.ok and report.failed_requirements() == []
    assert report.ok, report.failed_requirements()


def test_an_interrupted_run_says_so() -> None:
    report = _report(Status.PASS, incomplete=True, not_run=["HTTP-2::x", "HTTP-3::x"])
    assert report.failed_requirements() == ["interrupted: 2 checks not run"]
    assert "interrupted" in _says_why(report)
    assert report.exit_code == 130 and report.to_dict()["exit_code"] == 130


def test_an_inconclusive_run_says_why() -> None:
    report = _report(Status.PASS, Status.ERROR)
    (entry,) = report.failed_requirements()
    assert entry == "inconclusive: 1 check in error: why"


def test_every_selected_check_skipped_says_nothing_was_checked() -> None:
    report = _report(Status.SKIP)
    assert report.failed_requirements() == [
        "nothing checked: every selected check was skipped: why"
    ]


def test_failed_results_and_reasons_add_up() -> None:
    # a failure and an interrupt: both made it not ok, both are named
    report = _report(Status.FAIL, incomplete=True, not_run=["HTTP-9::x"])
    assert report.failed_requirements() == ["HTTP-1", "interrupted: 1 check not run"]


@pytest.fixture(scope="module")
def fleet() -> Iterator[Any]:
    with start_reference_fleet() as running:
        yield running


@pytest.mark.integration
def test_an_expired_waiver_that_matches_nothing_is_a_failed_requirement(
    fleet: Any, tmp_path: Path
) -> None:
    # HTTP-2 passes, the waiver's date is gone: the run is not ok, and its results say why.
    waivers = tmp_path / "w.yaml"
    waivers.write_text(
        "waivers:\n  - requirement: HTTP-2\n    reason: old deviation\n    expires: 2020-01-31\n"
    )
    report = conformance.run(
        url=fleet.frontend_url,
        profiles=["frontend"],
        requirements=["HTTP-2"],
        waivers=str(waivers),
        **SMALL,
    )
    assert {r.status for r in report.results} == {Status.PASS}
    assert not report.ok
    assert report.failed_requirements() == ["HTTP-2"]
    assert "HTTP-2" in _says_why(report)
    data = json.loads(write_json(report, tmp_path / "r.json").read_text())
    assert data["failed_requirements"] == ["HTTP-2"] and data["ok"] is False


@pytest.mark.integration
def test_a_run_with_nothing_selected_says_so_in_its_failed_results(tmp_path: Path) -> None:
    report = conformance.run(
        url="http://127.0.0.1:9", profiles=["frontend"], requirements=["READY-1"], **SMALL
    )
    assert report.exit_code == 4
    (entry,) = report.failed_requirements()
    assert entry.startswith("nothing checked: no check was selected: READY-1 is checked only")
    data = json.loads(write_json(report, tmp_path / "r.json").read_text())
    assert data["failed_requirements"] == [entry]
