"""The benchmarks: ``python -m tools.bench`` from a checkout, or ``make bench``.

They measure the installed ``prime_rl_dynamo`` and are not part of the wheel. Sections that need a
server of their own start it as ``python -m tools.bench.<module>`` in a child process.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

from tools import REPO


def refuse_unknown(what: str, chosen: Iterable[str], known: Iterable[str]) -> None:
    """ValueError naming the ``chosen`` names (clients, frontends...) that are not ``known``."""
    known = list(known)
    unknown = [name for name in chosen if name not in known]
    if unknown:
        raise ValueError(f"unknown {what} {unknown}; expected some of {known}")


def child_argv(module: str, *args: str) -> list[str]:
    """The command line running ``tools.bench.<module>`` with this interpreter."""
    return [sys.executable, "-m", f"{__name__}.{module}", *args]


def child_env() -> dict[str, str]:
    """This process's environment with the repository root first on ``PYTHONPATH``.

    A child started from any directory then imports ``tools`` from this checkout.
    """
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *([path] if path else [])])}
