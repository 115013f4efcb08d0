"""Wire evidence decides, text never does: rewriting every message of a client changes no verdict.

Each client runs twice on the checks that once read message text (POLL-5, TOPO-1, DIALECT-1) and
on the fatal listings: as itself, and with every error text (callable form) or all of stderr
(command form) replaced by noise naming the very words and numbers those old checks looked for.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
from _noisy_clients import NOISE

import conformance

pytestmark = pytest.mark.integration

RUN: dict[str, Any] = {
    "profiles": ["client"],
    "topologies": 1,
    "client_timeout": 20.0,
    "target": "reference",
    "seed": 4,
    "checks": (
        "POLL-5::deadline-result",
        "TOPO-1::reverify-before-update",
        "DIALECT-1::other-dialect",
        "POLL-2::fatal-not-retried",
        "VERSION-2::unknown-version",
    ),
}
#: The faithful client and the bugs whose verdicts an old message check decided.
CLIENTS = ("spec", "field_checks_smg", "deadline_without_sum", "skips_reverify", "retries_smg")


def _target(name: str) -> str:
    return (
        "conformance.examples.spec_client:run"
        if name == "spec"
        else f"conformance.examples.zoo:{name}"
    )


@pytest.mark.parametrize("name", CLIENTS)
def test_noise_in_a_callables_errors_changes_no_verdict(name: str) -> None:
    clean = conformance.run(client=_target(name), **RUN)
    noisy = conformance.run(
        client=f"_noisy_clients:{'spec' if name == 'spec' else 'zoo__' + name}", **RUN
    )
    assert noisy.outcomes() == clean.outcomes()
    if name != "spec":
        assert not clean.ok  # each bug is seen with and without its words


def test_noise_on_a_commands_stderr_changes_no_verdict() -> None:
    command = f"{sys.executable} -m conformance.examples.zoo field-checks-smg"
    noisy = f"{command} 2>/dev/null; rc=$?; echo '{NOISE}' >&2; exit $rc"
    clean_run = conformance.run(client_cmd=command, **RUN)
    noisy_run = conformance.run(client_cmd=noisy, **RUN)
    assert noisy_run.outcomes() == clean_run.outcomes()
    assert "DIALECT-1" in noisy_run.failed_requirements()
