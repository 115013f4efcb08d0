"""The suite's target URL: the forms the client accepts, no user info and no credential echoed
anywhere."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from prime_rl_dynamo.cli import main
from prime_rl_dynamo.suite.reference import start_reference_fleet

pytestmark = pytest.mark.integration

FEW = ["-q", "--profile", "frontend", "--load", "1x1", "--seed", "1"]


@pytest.fixture(scope="module")
def fleet() -> Iterator[Any]:
    with start_reference_fleet() as running:
        yield running


@pytest.mark.parametrize("suffix", ["/v1", "/v1/", "/v1/rl/workers", "/"])
def test_target_url_is_normalised_like_the_client(
    fleet: Any, suffix: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # BASE/v1 and BASE/v1/rl/workers are the same target as BASE.
    report = tmp_path / "r.json"
    code = main(
        [
            "conformance",
            fleet.frontend_url + suffix,
            *FEW,
            "--requirement",
            "HTTP-1",
            "--requirement",
            "HTTP-3",
            "--json-report",
            str(report),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    data = json.loads(report.read_text())
    assert {r["status"] for r in data["results"]} == {"pass"}
    assert data["target"]["url"] == fleet.frontend_url.rstrip("/")


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("ftp://127.0.0.1:8001", "http:// or https://"),
        ("not a url", "http:// or https://"),
        ("http://127.0.0.1:8001?x=1", "query"),
    ],
)
def test_unusable_target_url_is_a_usage_error(
    url: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["conformance", url, *FEW])
    captured = capsys.readouterr()
    assert code == 2, captured.out
    assert says in captured.err
    assert "Traceback" not in captured.err + captured.out
    assert captured.err.count("\n") == 1  # one line


def test_user_info_in_the_target_url_is_refused_without_echoing_it(
    fleet: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # CRED-1, and the password never reaches any output.
    secret = "PASSWORD-s3cr3t"
    url = fleet.frontend_url.replace("http://", f"http://admin:{secret}@")
    report, junit = tmp_path / "r.json", tmp_path / "r.xml"
    code = main(["conformance", url, *FEW, "--json-report", str(report), "--junit-xml", str(junit)])
    captured = capsys.readouterr()
    assert code == 2
    assert "CRED-1" in captured.err
    assert secret not in captured.out + captured.err
    for path in (report, junit):
        assert not path.exists() or secret not in path.read_text()


def test_credentials_in_listed_urls_are_redacted_in_every_report(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # A hostile listing carrying user info in its URLs: messages, JSON and JUnit show it redacted.
    from tests._client_support import ScriptedServer, body, ok, worker

    secret = "hunter2-LEAK"
    w = worker("a", 1)
    w["admin_base_url"] = f"http://root:{secret}@127.0.0.1:9/"
    w["system_url"] = f"http://root:{secret}@127.0.0.1:9"
    with ScriptedServer() as server:
        server.script("GET", "/v1/rl/workers", ok(body(w)))
        report, junit = tmp_path / "r.json", tmp_path / "r.xml"
        code = main(
            [
                "conformance",
                server.url,
                "-q",
                "--load",
                "1x1",
                "--json-report",
                str(report),
                "--junit-xml",
                str(junit),
            ]
        )
    captured = capsys.readouterr()
    assert code == 1  # the listing breaks requirements: the target's fault
    everything = captured.out + captured.err + report.read_text() + junit.read_text()
    assert secret not in everything
    assert "root:***@" in everything or "***@127.0.0.1:9" in everything
