"""The reports of a run: JUnit files valid against tests/junit.xsd (the common Jenkins /
Surefire form), JSON reports valid against schema/conformance-report.v1.schema.json, and what
each holds (first-line failure messages, warn / waived / skip / not-run shown as such, per-case
durations, suite timestamps, structured violations, ISO 8601 times, the target block)."""

from __future__ import annotations

import re
import socket
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _report_support import CiReports, assert_valid_junit, assert_valid_report, fresh_reports

import conformance
from conformance.reporting import write_json, write_junit
from conformance.results import Report, Status
from prime_rl_dynamo.cli import main
from prime_rl_dynamo.resources import load_json
from prime_rl_dynamo.suite.reference import start_reference_fleet

pytestmark = pytest.mark.integration

TESTS = Path(__file__).resolve().parent
SMALL = {"load_clients": 2, "load_requests": 2, "polls": 2, "seed": 1}
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@pytest.fixture(scope="module")
def broken() -> Iterator[Any]:
    with start_reference_fleet(faults=["break=LIST-6"]) as running:
        yield running


def _write(report: Report, tmp_path: Path, name: str) -> tuple[ET.Element, dict[str, Any]]:
    junit = assert_valid_junit(write_junit(report, tmp_path / f"{name}.xml"))
    data = assert_valid_report(write_json(report, tmp_path / f"{name}.json"))
    return junit, data


def _cases(junit: ET.Element) -> dict[str, ET.Element]:
    return {c.get("name", "").split(" ")[0]: c for c in junit.iter("testcase")}


def test_a_failing_run_validates_and_says_the_first_line(broken: Any, tmp_path: Path) -> None:
    report = conformance.run(url=broken.frontend_url, profiles=["frontend", "workers"], **SMALL)
    junit, data = _write(report, tmp_path, "fail")
    (failure,) = junit.iter("failure")
    assert failure.get("type") == "LIST-6"
    assert failure.get("message", "").startswith("LIST-6 at /workers/")
    assert "\n" not in failure.get("message", "") and failure.text and "\n" in failure.text
    skipped = _cases(junit)["HTTP-5::discovery-failed-body"].find("skipped")
    assert skipped is not None and skipped.get("type") == "skip"
    # Each case carries its own check's measured duration (no shared or constant time): the
    # durations' spread, not their count of distinct values (fast checks may tie at 1 us).
    times = {name: float(case.get("time", "0")) for name, case in _cases(junit).items()}
    assert times == {r.check: float(f"{r.duration:.6f}") for r in report.results}
    assert all(t > 0 for t in times.values()) and max(times.values()) > 2 * min(times.values())
    # JSON: structured violations, ISO 8601 times, the target block.
    (result,) = [r for r in data["results"] if r["status"] == "fail"]
    violation = result["violations"][0]
    assert violation["requirement"] == "LIST-6" and violation["pointer"].startswith("/workers/")
    assert violation["worker"] and "#" in violation["worker"]
    assert violation["expected"] and violation["found"]
    assert ISO.match(data["started"]) and ISO.match(result["started"])
    assert data["target"]["url"] == broken.frontend_url.rstrip("/")
    assert "server" in data["target"]  # the Server header as received (the reference sends none)
    assert data["target"]["protocol_version"] == 1
    assert data["verdict"] == "not-conformant" and data["exit_code"] == 1


def test_the_target_block_holds_what_the_target_says_about_itself(tmp_path: Path) -> None:
    from tests._client_support import ScriptedServer, body, ok, worker

    with ScriptedServer() as server:
        server.script(
            "GET", "/v1/rl/workers", ok(body(worker("a", 1)), **{"x-dynamo-version": "1.6.1"})
        )
        report = conformance.run(url=server.url, profiles=["frontend"], requirements=["HTTP-1"])
    _, data = _write(report, tmp_path, "target")
    assert data["target"]["server"].startswith("BaseHTTP/")
    assert data["target"]["reported_version"] == "1.6.1"


def test_warn_and_waived_show_as_what_they_are(tmp_path: Path) -> None:
    with start_reference_fleet(faults=["churn=0.01", "break=LIST-6"]) as fleet:
        waivers = tmp_path / "w.yaml"
        waivers.write_text("waivers:\n  - requirement: LIST-6\n    reason: on purpose\n")
        report = conformance.run(
            url=fleet.frontend_url,
            profiles=["frontend"],
            waivers=str(waivers),
            target_version="ref-1",
            **{**SMALL, "polls": 30},
        )
    statuses = {r.check: r.status for r in report.results}
    assert statuses["HTTP-6::stable-polls"] is Status.WARN
    assert statuses["LIST-6::body"] is Status.WAIVED
    junit, data = _write(report, tmp_path, "warn")
    cases = _cases(junit)
    warn = cases["HTTP-6::stable-polls"]
    assert warn.get("status") == "warn"
    assert (warn.findtext("system-err") or "").startswith("WARNING: SHOULD requirement HTTP-6")
    # JUnit has no warning outcome and readers (Jenkins, GitLab, GitHub reporters) show a pass
    # nowhere: a warning is a <skipped type="warning"> whose message says so, as pytest writes
    # an xfail; the suite's "warnings" property counts them apart from real skips.
    flagged = warn.find("skipped")
    assert flagged is not None and flagged.get("type") == "warning"
    assert (flagged.get("message") or "").startswith("warning: SHOULD requirement HTTP-6 not met:")
    suite = next(s for s in junit.iter("testsuite") if s.get("name") == "conformance.frontend")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    warned = [c for c in suite.iter("testcase") if c.get("status") == "warn"]
    assert props["warnings"] == str(len(warned)) and warned
    assert [c.findall("skipped")[0].get("type") for c in warned] == ["warning"] * len(warned)
    assert int(suite.get("skipped") or 0) == sum(
        1 for c in suite.iter("testcase") if c.find("skipped") is not None
    )
    waived = cases["LIST-6::body"]
    assert waived.get("status") == "waived"
    node = waived.find("skipped")
    assert node is not None and node.get("type") == "waived"
    assert (node.get("message") or "").startswith("waived (on purpose)")
    assert data["target"]["target_version"] == "ref-1"
    properties = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert properties["target.version"] == "ref-1" and properties["verdict"] == "conformant"


def test_unreachable_and_interrupted_runs_validate(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    unreachable = conformance.run(url=f"http://127.0.0.1:{port}", profiles=["frontend"], seed=1)
    junit, data = _write(unreachable, tmp_path, "unreachable")
    assert len(list(junit.iter("error"))) == len(unreachable.results) > 10
    assert data["inconclusive"].startswith("nothing listening at") and data["exit_code"] == 3
    partial = Report(
        target={"kind": "url", "url": "http://127.0.0.1:1"},
        options={},
        seed=1,
        versions={},
        results=unreachable.results[:2],
        started=unreachable.started,
        finished=unreachable.finished,
        incomplete=True,
        not_run=[r.check for r in unreachable.results[2:]],
    )
    junit, data = _write(partial, tmp_path, "partial")
    not_run = [c for c in junit.iter("testcase") if c.get("status") == "not run"]
    assert len(not_run) == len(unreachable.results) - 2
    assert data["incomplete"] is True and data["verdict"] == "inconclusive"


def test_every_message_cut_stops_at_a_word() -> None:
    from prime_rl_dynamo.text import cut

    text = "refused: the engines sum to 7, yet the client was told W=8 and initialised nothing"
    assert cut(text, 40) == "refused: the engines sum to 7, yet the…"
    assert cut("short", 40) == "short"


def test_the_cli_reports_of_a_reference_run_validate(tmp_path: Path) -> None:
    # What `make ci-conformance` writes for the reference (frontend and workers profiles here).
    junit, report = tmp_path / "conformance-reference.xml", tmp_path / "conformance-reference.json"
    code = main(
        [
            "conformance",
            "-q",
            "--seed",
            "1",
            "--target",
            "reference",
            "--profile",
            "frontend",
            "--profile",
            "workers",
            "--load",
            "2x2",
            "--junit-xml",
            str(junit),
            "--json-report",
            str(report),
        ]
    )
    assert code == 0
    assert_valid_junit(junit)
    data = assert_valid_report(report)
    assert set(data["target"]["profiles"]) == {"frontend", "workers"}


@pytest.mark.timeout(1500)  # under `make test`, ci_reports waits for the conformance runs
def test_every_report_this_make_test_wrote_validates(ci_reports: CiReports) -> None:
    # Only the files `make test`'s conformance lane wrote during this session: a report an
    # earlier run left is neither read nor trusted (tests/conftest.py, ci_reports).
    junit = [path for path in ci_reports.files if path.suffix == ".xml"]
    if ci_reports.lane_status == 0:
        assert junit, "the conformance lane passed, yet wrote no JUnit report during this session"
    for path in junit:
        assert_valid_junit(path)
    for path in ci_reports.files:
        if path.name.startswith("conformance-") and path.suffix == ".json":
            assert_valid_report(path)


def test_only_the_reports_written_since_the_run_began_are_read(tmp_path: Path) -> None:
    import os

    old, new, log = tmp_path / "old.xml", tmp_path / "new.json", tmp_path / "ci-lane.log"
    for path in (old, new, log):
        path.write_text("x")
    began = new.stat().st_mtime
    os.utime(old, (began - 60, began - 60))  # left by an earlier run
    assert fresh_reports(tmp_path, since=began) == [new]
    assert fresh_reports(tmp_path / "absent", since=began) == []


def test_the_report_schema_names_every_profile() -> None:
    # A profile added to the suite (frontend-v2) once made every real run's JSON report invalid.
    from conformance.registry import PROFILES

    schema = load_json("conformance-report.v1.schema.json")
    found = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "profile" in node.get("properties", {}):
                found.append(node["properties"]["profile"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    assert found and all(set(p["enum"]) == set(PROFILES) for p in found), found
