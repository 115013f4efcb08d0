"""Clients whose messages are noise: ``_noisy_clients_support:zoo__BUG_NAME`` (or ``spec``) is the zoo (or
spec) client whose every error text is replaced by one fixed noise line, full of the words and
numbers an old message check looked for. The structured result (CONFORMANCE_RESULT_FILE) and the
wire are untouched, so every verdict must stay the same (tests/test_conformance_noise.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: What every error of a noisy client says instead of its own message.
NOISE = "resized dialect SMG 3 4 7 8 POLL-5 DIALECT-1 TOPO-1 sum W: every word of it is noise"


def _noisy(func: Callable[..., object]) -> Callable[..., None]:
    def run(*args: Any, **kwargs: Any) -> None:
        try:
            func(*args, **kwargs)
        except Exception:
            raise RuntimeError(NOISE) from None

    return run


def __getattr__(name: str) -> Callable[..., None]:
    if name == "spec":
        from conformance.examples.spec_client import run

        return _noisy(run)
    if name.startswith("zoo__"):
        from conformance.examples import zoo

        return _noisy(getattr(zoo, name.removeprefix("zoo__")))
    raise AttributeError(name)
