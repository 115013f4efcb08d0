"""The Prime-RL pool example as a --client-cmd: a refusal is one clear line on stderr and exit 1,
never a traceback (the client profile shows that line as the run's outcome)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from prime_rl_dynamo.suite.reference import start_reference_fleet

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.integration


def _env(url: str, world: int, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONFORMANCE_")}
    env.update(
        {
            "CONFORMANCE_DISCOVERY_URL": url,
            "CONFORMANCE_INFERENCE_WORLD_SIZE": str(world),
            "CONFORMANCE_CONVENTION": "prime-nccl",
            "CONFORMANCE_MODEL": "",
            "CONFORMANCE_MASTER_ADDRESS": "127.0.0.1",
            "CONFORMANCE_MASTER_PORT": "29555",
            "CONFORMANCE_TIMEOUT": "2",
            **extra,
        }
    )
    return env


def _example(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "conformance.examples.prime_rl_pool_client"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_refusal_says_what_on_its_first_line_and_exits_1() -> None:
    with start_reference_fleet() as fleet:
        fleet.wait_ready()
        done = _example(_env(fleet.discovery_url, fleet.inference_world_size + 1))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    lines = done.stderr.strip().splitlines()
    # The first line says what (the profile's table shows it); the rest are the details.
    assert lines and lines[0].startswith("prime_rl_pool_client: refused: "), lines
    assert "POLL-5" in lines[0] or "RANK-2" in lines[0], lines
    assert not any(line.startswith("prime_rl_pool_client:") for line in lines[1:]), lines


def test_run_outside_the_profile_says_what_is_missing() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONFORMANCE_")}
    done = _example(env)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "CONFORMANCE_DISCOVERY_URL is not set" in done.stderr
