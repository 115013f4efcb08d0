"""Hostile files and paths (issue 22, items 10, 14, 22, 24): waiver files, report paths. Each is a
usage error (exit 2) naming the file, the entry and what was expected, before anything runs."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from conformance.results import Report, Result, Status, Verdict
from conformance.waivers import WaiverError, apply_waivers, load_waivers
from prime_rl_dynamo.cli import main
from prime_rl_dynamo.exitcodes import ExitCode

UNREACHABLE = "http://127.0.0.1:9"


def _waivers(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "w.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


# --- item 10 and 24: waiver files that crashed or said too little ------------------------------


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "waivers:\n  - requirement: LIST-6\n    reason: r\n    expires: 2030-01-01 10:00:00\n",
            "YYYY-MM-DD",
        ),
        (
            '{"waivers": [{"requirement": "LIST-6", "reason": "bad \\ud800"}]}',
            "surrogate",
        ),
        (
            "a: &a [x, x, x, x, x, x, x, x, x]\n"
            + "".join(
                f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n"
                for p, c in zip("abcdefgh", "bcdefghi", strict=True)
            )
            + "waivers: []\n",
            "alias",
        ),
        (
            "waivers:\n  - requirement: LIST-6\n    reason: r\n    expires: 2027-02-30\n",
            "waivers[0]",
        ),
        (
            "waivers:\n  - requirement: LIST-6\n    check: LIST-6::nope\n    reason: r\n",
            "LIST-6::body",
        ),
    ],
    ids=["datetime", "surrogate-reason", "alias-bomb", "no-such-day", "unknown-check"],
)
def test_a_bad_waiver_file_is_refused_naming_file_and_entry(
    text: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _waivers(tmp_path, text)
    started = time.perf_counter()
    with pytest.raises(WaiverError) as info:
        load_waivers(path)
    assert time.perf_counter() - started < 5  # the alias bomb is refused, not expanded
    assert str(path) in str(info.value)
    assert said in str(info.value)
    code = main(["conformance", UNREACHABLE, "--waivers", str(path), "-q"])
    _, err = capsys.readouterr()
    assert code == ExitCode.USAGE
    assert "Traceback" not in err


def test_json_indented_with_tabs_is_a_waiver_file(tmp_path: Path) -> None:
    text = '{\n\t"waivers": [\n\t\t{"requirement": "LIST-6", "reason": "known"}\n\t]\n}\n'
    (waiver,) = load_waivers(_waivers(tmp_path, text))
    assert waiver.requirement == "LIST-6"


# --- item 22: waivers that vouch for nothing, or miss what they name ---------------------------


def _result(check: str, status: Status) -> Result:
    requirement = check.split("::")[0]
    return Result(check, requirement, "MUST", "frontend", "t", status, "m")


def test_a_check_id_is_matched_as_it_is_validated_case_insensitively(tmp_path: Path) -> None:
    path = _waivers(
        tmp_path, "waivers:\n  - requirement: list-6\n    check: list-6::BODY\n    reason: r\n"
    )
    (waiver,) = load_waivers(path)
    results, records = apply_waivers([_result("LIST-6::body", Status.FAIL)], [waiver])
    assert results[0].status is Status.WAIVED
    assert records[0]["state"] == "applied"


def test_a_run_whose_only_results_are_waived_is_not_conformant_by_waiver(tmp_path: Path) -> None:
    (waiver,) = load_waivers(
        _waivers(tmp_path, "waivers:\n  - requirement: LIST-6\n    reason: r\n")
    )
    results, records = apply_waivers([_result("LIST-6::body", Status.FAIL)], [waiver])
    report = Report(target={}, options={}, seed=1, versions={}, results=results, waivers=records)
    assert report.verdict is Verdict.NOTHING_CHECKED
    assert report.exit_code == ExitCode.NOTHING_CHECKED


# --- item 14: report paths that cannot be written ----------------------------------------------


@pytest.mark.parametrize("flag", ["--json-report", "--junit-xml", "--html-report"])
@pytest.mark.parametrize("where", ["directory", "under-a-file", "dev-full"])
def test_an_unwritable_report_path_is_a_usage_error_before_the_run(
    flag: str, where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    path = {"directory": str(tmp_path), "under-a-file": str(blocker / "r"), "dev-full": "/dev/full"}
    if where == "dev-full" and not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    started = time.perf_counter()
    code = main(["conformance", UNREACHABLE, "-q", flag, path[where]])
    out, err = capsys.readouterr()
    assert code == ExitCode.USAGE
    assert "Traceback" not in out + err
    assert flag in err and "expected a writable file" in err
    assert "Conformance of" not in out  # refused before the run
    assert time.perf_counter() - started < 30


def test_a_target_version_that_is_not_utf8_still_writes_every_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    html, data = tmp_path / "r.html", tmp_path / "r.json"
    version = b"v\xff".decode("utf-8", "surrogateescape")  # what argv gives for $'v\xff'
    code = main(
        [
            "conformance",
            UNREACHABLE,
            "-q",
            "--target-version",
            version,
            "--html-report",
            str(html),
            "--json-report",
            str(data),
        ]
    )
    capsys.readouterr()
    assert code == ExitCode.INCONCLUSIVE
    assert "\\udcff" in html.read_text("utf-8")
    assert json.loads(data.read_text("utf-8"))["target"]["target_version"] == "v\\udcff"


# --- item 23: smaller ones ----------------------------------------------------------------------


def test_a_negative_seed_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["conformance", UNREACHABLE, "--seed", "-5", "-q"])
    err = capsys.readouterr().err
    assert code == ExitCode.USAGE
    assert "--seed" in err and "-5" in err


@pytest.mark.parametrize("name", ["..", "openapi/../..", "../README.md", "vectors/../../.."])
def test_schema_path_never_points_outside_the_contract(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["schema", "path", name])
    out, err = capsys.readouterr()
    assert code == ExitCode.USAGE
    assert out == ""
    assert "outside the contract" in err


@pytest.mark.parametrize(("where", "says"), [("dir", "found a directory"), ("/dev/null", "found")])
def test_a_cacert_that_is_no_bundle_says_what_it_is(
    where: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path) if where == "dir" else where
    code = main(["conformance", "https://127.0.0.1:9", "--cacert", path, "-q"])
    err = capsys.readouterr().err
    assert code == ExitCode.USAGE
    assert "no such file" not in err
    assert says in err and "expected a CA bundle file" in err
