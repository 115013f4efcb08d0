"""Keeping a started fleet up until Ctrl-C or SIGTERM, for ``serve`` and ``dynamo up``.

Both print where everything listens (JSON with ``--json``), then wait in bounded steps so that an
interrupt is handled promptly, and say so when the fleet stops by itself (exit 1).
"""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from prime_rl_dynamo.exitcodes import ExitCode

if TYPE_CHECKING:
    from prime_rl_dynamo.suite.fleet import Fleet

__all__ = ["serve_until_interrupted", "stop_on_signals"]

#: Seconds of one bounded wait: how soon an interrupt or a stopped fleet is noticed.
_STEP = 0.5


def stop_on_signals(*, sigint: bool = False) -> None:
    """Make SIGTERM (a process manager's stop), and with ``sigint`` SIGINT, raise
    KeyboardInterrupt, so that they stop the fleet as cleanly as Ctrl-C. SIGINT needs setting
    explicitly where a shell starts background jobs with it ignored. Only the main thread can
    set handlers; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGTERM, _interrupt)
    if sigint:
        signal.signal(signal.SIGINT, _interrupt)


def serve_until_interrupted(
    fleet: Fleet,
    info: dict[str, Any],
    lines: Iterable[str],
    *,
    as_json: bool,
    stopped: str,
    every_10s: Callable[[], object] | None = None,
) -> int:
    """Print ``info`` as JSON (``as_json``) or ``lines`` and how to stop, then wait while
    ``fleet.running``: 1 once the fleet stopped by itself (after printing ``stopped``). A Ctrl-C
    comes out as KeyboardInterrupt; the caller stops the fleet either way. ``every_10s`` runs
    every ten seconds of waiting (housekeeping such as trimming logs)."""
    if as_json:
        print(json.dumps(info, indent=2), flush=True)
    else:
        for line in lines:
            print(line)
        print("serving; Ctrl-C to stop", flush=True)
    idle = threading.Event()
    steps = 0
    while fleet.running and not idle.wait(_STEP):
        steps += 1
        if every_10s is not None and steps % round(10 / _STEP) == 0:
            every_10s()
    print(stopped, flush=True)
    return ExitCode.FAIL


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt
