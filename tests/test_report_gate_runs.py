"""``report diff`` agrees with the runs it compares (issue 39): real runs of both routes, each
ending not ok in its own way, and the gate closing on each, in its exit code, its printed line
and its ``--json``; each run's JUnit file has a failing case that names the cause."""

from __future__ import annotations

import json
import queue
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _gateway_support import stalling_head_frontend
from _report_support import assert_valid_junit

from prime_rl_dynamo.suite.reference import start_reference_fleet
from tests._suite_support import ENV, PYTEST_ROUTE, ROOT, interrupt_when

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

CLI = (sys.executable, "-m", "prime_rl_dynamo.cli")


def _command(*args: str) -> subprocess.CompletedProcess[str]:
    """``prime-rl-dynamo ARGS`` in a child process, as an operator runs it."""
    return subprocess.run(
        [*CLI, *args], cwd=ROOT, capture_output=True, text=True, timeout=240, env=ENV
    )


@contextmanager
def _served() -> Iterator[str]:
    """``prime-rl-dynamo serve --port 0 --json`` on 127.0.0.1: its frontend URL, once it says
    where it listens; stopped at the end."""
    proc = subprocess.Popen(
        [*CLI, "serve", "--port", "0", "--seed", "1", "--json"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=ENV,
    )
    lines: queue.Queue[str] = queue.Queue()
    stdout = proc.stdout
    assert stdout is not None

    def read() -> None:  # the main thread waits on the queue, with a deadline
        for line in stdout:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    try:
        document = [lines.get(timeout=60)]
        while document[-1] != "}\n":  # the indented JSON document's last line
            document.append(lines.get(timeout=60))
        yield str(json.loads("".join(document))["frontend_url"])
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _gate(out: str) -> str:
    """The GATE line ``report diff`` printed (its last)."""
    last = out.splitlines()[-1]
    assert last.startswith("GATE: "), out
    return last


def _diff(a: Path, b: Path) -> tuple[int, str, dict[str, Any]]:
    """``report diff A B``, printed and ``--json``: its exit code (the two agree), its output
    and its JSON."""
    printed, as_json = (
        _command("report", "diff", str(a), str(b)),
        _command("report", "diff", str(a), str(b), "--json"),
    )
    assert "Traceback" not in printed.stderr + as_json.stderr
    assert printed.returncode == as_json.returncode, printed.stdout + as_json.stdout
    data = json.loads(as_json.stdout)
    assert data["exit_code"] == printed.returncode, printed.stdout
    return printed.returncode, printed.stdout, data


def _same_gate(code: int, out: str, data: dict[str, Any]) -> str:
    """The printed GATE line, which says what ``--json``'s ``gate`` and the exit code say."""
    assert _gate(out) == f"GATE: {data['gate']} (exit {code})"
    return _gate(out)


def test_the_issue_39_steps_end_with_the_gate_closed(tmp_path: Path) -> None:
    # 1. a passing run of the frontend profile; 2. the same with a waiver file whose ENGINE-2
    # waiver expired on 2020-01-01 (the frontend profile does not check ENGINE-2); 3. diff.
    waivers = tmp_path / "waivers.yaml"
    waivers.write_text(
        "waivers:\n  - requirement: ENGINE-2\n    reason: text/plain engine replies\n"
        "    expires: 2020-01-01\n"
    )
    a, b = tmp_path / "A.json", tmp_path / "B.json"
    frontend = ("--profile", "frontend", "--seed", "1", "-q")
    with _served() as url:
        first = _command("conformance", url, *frontend, "--json-report", str(a))
        second = _command(
            "conformance", url, *frontend, "--waivers", str(waivers), "--json-report", str(b)
        )
    assert first.returncode == 0, first.stdout[-2000:]
    assert second.returncode == 1, second.stdout[-2000:]
    assert "waiver of ENGINE-2: expired on 2020-01-01" in second.stdout
    before, after = json.loads(a.read_text()), json.loads(b.read_text())
    assert before["ok"] is True
    assert (after["verdict"], after["ok"]) == ("not-conformant", False)
    assert after["failed_requirements"] == ["ENGINE-2"]
    assert "ENGINE-2" not in {r["requirement"] for r in after["results"]}

    code, out, data = _diff(a, b)
    assert code == 1, out
    assert _same_gate(code, out, data) == "GATE: closed: B is not ok: ENGINE-2 (exit 1)"
    assert (
        "  ENGINE-2: waiver of ENGINE-2 expired on 2020-01-01: the run fails until the waiver is "
        "renewed or removed"
    ) in out.splitlines()
    assert [c["cause"] for c in data["causes"]] == ["ENGINE-2"]
    assert "expired on 2020-01-01" in data["causes"][0]["because"]
    assert data["newly_failing"] == [] and data["unvouched"] == []


# --- every way a run ends not ok, through both routes -------------------------------------------


@dataclass(frozen=True)
class Ending:
    """One way a run ends not ok: its target, its options, and what names the cause."""

    name: str
    target: str  # a kind _target stands up
    args: tuple[str, ...]  # the CLI's spelling; the pytest route gets the --rl-* one
    key: str  # the cause in failed_requirements: a requirement ID or a run-wide reason's kind
    says: str  # text a failing JUnit case and report diff's cause line both hold
    exits: tuple[int, int]  # the command's exit code, the pytest route's
    waive: str | None = None  # a requirement to waive with a waiver expired on 2020-01-01


ENDINGS = [
    Ending(
        "expired waiver of a checked requirement",
        "reference",
        ("--requirement", "HTTP-2"),
        "HTTP-2",
        "waiver of HTTP-2 expired on 2020-01-01",
        (1, 1),
        waive="HTTP-2",
    ),
    Ending(
        "expired waiver of an unchecked requirement",
        "reference",
        ("--requirement", "HTTP-2"),
        "ENGINE-2",
        "waiver of ENGINE-2 expired on 2020-01-01",
        (1, 1),
        waive="ENGINE-2",
    ),
    Ending(
        "interrupted",
        "HEAD stalls",
        ("--profile", "frontend", "--timeout", "60"),
        "interrupted",
        "interrupted: ",
        (130, 2),
    ),
    Ending(
        "inconclusive",
        "nothing listening",
        ("--requirement", "HTTP-2"),
        "inconclusive",
        "nothing listening at http://127.0.0.1:",
        (3, 3),
    ),
    Ending(
        "nothing checked",
        "reference",  # HTTP-5 judges only a 500 answer: the reference answers 200, a skip
        ("--requirement", "HTTP-5"),
        "nothing checked",
        "nothing checked: every selected check was skipped",
        (4, 5),
    ),
    Ending(
        "an error in a check",
        "discovery fails",  # 500 discovery_failed: no listing, LIST-1 cannot be judged
        ("--requirement", "LIST-1"),
        "inconclusive",
        "inconclusive: 1 check in error: no listing to judge",
        (3, 1),
    ),
    Ending(
        "a strict run with a warning",
        "polls differ",  # HTTP-6 (SHOULD, stable polls) never holds: a warning, strict a fail
        ("--requirement", "HTTP-6", "--strict"),
        "HTTP-6",
        "HTTP-6::stable-polls",
        (1, 1),
    ),
]
ROUTES = ("command", "pytest")


@contextmanager
def _target(kind: str) -> Iterator[tuple[str, threading.Event | None]]:
    """A target of ``kind`` on 127.0.0.1: its URL, and the event to interrupt the run on."""
    if kind in ("reference", "discovery fails"):
        faults = ["discovery-failed"] if kind == "discovery fails" else []
        with start_reference_fleet(faults=faults) as fleet:
            yield fleet.frontend_url, None
    elif kind == "nothing listening":
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        yield f"http://127.0.0.1:{port}", None
    elif kind == "HEAD stalls":
        with stalling_head_frontend() as frontend:
            yield frontend.url, frontend.head_seen
    else:
        from tests._client_support import ScriptedServer, body, ok, worker

        with ScriptedServer() as server:  # the first GET lists one engine, every later poll two
            one, two = body(worker("a", 1)), body(worker("a", 1), worker("b", 2))
            server.script("GET", "/v1/rl/workers", ok(one), ok(two))
            yield server.url, None


def _run(route: str, url: str, args: list[str], interrupt: threading.Event | None) -> int:
    """One run through ``route`` (``prime-rl-dynamo conformance`` or ``pytest --pyargs
    conformance``); its exit code. Interrupted with Ctrl-C once ``interrupt`` is set."""
    from conformance.options import pytest_spelling

    if route == "command":
        argv = [*CLI, "conformance", url, "-q", *args]
    else:
        argv = [*PYTEST_ROUTE, "--rl-url", url, *(pytest_spelling(a) for a in args)]
    proc = subprocess.Popen(
        argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ENV
    )
    if interrupt is not None:
        out, _ = interrupt_when(proc, interrupt, "HTTP-2")
    else:
        out, _ = proc.communicate(timeout=240)
    assert "Traceback" not in out, out[-3000:]
    return proc.returncode


@pytest.fixture(scope="module")
def before(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A: a conformant run (HTTP-2 against the reference fleet)."""
    path = tmp_path_factory.mktemp("a") / "A.json"
    with start_reference_fleet() as fleet:
        done = _command(
            "conformance", fleet.frontend_url, "-q", "--requirement", "HTTP-2", "--seed", "1",
            "--json-report", str(path),
        )  # fmt: skip
    assert done.returncode == 0 and json.loads(path.read_text())["ok"] is True, done.stdout
    return path


def _failing_cases(junit: Path) -> list[str]:
    """Each failing case of a JUnit file (valid against tests/junit.xsd): its name, type and
    message."""
    root = assert_valid_junit(junit)
    return [
        f"{case.get('name')} {failure.get('type')} {failure.get('message')}"
        for case in root.iter("testcase")
        for failure in case.findall("failure")
    ]


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("ending", ENDINGS, ids=[e.name for e in ENDINGS])
def test_the_gate_closes_on_every_run_that_is_not_ok(
    ending: Ending, route: str, before: Path, tmp_path: Path
) -> None:
    b, junit = tmp_path / "B.json", tmp_path / "B.xml"
    args = [*ending.args, "--seed", "1", "--load", "2x2"]
    if route == "command":
        args += ["--json-report", str(b), "--junit-xml", str(junit)]
    else:
        args += ["--rl-json-report", str(b), f"--junitxml={junit}"]
    if ending.waive:
        waivers = tmp_path / "waivers.yaml"
        waivers.write_text(
            f"waivers:\n  - requirement: {ending.waive}\n    reason: an old deviation\n"
            "    expires: 2020-01-01\n"
        )
        args += ["--waivers", str(waivers)]
    with _target(ending.target) as (url, interrupt):
        code = _run(route, url, args, interrupt)

    # The run: its exit code, its JSON report and its JUnit file all say it is not ok, and why.
    assert code == ending.exits[ROUTES.index(route)]
    after = json.loads(b.read_text())
    assert after["ok"] is False
    if route == "command":
        assert after["exit_code"] == code
    assert ending.key in [c.partition(": ")[0] for c in after["failed_requirements"]]
    failing = _failing_cases(junit)
    assert any(ending.says in case for case in failing), failing

    # The gate: closed, in its exit code, its printed line and --json, naming the cause.
    code, out, data = _diff(before, b)
    assert code == 1, out
    gate = _same_gate(code, out, data)
    assert gate.startswith("GATE: closed: ") and ending.key in gate.partition("B is not ok: ")[2]
    assert ending.says in out
    causes = {c["cause"].partition(": ")[0]: c for c in data["causes"]}
    assert ending.says in json.dumps(causes[ending.key])
    assert data["verdicts"] == {"before": "conformant", "after": after["verdict"]}
