"""Verdicts and exit codes of ``prime-rl-dynamo conformance``: 0 conformant, 1 not conformant,
2 usage error, 3 inconclusive, 4 nothing checked; requirement IDs, --skip-requirement, waivers
and --target, each through the real CLI against the reference frontend on 127.0.0.1."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from prime_rl_dynamo.cli import main
from prime_rl_dynamo.suite.reference import start_reference_fleet

pytestmark = pytest.mark.integration

FAST = ["-q", "--profile", "frontend", "--load", "2x2", "--seed", "1"]
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def fleet() -> Iterator[Any]:
    with start_reference_fleet() as running:
        yield running


@pytest.fixture(scope="module")
def broken() -> Iterator[Any]:
    with start_reference_fleet(faults=["break=LIST-6"]) as running:
        yield running


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["conformance", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_exit_0_conformant(fleet: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, fleet.frontend_url, *FAST, "--requirement", "HTTP-3")
    assert code == 0
    assert "CONFORMANT: 1 pass" in out


def test_exit_1_a_must_failed(broken: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, broken.frontend_url, *FAST)
    assert code == 1
    assert "NOT CONFORMANT" in out and "failed requirements: LIST-6" in out


def test_exit_1_a_should_failed_under_strict(capsys: pytest.CaptureFixture[str]) -> None:
    from tests._client_support import ScriptedServer, body, ok, worker

    # The first GET lists one engine, every later poll two: HTTP-6 (SHOULD) never holds.
    one, two = body(worker("a", 1)), body(worker("a", 1), worker("b", 2))
    with ScriptedServer() as changing:
        changing.script("GET", "/v1/rl/workers", ok(one), ok(two))
        args = [changing.url, *FAST, "--requirement", "HTTP-6"]
        relaxed, _, _ = _run(capsys, *args)
        changing.script("GET", "/v1/rl/workers", ok(one), ok(two))
        strict, out, _ = _run(capsys, *args, "--strict")
    assert (relaxed, strict) == (0, 1)
    assert "failed requirements: HTTP-6" in out


@pytest.mark.parametrize(
    ("requirement", "says"),
    [("LIST-66", "did you mean LIST-6"), ("lits-6", "did you mean LIST-6"), ("NOPE", "--list")],
)
def test_exit_2_unknown_requirement_with_a_suggestion(
    fleet: Any, requirement: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for flag in ("--requirement", "--skip-requirement"):
        code, out, err = _run(capsys, fleet.frontend_url, *FAST, flag, requirement)
        assert code == 2
        assert says in err and flag in err
        assert "Traceback" not in out + err and err.count("\n") == 1


def test_requirement_ids_match_case_insensitively(
    fleet: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    report = tmp_path / "r.json"
    code, _, _ = _run(
        capsys, fleet.frontend_url, *FAST, "--requirement", "http-3", "--json-report", str(report)
    )
    assert code == 0
    assert [r["requirement"] for r in json.loads(report.read_text())["results"]] == ["HTTP-3"]


def test_exit_2_target_with_a_url(fleet: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, fleet.frontend_url, *FAST, "--target", "reference")
    assert code == 2 and "--target reference chooses an embedded target" in err


def test_exit_3_nothing_listening_is_one_line_and_a_short_summary(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    report = tmp_path / "r.json"
    code, out, _ = _run(capsys, url, "-q", "--json-report", str(report))
    assert code == 3
    lines = out.splitlines()
    assert lines[0] == f"nothing listening at {url}: connection refused"
    assert len(lines) <= 8, out  # not one block per check
    assert "INCONCLUSIVE" in out and "NOT CONFORMANT" not in out
    data = json.loads(report.read_text())
    assert data["verdict"] == "inconclusive" and data["exit_code"] == 3
    assert data["inconclusive"] == lines[0]
    assert {r["status"] for r in data["results"]} == {"error"}


def _harness_raises(monkeypatch: pytest.MonkeyPatch, error: Exception) -> None:
    """Standing up real Dynamo raises ``error`` (as a broken etcd would, say)."""
    import prime_rl_dynamo.suite.harness as harness

    def start_dynamo_fleet(*args: Any, **kwargs: Any) -> Any:
        raise error

    monkeypatch.setattr(harness, "start_dynamo_fleet", start_dynamo_fleet)


def test_exit_3_the_harness_could_not_stand_up_the_target(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _harness_raises(monkeypatch, RuntimeError("etcd did not start within 30 s"))
    code, out, _ = _run(capsys, "-q", "--target", "dynamo", "--profile", "frontend")
    assert code == 3
    first = out.splitlines()[0]
    assert first == "the target could not be stood up: RuntimeError: etcd did not start within 30 s"
    assert "INCONCLUSIVE" in out


def test_exit_4_nothing_checked_says_why(
    fleet: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # RANK-6 is a client-profile requirement; with a URL the profiles are frontend and workers.
    junit = tmp_path / "j.xml"
    code, out, _ = _run(
        capsys, fleet.frontend_url, "-q", "--requirement", "RANK-6", "--junit-xml", str(junit)
    )
    from _report_support import assert_valid_junit

    root = assert_valid_junit(junit)
    assert "nothing was checked: no check was selected: RANK-6" in (
        root.findtext(".//system-err") or ""
    )
    assert code == 4
    assert "NOTHING CHECKED" in out and "CONFORMANT:" not in out.replace("NOT CONFORMANT", "")
    assert "RANK-6 is checked only by the client profile" in out
    assert "--profile client" in out


def test_exit_4_when_every_selected_check_is_skipped(
    fleet: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # HTTP-5 judges only a 500 answer: the reference answers 200, so it is skipped.
    report = tmp_path / "r.json"
    args = [fleet.frontend_url, *FAST, "--requirement", "HTTP-5", "--json-report", str(report)]
    code, _, _ = _run(capsys, *args)
    assert code == 4
    data = json.loads(report.read_text())
    assert data["verdict"] == "nothing-checked" and data["ok"] is False
    assert "every selected check was skipped" in data["nothing_checked"]


def test_skip_requirement_reports_the_skip_and_runs_the_rest(
    broken: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    report = tmp_path / "r.json"
    code, _, _ = _run(
        capsys,
        broken.frontend_url,
        *FAST,
        "--skip-requirement",
        "list-6",
        "--json-report",
        str(report),
    )
    assert code == 0
    results = json.loads(report.read_text())["results"]
    skipped = [r for r in results if r["requirement"] == "LIST-6"]
    assert skipped and all(
        r["status"] == "skip" and "--skip-requirement" in r["message"] for r in skipped
    )
    assert sum(r["status"] == "pass" for r in results) > 10


def _waivers(tmp_path: Path, expires: str) -> Path:
    path = tmp_path / "waivers.yaml"
    path.write_text(
        "waivers:\n"
        "  - requirement: LIST-6\n"
        "    reason: the test fleet shares an admin URL on purpose\n"
        f"    expires: {expires}\n"
        "  - requirement: HTTP-2\n"
        "    reason: never fails here\n"
    )
    return path


def test_a_waived_failure_is_reported_as_waived(
    broken: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    report = tmp_path / "r.json"
    waivers = _waivers(tmp_path, "2999-12-31")
    code, out, _ = _run(
        capsys, broken.frontend_url, *FAST, "--waivers", str(waivers), "--json-report", str(report)
    )
    assert code == 0
    assert "waived: LIST-6" in out and "waiver of HTTP-2: unused" in out
    data = json.loads(report.read_text())
    (waived,) = [r for r in data["results"] if r["requirement"] == "LIST-6"]
    assert waived["status"] == "waived"
    assert "the test fleet shares an admin URL on purpose" in waived["message"]
    assert "LIST-6" in waived["message"] and "admin_base_url" in waived["message"]
    states = {w["requirement"]: w["state"] for w in data["waivers"]}
    assert states == {"LIST-6": "applied", "HTTP-2": "unused"}


def test_an_expired_waiver_fails(
    broken: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = _run(
        capsys, broken.frontend_url, *FAST, "--waivers", str(_waivers(tmp_path, "2020-01-31"))
    )
    assert code == 1
    assert "expired on 2020-01-31" in out and "failed requirements: LIST-6" in out


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("waivers:\n  - requirement: LIST-66\n    reason: x\n", "did you mean LIST-6"),
        ("waivers:\n  - requirement: LIST-6\n", "needs a reason"),
        ("waivers:\n  - requirement: LIST-6\n    reason: x\n    expires: soon\n", "YYYY-MM-DD"),
        ("waivers: [\n", "not YAML"),
    ],
)
def test_a_bad_waiver_file_is_a_usage_error(
    fleet: Any, text: str, says: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(text)
    code, _, err = _run(capsys, fleet.frontend_url, *FAST, "--waivers", str(path))
    assert code == 2 and says in err and str(path) in err and "Traceback" not in err


def test_the_shipped_dynamo_waiver_file_loads() -> None:
    from conformance.waivers import load_waivers

    waivers = load_waivers(ROOT / "conformance" / "deviations" / "dynamo-1.6.1.yaml")
    assert {w.requirement for w in waivers} == {"ENGINE-2", "WORKER-7"}
    assert all(w.reason and w.expires for w in waivers)
    assert load_waivers("dynamo-1.6.1") == waivers  # the shipped file, by name


def test_target_reference_never_stands_up_dynamo_for_roundtrip(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _harness_raises(
        monkeypatch, AssertionError("real Dynamo was stood up under --target reference")
    )
    code, out, _ = _run(capsys, "-q", "--target", "reference", "--profile", "roundtrip")
    assert code == 4  # every roundtrip check skipped: nothing was checked
    assert "roundtrip: not run: --target reference" in out
    assert "--target reference: the roundtrip profile checks real Dynamo" in out


def test_the_header_names_each_profiles_target(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys,
        "-q",
        "--target",
        "reference",
        "--profile",
        "frontend",
        "--profile",
        "client",
        "--requirement",
        "HTTP-3",
        "--requirement",
        "RANK-6",
        "--topologies",
        "1",
        "--seed",
        "1",
    )
    assert code == 0, out
    assert "frontend: embedded reference frontend" in out
    assert (
        "client: client conformance.examples.project_client:run (default), driving reference" in out
    )


def test_an_expired_waiver_that_matches_nothing_still_fails(
    fleet: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The deviation it names is gone (HTTP-2 passes), yet the waiver's date has passed: a stale
    # waiver file fails the run until someone removes or renews the entry.
    path = tmp_path / "w.yaml"
    path.write_text(
        "waivers:\n  - requirement: HTTP-2\n    reason: old deviation\n    expires: 2020-01-31\n"
    )
    junit, report = tmp_path / "r.xml", tmp_path / "r.json"
    code, out, _ = _run(
        capsys,
        fleet.frontend_url,
        *FAST,
        "--requirement",
        "HTTP-2",
        "--waivers",
        str(path),
        "--junit-xml",
        str(junit),
        "--json-report",
        str(report),
    )
    assert code == 1, out
    assert "NOT CONFORMANT" in out
    assert "waiver of HTTP-2: expired on 2020-01-31" in out
    data = json.loads(report.read_text())
    assert data["verdict"] == "not-conformant" and data["exit_code"] == 1
    assert data["waivers"][0]["state"] == "expired"
    from _report_support import assert_valid_junit, assert_valid_report

    assert_valid_report(report)
    root = assert_valid_junit(junit)
    (failure,) = root.iter("failure")
    assert failure.get("type") == "HTTP-2"
    assert "waiver of HTTP-2 expired on 2020-01-31" in (failure.get("message") or "")


def test_the_documented_unreachable_output_is_what_the_cli_prints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # docs/conformance.md quotes this run's output: it must be the CLI's, figures included.
    import re

    text = (ROOT / "docs" / "conformance.md").read_text(encoding="utf-8")
    (block,) = re.findall(
        r"```\n(\$ prime-rl-dynamo conformance http://127.0.0.1:8999 -q\n.*?)```", text, flags=re.S
    )
    command, *expected = block.strip().splitlines()
    argv = command.removeprefix("$ prime-rl-dynamo conformance ").split()
    port = str(_free_port())
    code, out, _ = _run(capsys, *[a.replace("8999", port) for a in argv], "--seed", "123")
    assert code == 3
    assert out.strip().splitlines() == [line.replace("8999", port) for line in expected]
