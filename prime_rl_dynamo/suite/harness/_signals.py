"""SIGTERM as SystemExit while a fleet runs, so that ``with`` blocks and atexit stop its processes.

A SIGTERM to the harness process would otherwise end it without running either. Each fleet
installs its own ``SigtermGuard`` on start and uninstalls it on stop; guards of fleets running at
the same time stack, and the last one out restores what was there before the first.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any

__all__ = ["SigtermGuard"]


class SigtermGuard:
    """The SIGTERM handler of one fleet: raises ``SystemExit(128 + signum)``.

    Installed only from the main thread and only when SIGTERM has its default action (or another
    guard's): a handler somebody else set is left alone.
    """

    def __init__(self) -> None:
        self.previous: Any = None
        self.installed = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    def install(self) -> bool:
        """Become the SIGTERM handler; False when that is not ours to change."""
        if self.installed or threading.current_thread() is not threading.main_thread():
            return False
        current = signal.getsignal(signal.SIGTERM)
        if current is not signal.SIG_DFL and not isinstance(current, SigtermGuard):
            return False
        self.previous = current
        signal.signal(signal.SIGTERM, self)
        self.installed = True
        return True

    def uninstall(self) -> None:
        """Stop handling SIGTERM. The handler on top is replaced by the nearest one below it that
        is still installed (or by the original); a guard below the top just steps out of the way.
        From another thread the handler stays until a guard uninstalls from the main thread."""
        if not self.installed:
            return
        self.installed = False
        if threading.current_thread() is not threading.main_thread():
            return
        current = signal.getsignal(signal.SIGTERM)
        if not isinstance(current, SigtermGuard) or current.installed:
            return
        below = current.previous
        while isinstance(below, SigtermGuard) and not below.installed:
            below = below.previous
        signal.signal(signal.SIGTERM, below)
