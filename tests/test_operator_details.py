"""The small things an operator meets (issue 23, item 11): each as the command prints it."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import conformance
from conformance.html_report import write_html
from conformance.reporting import write_junit
from conformance.results import Report, Result, Status
from conformance.waivers import Waiver, apply_waivers
from prime_rl_dynamo.cli import main
from prime_rl_dynamo.suite.reference import start_reference_fleet


@pytest.fixture(scope="module")
def fleet() -> Iterator[Any]:
    with start_reference_fleet() as running:
        yield running


def _help(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    return capsys.readouterr().out


@pytest.mark.integration
def test_a_conformant_run_prints_its_reproduce_line(
    fleet: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "conformance",
            fleet.frontend_url,
            "-q",
            "--profile",
            "frontend",
            "--requirement",
            "HTTP-2",
            "--seed",
            "7",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "CONFORMANT" in out
    # last, after the verdict (wrapped with backslashes at the terminal's width)
    tail = out[out.index("CONFORMANT: ") :]
    assert "\n  reproduce: prime-rl-dynamo conformance" in tail
    assert tail.rstrip().endswith("--seed 7")


def test_help_names_url_and_json_waivers(capsys: pytest.CaptureFixture[str]) -> None:
    out = _help(capsys, "conformance")
    assert "[URL]" in out and "\n  URL " in out and "\n  url " not in out
    assert "(YAML or JSON)" in " ".join(out.split())


def test_cacert_and_insecure_exclude_each_other_in_conformance_too(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = main(
        ["conformance", "https://127.0.0.1:1", "--cacert", str(tmp_path / "ca.pem"), "--insecure"]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "--cacert and --insecure exclude each other" in err


def test_a_wrong_waiver_name_lists_the_shipped_files(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["conformance", "http://127.0.0.1:1", "--waivers", "dynamo-1.6"])
    err = capsys.readouterr().err
    assert code == 2
    assert "a bare name picks a shipped file: " in err and "(conformance/deviations/)" in err
    assert "dynamo-1.6.1" in err.split("shipped file: ", 1)[1]


def test_schema_path_lists_every_file_a_name_could_mean(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["schema", "path", "requirements"]) == 2
    err = capsys.readouterr().err
    for name in ("requirements.schema.json", "requirements.v1.json", "requirements.v2.json"):
        assert name in err


def _report() -> Report:
    found = Result("LIST-6::body", "LIST-6", "MUST", "frontend", "t", Status.FAIL, "dup URL")
    results, waivers = apply_waivers([found], [Waiver(requirement="LIST-6", reason="known")])
    options = {"profiles": (), "url": None, "strict": False, "headers": [("X-Token", "<redacted>")]}
    return Report(target={}, options=options, seed=1, versions={}, results=results, waivers=waivers)


def test_the_waived_junit_message_says_what_was_found(tmp_path: Path) -> None:
    root = ET.parse(write_junit(_report(), tmp_path / "r.xml")).getroot()
    (skipped,) = root.iter("skipped")
    message = skipped.get("message") or ""
    assert skipped.get("type") == "waived"
    assert message.startswith("waived (known)") and message.endswith("found fail: dup URL")


def test_the_html_options_are_no_python_reprs(tmp_path: Path) -> None:
    text = write_html(_report(), tmp_path / "r.html").read_text()
    options = text.split("<h2>Options</h2>", 1)[1].split("</table>", 1)[0]
    assert "()" not in options and "None" not in options and "False" not in options
    assert "<code>X-Token: &lt;redacted&gt;</code>" in options


def test_the_library_refuses_cacert_with_insecure() -> None:
    with pytest.raises(ValueError, match="exclude each other"):
        conformance.Options(
            url="https://127.0.0.1:1", cacert="ca.pem", insecure=True
        ).check_usable()
