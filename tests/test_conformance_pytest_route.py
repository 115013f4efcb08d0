"""The pytest route (``pytest --pyargs conformance``): its exit statuses, what an unreachable
target prints, per-item durations and a JUnit file valid against tests/junit.xsd."""

from __future__ import annotations

import json
import socket
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _gateway_support import stalling_head_frontend
from _parallel_support import side_by_side
from _report_support import assert_valid_junit

from prime_rl_dynamo.suite.reference import start_reference_fleet
from tests._suite_support import ENV, PYTEST_ROUTE, ROOT, interrupt_when, pytest_route

pytestmark = pytest.mark.integration


def _pytest(url: str, *args: str, junit: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The pytest route against ``url`` (a small load, seed 1), its JUnit file at ``junit``."""
    extra = [f"--junitxml={junit}"] if junit else []
    return pytest_route("--rl-url", url, "--rl-load", "2x2", "--rl-seed", "1", *args, *extra)


@pytest.fixture(scope="module")
def broken() -> Iterator[Any]:
    with start_reference_fleet(faults=["break=LIST-6"]) as running:
        yield running


def test_unreachable_target_exits_3_with_one_line(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    junit = tmp_path / "p.xml"
    proc = _pytest(url, junit=junit)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 3, out[-2000:]
    assert f"nothing listening at {url}: connection refused (inconclusive)" in out
    assert "Traceback" not in out and len(out.splitlines()) < 15, out
    # pytest's JUnit file still has one case per check, each an error saying why (not an empty
    # file a dashboard reads as "no tests"), and the run's own case fails naming the verdict.
    root = assert_valid_junit(junit)
    cases = [c for c in root.iter("testcase") if c.get("classname") != "conformance.run"]
    assert len(cases) > 10
    for case in cases:
        (error,) = case.findall("error")
        assert f"nothing listening at {url}" in (error.get("message") or ""), case.get("name")
    (run,) = root.iter("failure")
    assert (run.get("message") or "").startswith("inconclusive: ")
    assert f"nothing listening at {url}" in (run.get("message") or "")


def test_ctrl_c_writes_a_partial_report_and_junit(tmp_path: Path) -> None:

    with stalling_head_frontend() as frontend:
        junit, report = tmp_path / "p.xml", tmp_path / "p.json"
        args = [
            *PYTEST_ROUTE,
            "--rl-url",
            frontend.url,
            "--rl-profile",
            "frontend",
            "--rl-timeout",
            "60",
            "--rl-seed",
            "1",
            f"--junitxml={junit}",
            "--rl-json-report",
            str(report),
        ]
        proc = subprocess.Popen(
            args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ENV
        )
        out, _ = interrupt_when(proc, frontend.head_seen, "HTTP-2")
    assert proc.returncode == 2, out[-2000:]  # pytest's "interrupted"
    assert "interrupted: the conformance report is incomplete" in out
    assert "Traceback" not in out, out[-3000:]
    data = json.loads(report.read_text())
    assert data["incomplete"] is True and data["verdict"] == "inconclusive"
    assert "HTTP-2::head" in data["not_run"]
    root = assert_valid_junit(junit)
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert len(cases) == len(data["not_run"]) + len(data["results"]) + 1  # + the run's own
    interrupted = cases.pop("interrupted")
    assert interrupted.get("classname") == "conformance.run"
    (failure,) = interrupted.findall("failure")
    assert (failure.get("message") or "").startswith("interrupted: ")
    not_run = [
        c
        for c in cases.values()
        if "not run" in (c.findtext("skipped") or "")
        or any("not run" in (n.get("message") or "") for n in c.findall("skipped"))
    ]
    assert len(not_run) == len(data["not_run"])
    passed = cases["test_conformance[HTTP-1::status-and-content-type]"]
    assert not list(passed)  # a check done before the interrupt: a plain pass


def test_unknown_requirement_is_pytests_usage_error() -> None:
    proc = _pytest("http://127.0.0.1:1", "--rl-requirement", "LIST-66")
    assert proc.returncode == 4  # pytest's usage error
    assert "--rl-requirement: unknown requirement ID 'LIST-66'; did you mean LIST-6" in proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (("--rl-timeout", "0"), "timeout must be a positive number of seconds; found 0.0"),
        (("--rl-load", "2x0"), "load_requests must be at least 1, found 0 (--rl-load)"),
        (("--rl-profile", "nope"), "unknown profile(s) nope"),
    ],
)
def test_a_bad_option_is_pytests_usage_error_like_the_clis(
    option: tuple[str, str], message: str
) -> None:
    # Validated up front although no URL is given: the same check as the CLI's, flags renamed.
    proc = pytest_route(*option)
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert message in proc.stderr and "Traceback" not in proc.stdout + proc.stderr


def test_nothing_checked_exits_5_and_says_why(broken: Any) -> None:
    proc = _pytest(broken.frontend_url, "--rl-requirement", "RANK-6")
    assert proc.returncode == 5, proc.stdout[-2000:]
    last = proc.stdout.splitlines()[-1]  # last, on its own line, after pytest's summary
    assert last.startswith("nothing was checked: no check was selected: RANK-6 is checked only")
    assert last.endswith("add --rl-profile client)")  # the pytest spelling, not the CLI's
    assert "%]nothing" not in proc.stdout


def test_rl_options_without_the_suite_collected_say_so_and_exit_5(tmp_path: Path) -> None:
    # `pytest --rl-url X` without --pyargs conformance collects nothing of the suite
    without_suite = [a for a in PYTEST_ROUTE if a not in ("--pyargs", "conformance")]
    proc = subprocess.run(
        [*without_suite, "--rl-url", "http://127.0.0.1:9"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env=ENV, check=False,
    )  # fmt: skip
    assert proc.returncode == 5, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == (
        "nothing was checked: --rl-* options were given, but no item of the conformance suite "
        "was collected: add --pyargs conformance (pytest --pyargs conformance --rl-url URL)"
    )


def test_a_failing_target_fails_and_a_waiver_is_an_xfail(broken: Any, tmp_path: Path) -> None:
    junit, report, waived_junit = tmp_path / "p.xml", tmp_path / "p.json", tmp_path / "w.xml"
    waivers = tmp_path / "w.yaml"
    waivers.write_text("waivers:\n  - requirement: LIST-6\n    reason: on purpose\n")
    url = broken.frontend_url
    proc, waived = side_by_side(  # two independent runs against the same fleet
        lambda: _pytest(
            url, "--rl-profile", "frontend", "--rl-json-report", str(report), junit=junit
        ),
        lambda: _pytest(
            url, "--rl-profile", "frontend", "--rl-waivers", str(waivers), junit=waived_junit
        ),
    )
    assert proc.returncode == 1, proc.stdout[-2000:]
    root = assert_valid_junit(junit)
    (failure,) = root.iter("failure")
    assert "LIST-6" in (failure.get("message") or "")
    # Each item carries its check's own duration, not the whole suite's on the first item.
    durations = {r["check"]: r["duration"] for r in json.loads(report.read_text())["results"]}
    for case in root.iter("testcase"):
        check = (case.get("name") or "").removeprefix("test_conformance[").removesuffix("]")
        assert abs(float(case.get("time") or 0) - durations[check]) < 0.002, check

    assert waived.returncode == 0, waived.stdout[-2000:]
    assert "1 xfailed" in waived.stdout
    case = next(
        c
        for c in ET.parse(waived_junit).getroot().iter("testcase")
        if "LIST-6::body" in c.get("name", "")
    )
    node = case.find("skipped")
    assert node is not None and node.get("type") == "pytest.xfail"
    assert_valid_junit(waived_junit)


def test_an_expired_waiver_fails_the_pytest_route(broken: Any, tmp_path: Path) -> None:
    waivers = tmp_path / "w.yaml"
    waivers.write_text(
        "waivers:\n  - requirement: HTTP-2\n    reason: old deviation\n    expires: 2020-01-31\n"
    )
    junit = tmp_path / "p.xml"
    proc = _pytest(
        broken.frontend_url, "--rl-requirement", "HTTP-2", "--rl-waivers", str(waivers), junit=junit
    )
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "waiver of HTTP-2 expired on 2020-01-31" in proc.stdout
    (failure,) = assert_valid_junit(junit).iter("failure")  # dashboards see why it failed
    assert "waiver of HTTP-2 expired on 2020-01-31" in (failure.get("message") or "")


def test_a_warning_is_recorded_in_pytests_junit(tmp_path: Path) -> None:
    from tests._client_support import ScriptedServer, body, ok, worker

    # Every poll lists another worker: HTTP-6 (SHOULD, stable polls) warns, deterministically.
    with ScriptedServer() as server:
        server.script("GET", "/v1/rl/workers", *[ok(body(worker("a", n))) for n in range(1, 40)])
        junit = tmp_path / "p.xml"
        proc = _pytest(server.url, "--rl-requirement", "HTTP-6", junit=junit)
    assert proc.returncode == 0, proc.stdout[-2000:]
    (case,) = assert_valid_junit(junit).iter("testcase")
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["conformance.status"] == "warn", props
    assert props["warning"].startswith("SHOULD requirement HTTP-6 not met:")
