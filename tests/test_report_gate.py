"""``report diff``'s gate closes on anything B cannot vouch for and on every cause of a B that is
not ok (issue 39), and hostile or self-contradicting reports are usage errors, never tracebacks
(issue 22, items 13 and 21)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _report_support import report_of

from prime_rl_dynamo.cli import main
from prime_rl_dynamo.exitcodes import ExitCode

A = report_of(("LIST-1::body", "pass", ""), ("LIST-2::body", "pass", ""))


def _run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], before: Any, after: Any, *flags: str
) -> tuple[int, str, str]:
    paths = []
    for name, data in (("A.json", before), ("B.json", after)):
        path = tmp_path / name
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data if isinstance(data, str) else json.dumps(data), "utf-8")
        paths.append(str(path))
    code = main(["report", "diff", *paths, *flags])
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


def _expired(requirement: str) -> dict[str, Any]:
    """A waiver record of the JSON report: ``requirement``'s waiver, expired on 2020-01-01."""
    return {
        "requirement": requirement,
        "check": None,
        "reason": "old",
        "expires": "2020-01-01",
        "state": "expired",
        "checks": [],
    }


def test_a_b_that_is_not_ok_closes_the_gate_naming_each_cause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Every result passes as in A; B's waiver of a requirement it never checked has expired.
    after = report_of(
        ("LIST-1::body", "pass", ""), ("LIST-2::body", "pass", ""), waivers=[_expired("ENGINE-2")]
    )
    assert (after["ok"], after["failed_requirements"]) == (False, ["ENGINE-2"])
    code, out, _ = _run(tmp_path, capsys, A, after)
    assert code == ExitCode.FAIL
    assert out.splitlines()[-3:] == [
        "B is not ok (not-conformant); A was ok:",
        "  ENGINE-2: waiver of ENGINE-2 expired on 2020-01-01: the run fails until the waiver "
        "is renewed or removed",
        "GATE: closed: B is not ok: ENGINE-2 (exit 1)",
    ]
    code, out, _ = _run(tmp_path, capsys, A, after, "--json")
    data = json.loads(out)
    assert (code, data["exit_code"], data["gate"]) == (1, 1, "closed: B is not ok: ENGINE-2")
    assert [c["cause"] for c in data["causes"]] == ["ENGINE-2"] and data["still_not_ok"] == []
    assert data["verdicts"] == {"before": "conformant", "after": "not-conformant"}


def test_one_reason_is_named_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # An interrupted B: the cause "interrupted" says it; "cannot vouch" does not repeat it.
    after = report_of(("LIST-1::body", "pass", ""), incomplete=True, not_run=["LIST-2::body"])
    code, out, _ = _run(tmp_path, capsys, A, after)
    assert code == ExitCode.FAIL
    assert "  interrupted: 1 check not run" in out.splitlines()
    assert "cannot vouch" not in out
    assert out.splitlines()[-1] == "GATE: closed: B is not ok: interrupted (exit 1)"
    # Interrupted twice: not a new cause, yet B still cannot vouch for its target.
    code, out, _ = _run(tmp_path, capsys, after, after)
    assert code == ExitCode.FAIL
    assert "B cannot vouch for its target: the run was interrupted (1 check(s) not run)" in out
    assert out.splitlines()[-1] == "GATE: closed: B cannot vouch for its target (exit 1)"


def test_when_both_are_not_ok_a_new_cause_closes_the_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    failing = report_of(("LIST-1::body", "fail", "bad"), ("LIST-2::body", "pass", ""))
    code, out, _ = _run(tmp_path, capsys, failing, failing)
    assert code == ExitCode.OK, out
    assert out.splitlines()[-1] == (
        "GATE: nothing newly fails (B is still not ok, as A was: LIST-1) (exit 0)"
    )
    also_expired = report_of(
        ("LIST-1::body", "fail", "bad"),
        ("LIST-2::body", "pass", ""),
        waivers=[_expired("ENGINE-2")],
    )
    code, out, _ = _run(tmp_path, capsys, failing, also_expired, "--json")
    data = json.loads(out)
    assert code == ExitCode.FAIL and data["newly_failing"] == []
    assert data["gate"] == "closed: B is not ok for a new cause: ENGINE-2"
    assert [c["cause"] for c in data["causes"]] == ["ENGINE-2"]
    assert [c["cause"] for c in data["still_not_ok"]] == ["LIST-1"]


def _contradicting(member: str, value: Any) -> dict[str, Any]:
    return report_of(("LIST-1::body", "pass", ""), ("LIST-2::body", "pass", ""), **{member: value})


@pytest.mark.parametrize(
    ("after", "where"),
    [
        (_contradicting("ok", False), "/ok"),
        (_contradicting("verdict", "not-conformant"), "/verdict"),
        (_contradicting("exit_code", 1), "/exit_code"),
        (_contradicting("failed_requirements", ["LIST-1"]), "/failed_requirements"),
        ({**A, "waivers": [_expired("ENGINE-2")]}, "/verdict"),
        ({**report_of(("LIST-1::body", "fail", "x")), "ok": True}, "/ok"),
        ({**report_of(("LIST-1::body", "fail", "x")), "failed_requirements": []}, "/failed_req"),
    ],
    ids=["ok", "verdict", "exit-code", "causes", "expired", "fail-ok", "fail-no-cause"],
)
def test_a_report_that_contradicts_itself_is_a_usage_error(
    after: dict[str, Any], where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The gate reads B's verdict and causes: a report that belies its own results is refused.
    code, out, err = _run(tmp_path, capsys, A, after)
    assert code == ExitCode.USAGE, out + err
    assert "B.json: at " + where in err and "contradicts itself" in err
