"""The public surface stays small, documented and light to import."""

from __future__ import annotations

import subprocess
import sys

import prime_rl_dynamo


def test_import_pulls_in_no_optional_extra() -> None:
    code = (
        "import sys, prime_rl_dynamo\n"
        "heavy = ['hypothesis', 'starlette', 'uvicorn', 'schemathesis', 'pytest', 'dynamo',"
        " 'pydantic', 'yaml', 'matplotlib', 'conformance', 'prime_rl_dynamo.reference',"
        " 'prime_rl_dynamo.harness', 'prime_rl_dynamo.strategies']\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"import prime_rl_dynamo imported {out.stdout.strip()}"


def test_every_export_exists_and_is_documented() -> None:
    for name in prime_rl_dynamo.__all__:
        obj = getattr(prime_rl_dynamo, name)
        if name.startswith("__"):
            continue
        assert (getattr(obj, "__doc__", None) or "").strip(), f"{name} has no docstring"
    assert len(prime_rl_dynamo.__all__) <= 36, "the public API should stay small"
