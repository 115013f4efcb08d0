"""The repository's tools run from the checkout as the docs and the Makefile say, and agree that
every generated file is up to date: ``python -m tools.openapi --check``, ``python -m tools.codegen
--check``, ``python -m tools.bench.docs --check``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECKS = ("tools.openapi", "tools.codegen", "tools.bench.docs")


@pytest.mark.integration
@pytest.mark.parametrize("module", CHECKS)
def test_check_passes_from_the_checkout(module: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", module, "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_make_generates_and_lint_checks_with_the_same_commands() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    generate = makefile.split("\ngenerate:", 1)[1].split("\n\n", 1)[0]
    lint = makefile.split("\nlint:", 1)[1].split("\n\n", 1)[0]
    for module in ("tools.openapi", "tools.codegen"):
        assert re.search(rf"-m {re.escape(module)}$", generate, re.M), module
        assert f"-m {module} --check" in lint, module
    assert "-m tools.bench.docs" in makefile.split("\nbench-docs:", 1)[1].split("\n\n", 1)[0]
