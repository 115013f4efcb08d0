"""Text from a hostile target reaches every medium escaped, and never crashes a run (issue 22,
items 7 and 8): ANSI escapes, NUL and lone surrogates in worker labels, SMG member names and the
first bytes of a non-JSON body."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from prime_rl_dynamo.cli import main
from prime_rl_dynamo.exitcodes import ExitCode
from tests._client_support import ScriptedServer, body, ok, worker

pytestmark = pytest.mark.integration  # hostile servers on 127.0.0.1

PATH = "/v1/rl/workers"
EVIL = "ev\x1b[2J\x00il\u202e"
SURROGATE = EVIL + "\ud800"
RAW = ("\x1b", "\x00", "\u202e")


def _smg(name: str) -> bytes:
    doc = {"protocol_version": 1, "total": 1, "workers": [{"id": "w1", name: "x", "engine": "v"}]}
    return json.dumps(doc).encode()  # ensure_ascii: the surrogate travels as \ud800


def _run(tmp_path: Path, url: str, *checks: str, profile: str | None = None) -> tuple[int, str]:
    reports = {
        "json": tmp_path / "r.json",
        "junit": tmp_path / "r.xml",
        "html": tmp_path / "r.html",
    }
    args = ["conformance", url, "-q"]
    if profile:
        args += ["--profile", profile]
    for check in checks:
        args += ["--check", check]
    args += ["--json-report", str(reports["json"]), "--junit-xml", str(reports["junit"])]
    args += ["--html-report", str(reports["html"])]
    code = main(args)
    json.loads(reports["json"].read_text("utf-8"))  # every report was written, and parses
    ET.parse(reports["junit"])  # well-formed XML
    page = reports["html"].read_text("utf-8")
    for char in RAW:
        assert char not in page
        assert char not in reports["junit"].read_text("utf-8")
    return code, page


@pytest.mark.parametrize(
    ("served", "checks"),
    [
        (ok(body(worker(EVIL, 1, world_size=0))), ("WORKER-9::body", "BODY-1::body")),
        (ok(_smg(SURROGATE)), ("DIALECT-1::dialect", "VERSION-1::smg")),
        (
            (200, {"content-type": "application/json"}, EVIL.encode("utf-8", "surrogatepass")),
            ("HTTP-1::status-and-content-type", "BODY-1::body"),
        ),
    ],
    ids=["worker-label", "smg-member-name", "non-json-body"],
)
def test_hostile_text_is_escaped_in_every_medium(
    served: tuple[int, dict[str, str], bytes],
    checks: tuple[str, ...],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with ScriptedServer() as target:
        target.script("GET", PATH, served)
        target.script("HEAD", PATH, (200, {"content-type": "application/json"}, b""))
        code, _ = _run(tmp_path, target.url, *checks)
    out, err = capsys.readouterr()
    assert code == ExitCode.FAIL  # the target's fault, judged: not a crash
    assert "Traceback" not in out + err
    for char in RAW:
        assert char not in out + err


def test_a_surrogate_in_a_v2_component_name_is_judged_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    listing = json.loads(body(worker(SURROGATE, 1)))
    listing.update(protocol_version=2, fingerprint="0" * 32)
    served = ok(json.dumps(listing).encode(), **{"Dynamo-RL-Protocol": "2", "etag": '"x"'})
    with ScriptedServer() as target:
        target.script("GET", PATH, served)
        code, _ = _run(
            tmp_path, target.url, "V2-2::body", "V2-1::negotiation", profile="frontend-v2"
        )
    out, err = capsys.readouterr()
    assert code in (ExitCode.FAIL, ExitCode.OK)
    assert "Traceback" not in out + err


def test_report_diff_prints_messages_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from _report_support import report_of

    a = report_of(("LIST-1::body", "pass", "fine"))
    b = report_of(("LIST-1::body", "fail", f"bad {SURROGATE}"))
    paths = []
    for name, data in (("a", a), ("b", b)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data), "utf-8")
        paths.append(str(path))
    code = main(["report", "diff", *paths])
    out, err = capsys.readouterr()
    assert code == ExitCode.FAIL
    assert "\\x1b" in out
    for char in RAW:
        assert char not in out + err
