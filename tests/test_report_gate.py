"""``report diff``'s gate closes on anything B cannot vouch for, and hostile reports are usage
errors, never tracebacks (issue 22, items 13 and 21)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prime_rl_dynamo.cli import main
from prime_rl_dynamo.exitcodes import ExitCode


def report_of(*results: tuple[str, str, str], **fields: Any) -> dict[str, Any]:
    """A schema-valid JSON report as ``--json-report`` writes it, with these (check, status,
    message) results; ``fields`` override members of the report afterwards."""
    from conformance.registry import all_checks
    from conformance.reporting import reproduce_command
    from conformance.results import Report, Result, Status

    checks = {c.id: c for c in all_checks()}
    report = Report(
        target={"kind": "url", "url": "http://127.0.0.1:1"},
        options={},
        seed=1,
        versions={"python": "3"},
        started=1_800_000_000.0,
        finished=1_800_000_001.0,
    )
    for check_id, status, message in results:
        c = checks[check_id]
        report.extend(
            [Result(c.id, c.requirement, c.level, c.profile, c.title, Status(status), message)]
        )
    data = report.to_dict()
    data["reproduce"] = reproduce_command(report)
    data.update(fields)
    return data


A = report_of(("LIST-1::body", "pass", ""), ("LIST-2::body", "pass", ""))


def _run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], before: Any, after: Any
) -> tuple[int, str, str]:
    paths = []
    for name, data in (("A.json", before), ("B.json", after)):
        path = tmp_path / name
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data if isinstance(data, str) else json.dumps(data), "utf-8")
        paths.append(str(path))
    code = main(["report", "diff", *paths])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_a_clean_b_passes_the_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(tmp_path, capsys, A, A)
    assert code == ExitCode.OK, out


def _duplicated() -> dict[str, Any]:
    data = report_of(("LIST-1::body", "fail", "bad"), ("LIST-2::body", "pass", ""))
    data["results"].append({**data["results"][0], "status": "pass"})
    return data


def _status(value: Any) -> dict[str, Any]:
    data = report_of(("LIST-1::body", "pass", ""), ("LIST-2::body", "pass", ""))
    data["results"][0]["status"] = value
    return data


@pytest.mark.parametrize(
    "after",
    [
        report_of(),
        report_of(("LIST-1::body", "pass", ""), incomplete=True, not_run=["LIST-2::body"]),
        report_of(("LIST-1::body", "skip", "x"), ("LIST-2::body", "skip", "x")),
        _duplicated(),
        _status(None),
        _status("FAIL"),
        _status("failed"),
    ],
    ids=["empty", "incomplete", "all-skipped", "duplicate-id", "null", "FAIL", "failed"],
)
def test_a_b_that_cannot_vouch_for_itself_closes_the_gate(
    after: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(tmp_path, capsys, A, after)
    assert code != ExitCode.OK, out + err


@pytest.mark.parametrize(
    "after",
    [
        {**A, "results": [{k: v for k, v in A["results"][0].items() if k != "status"}]},
        "[" * 100_000 + "]" * 100_000,
        json.dumps(report_of(("LIST-1::body", "fail", "x"))).replace(
            '"message": "x"', '"message": "\\ud800"'
        ),
        b"\xff\xfe",
        "",
    ],
    ids=["no-status", "deep", "surrogate", "not-utf8", "empty-file"],
)
def test_a_hostile_report_is_a_usage_error_with_a_pointer(
    after: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(tmp_path, capsys, A, after)
    if code != ExitCode.USAGE:  # the surrogate one is a valid report: it is judged, not refused
        assert code == ExitCode.FAIL and "\\ud800" in out
        return
    assert "B.json" in err
    assert "expected" in err
