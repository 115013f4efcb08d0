"""What a bare import loads: the core must stay light (no optional extra, no heavy subpackage)."""

from __future__ import annotations

import subprocess
import sys

#: The suite's instruments inside the package (docs/architecture.md lists them): what the
#: suite measures a trainer with, never what a trainer imports.
INSTRUMENTS = (
    "prime_rl_dynamo.suite.reference",
    "prime_rl_dynamo.suite.harness",
    "prime_rl_dynamo.suite.fleet",
    "prime_rl_dynamo.suite.strategies",
    "prime_rl_dynamo.suite.mutations",
    "prime_rl_dynamo.suite.recording",
    "prime_rl_dynamo.suite.specdiff",
)

#: Modules that importing the core must not load: the optional extras, the suite and its
#: instruments.
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
    *INSTRUMENTS,
)


def heavy_imports(module: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    """The ``heavy`` modules a fresh interpreter holds after ``import module``."""
    code = f"import sys, {module}\nprint(','.join(m for m in {list(heavy)!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return [name for name in out.stdout.strip().split(",") if name]
