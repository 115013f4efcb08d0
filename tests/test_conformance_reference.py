"""The suite against the reference frontend: passes clean, fails exactly the broken requirement,
and gives the same results through the CLI, pytest and the library."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import conformance
from conformance.results import Status
from prime_rl_dynamo.cli import main
from prime_rl_dynamo.suite.reference import BREAKS, start_reference_fleet
from prime_rl_dynamo.variants import with_variants
from tests._suite_support import pytest_route

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
# A small load keeps each run well under a second; the full 32x20 runs in the CLI by default.
SMALL = {"load_clients": 4, "load_requests": 3, "polls": 2, "seed": 1}


@pytest.fixture(scope="module")
def fleet() -> Iterator[Any]:
    with start_reference_fleet() as running:
        yield running


def _not_passed(report: Any) -> list[str]:
    return [
        f"{r.status.value} {r.check}: {r.message[:300]}"
        for r in report.results
        if r.status in (Status.FAIL, Status.ERROR, Status.WARN)
    ]


def test_clean_reference_frontend_passes(fleet: Any) -> None:
    report = conformance.run(url=fleet.frontend_url, profiles=["frontend", "workers"], **SMALL)
    assert _not_passed(report) == []
    assert report.ok
    judged = {r.requirement for r in report.results if r.status is Status.PASS}
    assert {"HTTP-1", "HTTP-2", "HTTP-3", "HTTP-4", "LIST-1", "ENGINE-1", "ADMIN-1"} <= judged
    load = next(r for r in report.results if r.check == "HTTP-7::concurrent-polls")
    assert (
        load.details["requests_done"] == 12 and load.details["p99_ms"] >= load.details["p50_ms"] > 0
    )


@pytest.mark.parametrize("requirement", sorted(BREAKS))
def test_each_break_fault_fails_exactly_its_requirement(requirement: str) -> None:
    with start_reference_fleet(faults=[f"break={requirement}"]) as broken:
        report = conformance.run(url=broken.frontend_url, profiles=["frontend", "workers"], **SMALL)
    found = set(report.failed_requirements())
    assert found == with_variants(requirement), _not_passed(report)
    errors = [r for r in report.results if r.status is Status.ERROR]
    assert errors == [], [e.message for e in errors]


def test_smg_gateway_gets_one_line_not_field_by_field_failures() -> None:
    with start_reference_fleet(faults=["break=DIALECT-1"]) as smg:
        report = conformance.run(url=smg.frontend_url, profiles=["frontend"], **SMALL)
    failed = report.by_status(Status.FAIL)
    assert [r.check for r in failed] == ["DIALECT-1::dialect", "VERSION-1::smg"]
    assert all("\n" not in r.message for r in failed) and "SMG" in failed[0].message
    skipped = [r for r in report.results if r.check.endswith("::body")]
    assert skipped and all(r.status is Status.SKIP and "DIALECT-1" in r.message for r in skipped)


def test_should_failures_warn_and_strict_makes_them_fail() -> None:
    # Membership churn breaks only HTTP-6 (a SHOULD): repeated polls differ.
    with start_reference_fleet(faults=["churn=0.01"]) as churning:
        relaxed = conformance.run(
            url=churning.frontend_url,
            profiles=["frontend"],
            requirements=["HTTP-6"],
            **{**SMALL, "polls": 30},
        )
        strict = conformance.run(
            url=churning.frontend_url,
            profiles=["frontend"],
            requirements=["HTTP-6"],
            strict=True,
            **{**SMALL, "polls": 30},
        )
    assert [r.status for r in relaxed.results] == [Status.WARN], relaxed.results
    assert relaxed.ok
    assert [r.status for r in strict.results] == [Status.FAIL]
    assert not strict.ok


def test_unreachable_target_is_an_error_not_a_failure() -> None:
    report = conformance.run(
        url="http://127.0.0.1:9", profiles=["frontend"], requirements=["HTTP-2"], **SMALL
    )
    assert [r.status for r in report.results] == [Status.ERROR]
    assert "127.0.0.1:9" in report.results[0].message


def test_cli_pytest_and_library_agree(fleet: Any, tmp_path: Path) -> None:
    url = fleet.frontend_url
    common = ["--load", "4x3", "--seed", "1"]
    library = conformance.run(
        url=url, profiles=["frontend", "workers"], load_clients=4, load_requests=3, seed=1
    )

    cli_json, cli_junit = tmp_path / "cli.json", tmp_path / "cli.xml"
    code = main(
        [
            "conformance",
            url,
            "-q",
            *common,
            "--json-report",
            str(cli_json),
            "--junit-xml",
            str(cli_junit),
        ]
    )
    assert code == 0
    cli = json.loads(cli_json.read_text())

    py_json, py_junit = tmp_path / "pytest.json", tmp_path / "pytest.xml"
    proc = pytest_route(
        "--rl-url",
        url,
        "--rl-load",
        "4x3",
        "--rl-seed",
        "1",
        "--rl-json-report",
        str(py_json),
        f"--junitxml={py_junit}",
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    from_pytest = json.loads(py_json.read_text())

    outcomes = library.outcomes()
    assert {r["check"]: r["status"] for r in cli["results"]} == outcomes
    assert {r["check"]: r["status"] for r in from_pytest["results"]} == outcomes
    # pytest's own items: one per check, named by its ID, skipped exactly where the suite skipped.
    cases = {c.get("name"): c for c in ET.parse(py_junit).getroot().iter("testcase")}
    assert {f"test_conformance[{check}]" for check in outcomes} == set(cases)
    for check, status in outcomes.items():
        skipped = cases[f"test_conformance[{check}]"].find("skipped") is not None
        assert skipped == (status == "skip"), check
    # The CLI's JUnit file has the same checks.
    names = {c.get("name").split(" ")[0] for c in ET.parse(cli_junit).getroot().iter("testcase")}
    assert names == set(outcomes)
    assert cli["seed"] == 1 and cli["target"]["url"] == url
    assert cli["versions"]["schemathesis"] and cli["options"]["load_clients"] == 4


def test_cli_without_url_says_which_target_it_used(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "conformance",
            "-q",
            "--target",
            "reference",
            "--profile",
            "frontend",
            "--load",
            "2x2",
            "--requirement",
            "HTTP-3",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "embedded reference frontend" in out
    assert "HTTP-3" in out and "CONFORMANT" in out


def test_cli_exit_code_and_junit_on_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with start_reference_fleet(faults=["break=LIST-6"]) as broken:
        junit = tmp_path / "j.xml"
        code = main(
            [
                "conformance",
                broken.frontend_url,
                "-q",
                "--profile",
                "frontend",
                "--load",
                "2x2",
                "--junit-xml",
                str(junit),
            ]
        )
    out = capsys.readouterr().out
    assert code == 1
    assert "failed requirements: LIST-6" in out and "reproduce: prime-rl-dynamo conformance" in out
    failures = [f.get("type") for f in ET.parse(junit).getroot().iter("failure")]
    assert failures == ["LIST-6"]


@pytest.mark.parametrize(
    "fault", ["reset", "truncate", "malformed-json", "unavailable", "rate-limit=1"]
)
def test_a_broken_exchange_fails_http1_and_skips_what_it_hides(fault: str) -> None:
    with start_reference_fleet(faults=[fault]) as broken:
        report = conformance.run(url=broken.frontend_url, profiles=["frontend", "workers"], **SMALL)
    assert report.failed_requirements() == ["HTTP-1"], _not_passed(report)
    assert not report.by_status(Status.ERROR)
    assert all(
        "HTTP-1" in r.message for r in report.by_status(Status.SKIP) if r.check.endswith("::body")
    )


def test_a_fleet_that_cannot_be_listed_is_never_conformant() -> None:
    with start_reference_fleet(faults=["discovery-failed"]) as failing:
        report = conformance.run(
            url=failing.frontend_url, profiles=["frontend", "workers"], **SMALL
        )
    # 500 discovery_failed is a conformant answer (HTTP-1, HTTP-5 pass) but decides nothing else:
    # no requirement failed, and the failed results say why the run is not ok
    (why,) = report.failed_requirements()
    assert why.startswith("inconclusive: ") and "discovery_failed" in why
    assert not report.ok
    errors = report.by_status(Status.ERROR)
    assert errors and all("discovery_failed" in r.message for r in errors)
