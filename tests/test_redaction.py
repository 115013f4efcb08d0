"""No credential reaches a message, a report, a terminal or another origin (issue 22, items 1-6, 11
and the -H items of 23): hostile targets on 127.0.0.1 echo what they were sent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prime_rl_dynamo.cli import main
from prime_rl_dynamo.exitcodes import ExitCode
from tests._client_support import ScriptedServer, Seen, body, ok, worker

pytestmark = pytest.mark.integration  # hostile servers on 127.0.0.1

TOKEN = "S3CRETt0kenXYZ"
PATH = "/v1/rl/workers"


def _outputs(tmp_path: Path) -> tuple[list[str], dict[str, Path]]:
    files = {
        "json": tmp_path / "r.json",
        "junit": tmp_path / "r.xml",
        "html": tmp_path / "r.html",
    }
    flags = [
        "--json-report",
        str(files["json"]),
        "--junit-xml",
        str(files["junit"]),
        "--html-report",
        str(files["html"]),
    ]
    return flags, files


def _everything(capsys: pytest.CaptureFixture[str], files: dict[str, Path]) -> str:
    out, err = capsys.readouterr()
    return out + err + "".join(p.read_text("utf-8") for p in files.values() if p.exists())


# --- item 1: no header crosses an origin --------------------------------------------------------


def test_schemathesis_follows_no_redirect_to_another_origin_and_fails_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedServer() as elsewhere, ScriptedServer() as target:
        listing = ok(body(worker("backend", 1)))
        elsewhere.script("GET", PATH, listing)

        def redirect_requests(seen: Seen) -> tuple[int, dict[str, str], bytes]:
            # The suite's own client gets the listing; schemathesis (python-requests) a 302.
            if "python-requests" in seen.headers.get("user-agent", ""):
                return 302, {"location": elsewhere.url + PATH}, b""
            return listing

        target.route("GET", PATH, redirect_requests)
        flags, files = _outputs(tmp_path)
        code = main(
            [
                "conformance",
                target.url,
                "--check",
                "HTTP-1::schemathesis",
                "-H",
                f"X-Api-Key: {TOKEN}",
                "-q",
                *flags,
            ]
        )
        assert [r.headers.get("x-api-key") for r in elsewhere.requests] == []
        assert code == ExitCode.FAIL
        report = json.loads(files["json"].read_text())
        (result,) = report["results"]
        assert result["status"] == "fail"
        assert "another origin" in result["message"]
        assert TOKEN not in _everything(capsys, files)


# --- item 2: one scrubber, bare tokens included -------------------------------------------------


def test_a_bare_bearer_token_echoed_by_the_target_is_scrubbed_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedServer() as target:
        target.script(
            "GET",
            PATH,
            (401, {"content-type": "text/plain", "server": f"gw/{TOKEN}"}, f"bad {TOKEN}".encode()),
        )
        flags, files = _outputs(tmp_path)
        main(
            [
                "conformance",
                target.url,
                "--check",
                "HTTP-1::status-and-content-type",
                "-H",
                f"Authorization: Bearer {TOKEN}",
                "-q",
                *flags,
            ]
        )
        text = _everything(capsys, files)
        assert "<redacted>" in text
        assert TOKEN not in text


# --- item 3, 11, 23: headers HTTP cannot carry are refused at parse time, never echoed ----------


@pytest.mark.parametrize(
    "header",
    [
        f"X-Api-Key: {TOKEN}\x0bx",
        f"X-Api-Key: {TOKEN}\x0cx",
        f"X-Api-Key: {TOKEN}\x7fx",
        f"X-Api-Key: caf\u00e9{TOKEN}",
        f"X-Api-Key: {TOKEN}\x85x",
        f"X-Api-Key: {TOKEN}\u2028x",
        f"caf\u00e9: {TOKEN}",
    ],
    ids=["VT", "FF", "DEL", "non-ASCII", "NEL", "LSEP", "non-ASCII-name"],
)
@pytest.mark.parametrize("command", ["conformance", "discover"])
def test_a_header_http_cannot_carry_is_a_usage_error_that_does_not_echo_it(
    header: str, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["http://127.0.0.1:9", "-H", header]
    if command == "discover":
        args += ["--inference-world-size", "1", "--timeout", "1"]
    else:
        args += ["--check", "HTTP-1::status-and-content-type", "-q"]
    code = main([command, *args])
    out, err = capsys.readouterr()
    assert code == ExitCode.USAGE
    assert "Traceback" not in out + err
    assert TOKEN not in out + err
    assert "expected" in err


@pytest.mark.parametrize("command", ["conformance", "discover"])
def test_a_header_given_twice_is_refused_not_silently_dropped(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["http://127.0.0.1:9", "-H", "X-A: one1", "-H", "x-a: two2"]
    if command == "discover":
        args += ["--inference-world-size", "1", "--timeout", "1"]
    code = main([command, *args])
    err = capsys.readouterr().err
    assert code == ExitCode.USAGE
    assert "twice" in err and "one1" not in err and "two2" not in err


# --- item 4: violations and discover's ProtocolError are scrubbed ------------------------------


def _reflecting(seen: Seen) -> tuple[int, dict[str, str], bytes]:
    # A listing that reflects the request's token into a worker's component (its label).
    reflected = seen.headers.get("x-api-key", "none")
    return ok(body(worker(f"c{reflected}", 1, world_size=None)))


def test_a_listing_reflecting_a_header_leaks_nothing_into_violations_or_discover(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedServer() as target:
        target.route("GET", PATH, _reflecting)
        flags, files = _outputs(tmp_path)
        main(
            [
                "conformance",
                target.url,
                "--check",
                "WORKER-3::body",
                "--check",
                "LIST-1::body",
                "-H",
                f"X-Api-Key: {TOKEN}",
                "-q",
                *flags,
            ]
        )
        assert TOKEN not in _everything(capsys, files)
        code = main(
            [
                "discover",
                target.url,
                "--inference-world-size",
                "1",
                "--timeout",
                "2",
                "-q",
                "-H",
                f"X-Api-Key: {TOKEN}",
            ]
        )
        out, err = capsys.readouterr()
        assert code == ExitCode.FAIL
        assert TOKEN not in out + err


# --- item 6: a password with "/" is never echoed -------------------------------------------------


@pytest.mark.parametrize("command", ["conformance", "discover"])
def test_a_password_holding_a_slash_is_not_echoed(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [f"http://user:{TOKEN}/x@127.0.0.1:9"]
    if command == "discover":
        args += ["--inference-world-size", "1", "--timeout", "1"]
    code = main([command, *args])
    out, err = capsys.readouterr()
    assert code == ExitCode.USAGE
    assert TOKEN not in out + err
    assert "Traceback" not in out + err


def test_the_scrubber_removes_userinfo_with_a_slash_and_both_forms_of_a_token() -> None:
    from prime_rl_dynamo.redaction import scrub, secret_values

    secrets = secret_values([("Authorization", f"Bearer {TOKEN}")])
    data: Any = {"k": [f"http://u:{TOKEN}/x@h:1/p", f"echo {TOKEN}", {f"key {TOKEN}": 1}]}
    assert TOKEN not in json.dumps(scrub(data, secrets))
    assert TOKEN not in json.dumps(scrub(data["k"][0]))
