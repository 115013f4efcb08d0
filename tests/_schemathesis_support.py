"""Running schemathesis as the docs show it: ``schemathesis run DOC --url URL --checks all``."""

from __future__ import annotations

import functools
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from prime_rl_dynamo.resources import schema_path

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")


@functools.cache
def _scratch() -> str:
    """Where schemathesis runs: it writes .schemathesis/ into its working directory."""
    return tempfile.mkdtemp(prefix="prime-rl-dynamo-schemathesis-")


def run_schemathesis(
    document: str, url: str, *extra: str, seed: int = 20261130
) -> subprocess.CompletedProcess[str]:
    """``schemathesis run`` of ``schema/openapi/<document>`` against ``url``, seeded, all checks."""
    if not SCHEMATHESIS.exists():
        pytest.skip(f"schemathesis is not installed next to {sys.executable}")
    command = [
        str(SCHEMATHESIS),
        "run",
        str(schema_path(f"openapi/{document}")),
        "--url",
        url,
        "--checks",
        "all",
        "--seed",
        str(seed),
        "--no-color",
        *extra,
    ]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=240, check=False, cwd=_scratch()
    )


def assert_passed(result: subprocess.CompletedProcess[str]) -> None:
    """The run exited 0 and found nothing; otherwise its report's tail is the failure message."""
    tail = "\n".join(result.stdout.splitlines()[-40:])
    assert result.returncode == 0, f"schemathesis failed:\n{tail}\n{result.stderr[-2000:]}"
    assert "No issues found" in result.stdout, tail
