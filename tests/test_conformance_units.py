"""Unit tests of the conformance framework: registry, result levels, reports, imports, listings."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conformance.registry import PROFILES, all_checks
from conformance.reporting import print_summary, reproduce_command, write_json, write_junit
from conformance.results import Report, Result, Status
from conformance.roundtrip import compare_listing
from conformance.runner import Options
from prime_rl_dynamo.requirements import all_requirements, v2_requirements
from prime_rl_dynamo.topology import topology_from_dict
from prime_rl_dynamo.wire import WorkerId

ROOT = Path(__file__).resolve().parent.parent


def test_every_check_names_a_catalog_requirement_and_a_unique_id() -> None:
    checks = all_checks()
    catalog = {**all_requirements(), **v2_requirements()}  # frontend-v2 checks name V2-* IDs
    assert len({c.id for c in checks}) == len(checks)
    for c in checks:
        assert c.requirement in catalog, c.id
        assert c.level == catalog[c.requirement].level
        assert c.profile in PROFILES
    assert {c.profile for c in checks} == set(PROFILES)


def test_every_server_requirement_the_validator_enforces_has_a_frontend_check() -> None:
    checked = {c.requirement for c in all_checks(["frontend"])}
    wanted = {
        r.id
        for r in all_requirements().values()
        if r.party == "server" and r.enforced_by in ("schema", "validator")
    }
    assert wanted - checked == set()


def _report(*statuses: Status, requirement: str | None = None) -> Report:
    """One result per status, each of its own requirement (or each a check of ``requirement``)."""
    results = [
        Result(
            check=f"{requirement}::check-{i}" if requirement else f"HTTP-{i + 1}::x",
            requirement=requirement or f"HTTP-{i + 1}",
            level="MUST",
            profile="frontend",
            title="t",
            status=s,
            message=f"{s.value} because\nsecond line",
        )
        for i, s in enumerate(statuses)
    ]
    return Report(
        target={"kind": "url", "url": "http://127.0.0.1:1"},
        options={"url": "http://127.0.0.1:1", "profiles": ("frontend",), "strict": False},
        seed=42,
        versions={"python": "3"},
        results=results,
    )


def test_report_ok_only_without_fail_or_error() -> None:
    assert _report(Status.PASS, Status.WARN, Status.SKIP).exit_code == 0
    assert _report(Status.PASS, Status.FAIL).exit_code == 1
    assert _report(Status.PASS, Status.ERROR).exit_code == 3  # inconclusive, not the target's fault
    assert _report(Status.FAIL, Status.PASS).failed_requirements() == ["HTTP-1"]


def test_junit_and_json_reports_parse(tmp_path: Path) -> None:
    report = _report(Status.PASS, Status.FAIL, Status.ERROR, Status.SKIP, Status.WARN)
    junit = ET.parse(write_junit(report, tmp_path / "out" / "junit.xml")).getroot()
    assert (
        junit.get("tests"),
        junit.get("failures"),
        junit.get("errors"),
        junit.find("testsuite").get("skipped"),  # type: ignore[union-attr]  # not on <testsuites>
    ) == (
        "6",  # the five checks, and the run's inconclusive case (the error makes the run so)
        "2",
        "1",
        "2",  # the skip and the warning (JUnit has no warning outcome)
    )
    (run,) = junit.findall("testsuite[@name='conformance.run']/testcase")
    failure = run.find("failure")
    assert (run.get("name"), failure.get("type")) == ("inconclusive", "inconclusive")  # type: ignore[union-attr]
    assert failure.get("message") == "inconclusive: 1 check in error: error because"  # type: ignore[union-attr]
    props = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert props["warnings"] == "1"
    names = [case.get("name") for case in junit.iter("testcase")]
    assert names[1] == "HTTP-2::x [MUST]"
    assert junit.find(".//failure").get("type") == "HTTP-2"  # type: ignore[union-attr]
    data = json.loads(write_json(report, tmp_path / "r.json").read_text())
    assert data["seed"] == 42 and data["ok"] is False
    # the fail, then the error: both keep the run from being ok
    assert data["failed_requirements"] == [
        "HTTP-2",
        "inconclusive: 1 check in error: error because",
    ]
    assert data["counts"] == {"pass": 1, "skip": 1, "waived": 0, "warn": 1, "fail": 1, "error": 1}
    assert "--seed 42" in data["reproduce"]


def test_terminal_summary_names_the_broken_requirement_and_how_to_reproduce() -> None:
    from rich.console import Console

    console = Console(record=True, width=200)
    print_summary(_report(Status.PASS, Status.FAIL), console)
    text = console.export_text()
    assert "NOT CONFORMANT" in text
    assert "failed requirements: HTTP-2" in text
    assert reproduce_command(_report()) in text.replace("\n", " ") or "--seed 42" in text


def _row(*statuses: Status) -> str:
    from rich.console import Console

    console = Console(record=True, width=200, color_system=None)
    print_summary(_report(*statuses, requirement="HTTP-1"), console, verbose=True)
    (row,) = [line for line in console.export_text().splitlines() if "│ HTTP-1 " in line]
    return row


def test_the_summary_row_shows_each_check_s_status_when_they_differ() -> None:
    assert "│ PASS+SKIP " in _row(Status.PASS, Status.SKIP)
    assert "│ SKIP+FAIL+PASS " in _row(Status.SKIP, Status.FAIL, Status.PASS)


def test_the_summary_row_shows_one_status_when_the_checks_agree() -> None:
    assert "│ SKIP " in _row(Status.SKIP, Status.SKIP)
    assert "+" not in _row(Status.PASS, Status.PASS).split("│")[3]


def test_options_default_profiles() -> None:
    assert Options(url="http://x").resolved_profiles() == ("frontend", "workers")
    assert Options().resolved_profiles() == PROFILES
    with pytest.raises(ValueError, match="unknown profile"):
        Options(profiles=("nope",)).resolved_profiles()


def _run_python(code: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    return proc.stdout.strip()


@pytest.mark.integration
def test_the_pytest_plugin_is_cheap_to_import() -> None:
    # Every pytest run imports it (pytest11 entry point): nothing heavy may come along.
    out = _run_python(
        "import sys, conformance.plugin; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('httpx', 'schemathesis', 'hypothesis', 'rich', 'prime_rl_dynamo', 'starlette')))"
    )
    assert out == "[]"


@pytest.mark.integration
def test_hypothesis_stays_out_of_the_core() -> None:
    out = _run_python(
        "import sys, prime_rl_dynamo, prime_rl_dynamo.client, prime_rl_dynamo.validate, "
        "prime_rl_dynamo.plan, prime_rl_dynamo.admin; print('hypothesis' in sys.modules)"
    )
    assert out == "False"


@dataclass
class _Engine:
    key: str
    identity: tuple[str, str, str, int]
    spec: Any
    admin_base_url: str | None
    system_url: str | None
    models: tuple[str, ...] = ()  # as a harness engine: none registered through the runtime

    @property
    def world_size(self) -> int:
        """What the engine reports now (FleetEngine): its spec's, never resized here."""
        return int(self.spec.world_size)


def _fleet() -> list[_Engine]:
    topology = topology_from_dict(
        {
            "engines": [
                {"component": "prefill", "count": 2, "world_size": 2},
                {"component": "broken", "faults": {"reply_error": "dead"}},
            ]
        }
    )
    out = []
    for i, spec in enumerate(topology.engines()):
        out.append(
            _Engine(
                key=spec.key,
                identity=WorkerId(spec.namespace, spec.component, spec.endpoint, 100 + i),
                spec=spec,
                admin_base_url=f"http://127.0.0.1:{9000 + i}/admin",
                system_url=f"http://127.0.0.1:{9100 + i}",
            )
        )
    return out


def _listing(engines: list[_Engine]) -> dict[str, Any]:
    workers = []
    for e in engines:
        ns, comp, ep, iid = e.identity
        w: dict[str, Any] = {"namespace": ns, "component": comp, "endpoint": ep, "instance_id": iid}
        if e.spec.faults.reply_error:
            w.update(routes=[], error="engine is dead")
        else:
            w.update(
                system_url=e.system_url,
                admin_base_url=e.admin_base_url,
                routes=sorted(e.spec.routes),
                world_size=e.spec.world_size,
            )
        workers.append(w)
    return {"protocol_version": 1, "namespace": "dynamo", "workers": workers}


def test_compare_listing_accepts_the_exact_fleet_and_names_every_difference() -> None:
    fleet = _fleet()
    body = _listing(fleet)
    assert compare_listing(body, fleet, set(), when="t") == []
    lost = {**body, "workers": body["workers"][1:]}
    assert any(
        "registered but not listed" in p for p in compare_listing(lost, fleet, set(), when="t")
    )
    doubled = {**body, "workers": [body["workers"][0], *body["workers"]]}
    assert any("listed twice" in p for p in compare_listing(doubled, fleet, set(), when="t"))
    invented = _listing(
        [*fleet, _Engine("x", ("dynamo", "ghost", "rl", 7), fleet[0].spec, None, None)]
    )
    assert any("never registered" in p for p in compare_listing(invented, fleet, set(), when="t"))
    resized = json.loads(json.dumps(body))
    resized["workers"][0]["world_size"] = 8
    assert any(
        "expected world_size 2" in p for p in compare_listing(resized, fleet, set(), when="t")
    )


def test_compare_listing_lets_a_dead_instance_linger_only_with_an_error() -> None:
    fleet = _fleet()
    body = _listing(fleet)
    dead = fleet[0].identity
    live = fleet[1:]
    lingering = json.loads(json.dumps(body))
    assert any("without error" in p for p in compare_listing(lingering, live, {dead}, when="t"))
    lingering["workers"][0] = {**lingering["workers"][0], "routes": [], "error": "Unavailable"}
    for key in ("system_url", "admin_base_url", "world_size"):
        lingering["workers"][0].pop(key)
    assert compare_listing(lingering, live, {dead}, when="t") == []


@pytest.mark.integration
def test_pass_messages_say_one_body_not_one_bodies() -> None:
    # A fleet that lists one distinct body: "(1 distinct body judged)", not "1 distinct bodies".
    import conformance
    from prime_rl_dynamo.suite.reference import start_reference_fleet

    with start_reference_fleet() as fleet:
        report = conformance.run(
            url=fleet.frontend_url, profiles=["frontend"], requirements=["VERSION-1"], seed=1
        )
    messages = [r.message for r in report.results]
    assert messages and all("1 distinct body judged" in m for m in messages), messages
    assert not any("1 distinct bodies" in m for m in messages)
