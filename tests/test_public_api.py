"""The public surface stays small, documented and light to import."""

from __future__ import annotations

import subprocess
import sys

import pytest

import prime_rl_dynamo

HEAVY = [
    "prime_rl",
    "hypothesis",
    "starlette",
    "uvicorn",
    "schemathesis",
    "pytest",
    "dynamo",
    "pydantic",
    "yaml",
    "matplotlib",
    "conformance",
    "prime_rl_dynamo.reference",
    "prime_rl_dynamo.harness",
    "prime_rl_dynamo.strategies",
]


@pytest.mark.parametrize("module", ["prime_rl_dynamo", "prime_rl_dynamo.prime_rl"])
def test_import_pulls_in_no_optional_extra_nor_prime_rl(module: str) -> None:
    code = f"import sys, {module}\nprint(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"import {module} imported {out.stdout.strip()}"


def test_every_export_exists_and_is_documented() -> None:
    for name in prime_rl_dynamo.__all__:
        obj = getattr(prime_rl_dynamo, name)
        if name.startswith("__"):
            continue
        assert (getattr(obj, "__doc__", None) or "").strip(), f"{name} has no docstring"
    assert len(prime_rl_dynamo.__all__) <= 36, "the public API should stay small"
