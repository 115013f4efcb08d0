"""Reading a conformance report in a test: what did not pass, as lines a failing assert shows."""

from __future__ import annotations

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
