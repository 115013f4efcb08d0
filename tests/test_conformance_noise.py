"""Wire evidence decides, text never does: rewriting every message of a client changes no verdict.

Each client runs twice on the checks that once read message text (POLL-5, TOPO-1, DIALECT-1) and
on the fatal listings: as itself, and with every error text (callable form) or all of stderr
(command form) replaced by noise naming the very words and numbers those old checks looked for.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
from _noisy_clients_support import NOISE

import conformance
from conformance.results import Status

pytestmark = pytest.mark.integration

RUN: dict[str, Any] = {
    "profiles": ["client"],
    "topologies": 1,
    "client_timeout": 20.0,
    "client_poll_interval": 0.1,  # the noisy clients follow CONFORMANCE_POLL_INTERVAL
    "target": "reference",
    "seed": 4,
}
#: The checks that once read message text, and the fatal listings.
TEXT_CHECKS = (
    "POLL-5::deadline-result",
    "TOPO-1::reverify-before-update",
    "DIALECT-1::other-dialect",
    "POLL-2::fatal-not-retried",
    "VERSION-2::unknown-version",
)
#: The faithful client on every such check, and each bug whose verdict an old message check
#: decided, on its check.
CLIENTS = {
    "spec": TEXT_CHECKS,
    "field_checks_smg": ("DIALECT-1::other-dialect",),
    "deadline_without_sum": ("POLL-5::deadline-result",),
    "skips_reverify": ("TOPO-1::reverify-before-update",),
}


def _target(name: str) -> str:
    if name == "spec":
        return "conformance.examples.spec_client:run"
    return f"conformance.examples.zoo:{name}"


def _not_passing(report: conformance.Report) -> set[str]:
    return {r.check for r in report.results if r.status in (Status.FAIL, Status.WARN)}


@pytest.mark.parametrize("name", list(CLIENTS))
def test_noise_in_a_callables_errors_changes_no_verdict(name: str) -> None:
    checks = CLIENTS[name]
    clean = conformance.run(client=_target(name), checks=checks, **RUN)
    noisy_name = "spec" if name == "spec" else f"zoo__{name}"
    noisy = conformance.run(client=f"_noisy_clients_support:{noisy_name}", checks=checks, **RUN)
    assert noisy.outcomes() == clean.outcomes()
    # The faithful client passes all; each bug fails its check, with its words and without.
    assert _not_passing(clean) == (set() if name == "spec" else set(checks))


def test_noise_on_a_commands_stderr_changes_no_verdict() -> None:
    command = f"{sys.executable} -m conformance.examples.zoo field-checks-smg"
    noisy = f"{command} 2>/dev/null; rc=$?; echo '{NOISE}' >&2; exit $rc"
    checks = ("DIALECT-1::other-dialect",)
    clean_run = conformance.run(client_cmd=command, checks=checks, **RUN)
    noisy_run = conformance.run(client_cmd=noisy, checks=checks, **RUN)
    assert noisy_run.outcomes() == clean_run.outcomes()
    assert "DIALECT-1" in noisy_run.failed_requirements()
