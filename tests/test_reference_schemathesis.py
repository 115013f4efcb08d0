"""schemathesis against the reference fleet: the three OpenAPI documents of schema/openapi/.

Runs the same command the docs show (`schemathesis run DOC --url URL --checks all`) as a
subprocess, with a fixed seed; the worker-system and admin runs are capped in examples.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from prime_rl_dynamo._resources import schema_path
from prime_rl_dynamo.reference import ReferenceFleet, start_reference_fleet

pytestmark = [pytest.mark.integration, pytest.mark.slow]

_SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")


@functools.cache
def _scratch() -> str:
    """Where schemathesis runs: it writes .schemathesis/ into its working directory."""
    return tempfile.mkdtemp(prefix="prime-rl-dynamo-schemathesis-")


@pytest.fixture(scope="module")
def fleet() -> Iterator[ReferenceFleet]:
    with start_reference_fleet() as running:
        yield running


def _run(document: str, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    if not _SCHEMATHESIS.exists():
        pytest.skip(f"schemathesis is not installed next to {sys.executable}")
    command = [
        str(_SCHEMATHESIS),
        "run",
        str(schema_path(f"openapi/{document}")),
        "--url",
        url,
        "--checks",
        "all",
        "--seed",
        "20261130",
        "--no-color",
        *extra,
    ]
    # schemathesis writes .schemathesis/ where it runs: not in the checkout.
    return subprocess.run(
        command, capture_output=True, text=True, timeout=240, check=False, cwd=_scratch()
    )


def _assert_passed(result: subprocess.CompletedProcess[str]) -> None:
    tail = "\n".join(result.stdout.splitlines()[-40:])
    assert result.returncode == 0, f"schemathesis failed:\n{tail}\n{result.stderr[-2000:]}"
    assert "No issues found" in result.stdout, tail


def test_rl_frontend_document(fleet: ReferenceFleet) -> None:
    _assert_passed(_run("rl-frontend.openapi.json", fleet.frontend_url))


def test_worker_system_document(fleet: ReferenceFleet) -> None:
    _assert_passed(
        _run("worker-system.openapi.json", fleet.engines[0].system_url, "--max-examples", "30")
    )


def test_admin_document(fleet: ReferenceFleet) -> None:
    _assert_passed(
        _run("admin.openapi.json", fleet.engines[0].admin_base_url, "--max-examples", "30")
    )
