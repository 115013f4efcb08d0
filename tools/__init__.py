"""Repository tools, outside the wheel: the benchmarks and the generators of checked-in files.

Run them from the repository root (``python -m tools.openapi``, ``python -m tools.codegen``,
``python -m tools.bench``, ``python -m tools.bench.docs``) or through ``make``; the installed
``prime-rl-dynamo`` never imports them. Generators read and write the repository's own files (``schema/``,
``prime_rl_dynamo/_models.py``), never the copy of the contract inside an installed package.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: The repository root (the checkout this package sits in).
REPO = Path(__file__).resolve().parent.parent
#: The contract in the checkout: the generators' input and output.
SCHEMA_DIR = REPO / "schema"


def load_schema(name: str) -> Any:
    """Parsed JSON of one file of the checkout's ``schema/``, e.g. ``rl-workers.v1.schema.json``."""
    return json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))
