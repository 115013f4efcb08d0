"""What a bare import loads: the core must stay light (no optional extra, no heavy subpackage)."""

from __future__ import annotations

import subprocess
import sys

#: Modules that importing the core must not load: the optional extras and the heavy subpackages.
HEAVY = (
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
)


def heavy_imports(module: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    """The ``heavy`` modules a fresh interpreter holds after ``import module``."""
    code = f"import sys, {module}\nprint(','.join(m for m in {list(heavy)!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return [name for name in out.stdout.strip().split(",") if name]
