"""The conformance suite for Dynamo's ``GET /v1/rl/workers`` contract and its clients.

``conformance.run(url=..., profiles=[...]) -> Report`` is the library entry point; the CLI
(``prime-rl-dynamo conformance``) and the pytest plugin (``conformance.plugin``) call it too.
Importing this package is cheap: the profiles load when a run or a listing needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conformance.options import Options
    from conformance.registry import Check, all_checks
    from conformance.results import Report, Result, Status
    from conformance.runner import run

    run_suite = run

__all__ = [
    "Check",
    "Options",
    "Report",
    "Result",
    "Status",
    "all_checks",
    "run",
    "run_suite",
]

_LAZY = {
    "Check": ("conformance.registry", "Check"),
    "all_checks": ("conformance.registry", "all_checks"),
    "Report": ("conformance.results", "Report"),
    "Result": ("conformance.results", "Result"),
    "Status": ("conformance.results", "Status"),
    "Options": ("conformance.options", "Options"),
    "run": ("conformance.runner", "run"),
    "run_suite": ("conformance.runner", "run"),
}


def __getattr__(name: str) -> Any:
    # Lazy so that the pytest plugin (imported by every pytest run) stays cheap.
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'conformance' has no attribute {name!r}") from None
    return getattr(importlib.import_module(module), attr)
