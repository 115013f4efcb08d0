"""Without the dynamo extra (its import really fails, in a subprocess): asking for real Dynamo
says which extra to install, whole and unmangled by the terminal's markup."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

NEEDS = "real Dynamo needs the dynamo extra: pip install 'prime-rl-dynamo[dynamo]'"
# `dynamo` set to None in sys.modules: every `import dynamo...` raises ImportError, as without it
WITHOUT_DYNAMO = (
    "import sys; sys.modules['dynamo'] = None\n"
    "from prime_rl_dynamo.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_DYNAMO, *argv],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_target_dynamo_without_the_extra_is_a_usage_error_naming_it() -> None:
    proc = _cli("conformance", "--target", "dynamo", "--profile", "frontend", "-q")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == [
        f"prime-rl-dynamo conformance: --target dynamo: {NEEDS} "
        "(from a checkout: pip install -e '.[dynamo]')"
    ]
    assert "HarnessError" not in proc.stdout + proc.stderr


def test_the_library_route_is_inconclusive_with_the_same_words(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['dynamo'] = None\n"
        "import conformance, json\n"
        "r = conformance.run(profiles=['frontend'], target='dynamo', seed=1)\n"
        "print(json.dumps([r.exit_code, r.inconclusive, r.failed_requirements()]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    exit_code, line, failed = json.loads(proc.stdout.splitlines()[-1])
    assert exit_code == 3 and line.startswith(f"--target dynamo: {NEEDS}")
    assert failed[-1].startswith("inconclusive: ")


def test_nothing_checked_shows_the_extra_in_brackets() -> None:
    # every roundtrip check is skipped for the missing extra: the hint keeps its [dynamo]
    proc = _cli("conformance", "--profile", "roundtrip", "-q")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert NEEDS in " ".join(proc.stdout.split()), proc.stdout  # (wrapped at the width)
    assert "pip install 'prime-rl-dynamo'" not in proc.stdout
