"""Where the bundled contract lives: `schema/` of the checkout, or `_schema/` inside the wheel.

Every module loads schemas, OpenAPI documents and vectors through here, never from a copy in code.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

_PACKAGE_DIR = Path(__file__).resolve().parent


@cache
def schema_dir() -> Path:
    """The directory holding the contract (JSON Schemas, OpenAPI documents, vectors, SPEC.md)."""
    bundled = _PACKAGE_DIR / "_schema"
    if bundled.is_dir():  # installed wheel: hatchling force-includes schema/ here
        return bundled
    checkout = _PACKAGE_DIR.parent / "schema"
    if checkout.is_dir():  # source checkout or editable install
        return checkout
    raise FileNotFoundError(
        f"the bundled contract is missing: neither {bundled} nor {checkout} exists; "
        "reinstall prime-rl-dynamo"
    )


def schema_path(name: str) -> Path:
    """Path of one file of the contract, e.g. ``rl-workers.v1.schema.json``."""
    path = schema_dir() / name
    if not path.exists():
        raise FileNotFoundError(f"no contract file {name!r} in {schema_dir()}")
    return path


@cache
def load_json(name: str) -> Any:
    """Parsed JSON of one contract file (cached; treat the result as read-only)."""
    return json.loads(schema_path(name).read_text(encoding="utf-8"))
