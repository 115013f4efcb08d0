"""Running the conformance suite as a user does, in a child process: the pytest route
(``pytest --pyargs conformance``), a run interrupted with Ctrl-C part-way through, and reading
what a report did not pass."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from conformance.results import Status

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
ENV = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}


def pytest_route(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """``pytest --pyargs conformance ARGS`` run to its end, its output captured."""
    return subprocess.run(
        [*PYTEST_ROUTE, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=ENV
    )


def interrupt_when(
    proc: subprocess.Popen[str], reached: threading.Event, what: str
) -> tuple[str, str]:
    """Send Ctrl-C (SIGINT) to ``proc`` once ``reached`` is set; its stdout and stderr after."""
    try:
        assert reached.wait(120), f"the run never reached {what}"
        proc.send_signal(signal.SIGINT)
        return proc.communicate(timeout=120)
    finally:
        proc.kill()


def not_passing(report: Any) -> list[str]:
    """``check: message`` of every result that neither passed nor was skipped (fail, error,
    warn, xfail...): an assert ``== []`` on it shows each one."""
    return [
        f"{r.check}: {r.message}"
        for r in report.results
        if r.status not in (Status.PASS, Status.SKIP)
    ]
