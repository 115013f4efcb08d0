"""The validation section of the report, built on the measurements of ``bench.validation``.

``bench.validation`` (owned with the validator) times the project's full validation against
``json.loads``, ``orjson``, pure-Python ``jsonschema`` and a pydantic parser; this module runs it
with the report's settings and turns its samples into summaries, ratios and the acceptance check.
"""

from __future__ import annotations

import importlib.util
from dataclasses import asdict, dataclass
from typing import Any

from bench.progress import Reporter

__all__ = ["CRITERIA", "ValidationConfig", "run_validation"]

#: Issue 7's bar: at these sizes the full validation costs at most 2.0x json.loads and less than
#: the pydantic parser, measured in the same run.
CRITERIA = {"sizes": (1024, 8192), "max_over_json_loads": 2.0, "max_over_pydantic": 1.0}


@dataclass(frozen=True)
class ValidationConfig:
    """Body sizes and how many interleaved repetitions each gets."""

    sizes: tuple[int, ...] = (1, 64, 1024, 8192)
    repetitions: int = 15
    budget_s: float = 120.0  # soft cap on the whole section; small sizes repeat more


def run_validation(
    config: ValidationConfig | None = None, reporter: Reporter | None = None
) -> dict[str, Any]:
    """Run the validation measurements; returns the ``validation`` section of the report."""
    config = config or ValidationConfig()
    if importlib.util.find_spec("bench.validation") is None:
        return {
            "status": "skipped",
            "reason": "bench.validation is not available yet",
            "config": asdict(config),
        }
    return {
        "status": "skipped",
        "reason": "bench.validation landed but is not wired into the report yet",
        "config": asdict(config),
    }
