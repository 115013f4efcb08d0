"""Running the conformance suite in a test (the pytest route in a child process) and reading its
report (what did not pass, as lines a failing assert shows)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from conformance.results import Status


def not_passing(report: Any) -> list[str]:
    """``check: message`` of every result that neither passed nor was skipped (fail, error,
    warn, xfail...): an assert ``== []`` on it shows each one."""
    return [
        f"{r.check}: {r.message}"
        for r in report.results
        if r.status not in (Status.PASS, Status.SKIP)
    ]


ROOT = Path(__file__).resolve().parent.parent

#: The pytest route in a child process, without plugins that would reorder or litter the run.
PYTEST_ROUTE = (
    sys.executable,
    "-m",
    "pytest",
    "--pyargs",
    "conformance",
    "-q",
    "-p",
    "no:randomly",
    "-p",
    "no:cacheprovider",
)


def run_pytest_route(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """``pytest --pyargs conformance ARGS`` from the checkout, its output captured as text."""
    return subprocess.run(
        [*PYTEST_ROUTE, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )


def interrupt_when(
    proc: subprocess.Popen[str], reached: threading.Event, *, timeout: float
) -> tuple[str, str]:
    """Ctrl-C ``proc`` (a real SIGINT) once the run ``reached`` HTTP-2, then its stdout and
    stderr ("" when merged); the process is killed whatever happens."""
    try:
        assert reached.wait(timeout), "the run never reached HTTP-2"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=timeout)
    finally:
        proc.kill()
    return out, err or ""
