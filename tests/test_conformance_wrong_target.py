"""A wrong port or path is the operator's mistake, not the target's (SPEC §14.4): when nothing at
the URL looks like an RL listener the run is INCONCLUSIVE (exit 3) and its first line says so;
a listener that answers JSON but breaks the contract still fails (exit 1)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from prime_rl_dynamo.cli import main
from prime_rl_dynamo.exitcodes import ExitCode
from prime_rl_dynamo.suite.reference import start_reference_fleet
from tests._client_support import QuietHandler, serving

pytestmark = pytest.mark.integration

FEW = ["-q", "--profile", "frontend", "--load", "1x1", "--seed", "1"]
HINT = "is this Dynamo's RL listener (`DYN_RL_PORT`)?"

#: (status, content-type, body) for GET and HEAD of every path
Canned = tuple[int, str, bytes]


@contextmanager
def canned_server(get: Canned, head_type: str | None = None) -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 answering every GET with ``get`` and every other method
    with the same status and ``head_type`` (default: the GET's content type) and no body."""

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            status, media, content = get
            self.answer(status, content, media)

        def do_HEAD(self) -> None:
            status, media, content = get
            self.answer(status, content, media if head_type is None else head_type, body=False)

        do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD

    with serving(Handler) as url:
        yield url


@pytest.fixture(scope="module")
def fleet() -> Iterator[Any]:
    with start_reference_fleet() as running:
        yield running


def _run(url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, Any]:
    report = tmp_path / "r.json"
    code = main(["conformance", url, *FEW, "--json-report", str(report)])
    out = capsys.readouterr().out
    return code, out, json.loads(report.read_text())


def test_a_typo_in_the_path_is_inconclusive_with_the_hint(
    fleet: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = fleet.frontend_url + "/v1/rl/worker"
    code, out, data = _run(url, tmp_path, capsys)
    assert code == ExitCode.INCONCLUSIVE, out
    assert out.splitlines()[0] == f"nothing serves /v1/rl/workers at {url} (HTTP 404): {HINT}"
    assert data["verdict"] == "inconclusive"
    assert data["inconclusive"].startswith("nothing serves /v1/rl/workers")
    assert {r["status"] for r in data["results"]} == {"error"}
    assert "fail" not in out.lower().split("inconclusive")[-1]


def test_an_engines_system_port_is_inconclusive_and_named(
    fleet: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    system = fleet.engines[0].system_url
    code, out, data = _run(system, tmp_path, capsys)
    assert code == ExitCode.INCONCLUSIVE, out
    assert out.splitlines()[0] == f"nothing serves /v1/rl/workers at {system} (HTTP 404): {HINT}"
    assert any("system server" in note for note in data["target"]["notes"]), data["target"]


def test_an_openai_api_is_named_as_such(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # What an OpenAI-compatible frontend answers: 404 on /v1/rl/workers, a model list at /v1/models.
    class Handler(QuietHandler):
        def do_GET(self) -> None:
            if self.path == "/v1/models":
                self.answer(200, json.dumps({"object": "list", "data": []}).encode())
            else:
                self.answer(404, json.dumps({"error": "not found"}).encode())

    with serving(Handler) as url:
        code, out, data = _run(url, tmp_path, capsys)
    assert code == ExitCode.INCONCLUSIVE, out
    assert out.splitlines()[0].endswith(f"(HTTP 404): {HINT}")
    assert any("OpenAI-compatible" in note for note in data["target"]["notes"])


def test_html_on_every_probe_is_inconclusive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = (200, "text/html; charset=utf-8", b"<!doctype html><title>Grafana</title>")
    with canned_server(page) as url:
        code, out, _ = _run(url, tmp_path, capsys)
    assert code == ExitCode.INCONCLUSIVE, out
    first = out.splitlines()[0]
    assert first.startswith(
        f"nothing at {url} answers JSON on /v1/rl/workers (GET: HTTP 200, text/html"
    )
    assert first.endswith(HINT)


@pytest.mark.parametrize(
    ("get", "head_type", "breaks"),
    [
        # JSON that is no listing: a listener breaking the contract, judged by the checks
        ((200, "application/json", b'{"workers": "none"}'), None, "BODY-1"),
        # a body that is not JSON, while HEAD still says application/json: judged too
        ((200, "text/html", b"<p>oops</p>"), "application/json", "HTTP-1"),
    ],
    ids=["json-but-not-a-listing", "html-body-json-head"],
)
def test_a_listener_that_answers_but_breaks_the_contract_still_fails(
    get: Canned,
    head_type: str | None,
    breaks: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with canned_server(get, head_type) as url:
        code, out, data = _run(url, tmp_path, capsys)
    assert code == ExitCode.FAIL, out
    assert data["verdict"] == "not-conformant"
    assert breaks in data["failed_requirements"]
    assert HINT not in out
