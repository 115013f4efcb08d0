"""Progress of a wait for a ready snapshot: one status line on a terminal, refreshed in place.

``DiscoveryClient.wait_ready`` reports a :class:`WaitStatus` after every poll; on a terminal the
default sink rewrites one line of stderr with what the last snapshot lacked, and clears it when the
wait ends. Anything that is not a terminal (CI logs, pipes, pytest's capture) gets nothing.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from prime_rl_dynamo.requirements import Reason
from prime_rl_dynamo.text import clip

__all__ = ["ProgressSink", "TerminalStatus", "WaitStatus", "progress_sink"]

#: Seconds between two redraws of the status line (polls without delay would otherwise flicker).
_MIN_REDRAW = 0.1


@dataclass(frozen=True, slots=True)
class WaitStatus:
    """Where a wait for a ready snapshot stands after one poll."""

    url: str
    polls: int
    elapsed: float  # seconds since the wait started
    timeout: float  # the wait's budget in seconds
    reasons: tuple[Reason, ...] = ()  # why the last snapshot was not ready
    failure: str | None = None  # the last poll's transport failure, when it failed

    def line(self) -> str:
        """One line: how long, and what the last snapshot lacked (the URL is the caller's)."""
        head = f"not ready after {self.elapsed:.1f} of {self.timeout:g} s, poll {self.polls}"
        if self.failure:
            return f"{head}: last poll failed: {self.failure}"
        if self.reasons:
            return f"{head}: " + "; ".join(str(r) for r in self.reasons)
        return head


ProgressSink = Callable[[WaitStatus], None]


class TerminalStatus:
    """Writes each status over the previous one on a terminal stream; ``close`` erases it."""

    def __init__(self, stream: TextIO, clock: Callable[[], float] = time.monotonic) -> None:
        self._stream = stream
        self._clock = clock
        self._last = float("-inf")
        self._shown = False

    def _width(self) -> int:
        try:
            columns = os.get_terminal_size(self._stream.fileno()).columns
        except (OSError, ValueError):
            columns = 0
        return max(20, columns) if columns else 80

    def __call__(self, status: WaitStatus) -> None:
        now = self._clock()
        if now - self._last < _MIN_REDRAW:
            return
        self._last = now
        # One physical line, whatever the reasons hold, clipped to the terminal's width.
        text = clip(" ".join(status.line().split()), self._width() - 1)
        self._write(f"\r{text}\x1b[K")
        self._shown = True

    def close(self) -> None:
        """Erase the status line (the command's own output follows on a clean line)."""
        if self._shown:
            self._write("\r\x1b[K")
            self._shown = False

    def _write(self, text: str) -> None:
        try:
            self._stream.write(text)
            self._stream.flush()
        except (
            OSError,
            ValueError,
        ):  # a closed or vanished terminal ends the display, not the wait
            self._shown = False


def progress_sink(progress: bool | ProgressSink | None) -> ProgressSink | None:
    """The sink for a ``progress`` argument: None (auto) shows a status line when stderr is a
    terminal, True always on stderr, False never, a callable receives every status."""
    if progress is False:
        return None
    if callable(progress):
        return progress
    stream = sys.stderr
    if progress is None:
        try:
            if stream is None or not stream.isatty():
                return None
        except (AttributeError, ValueError):
            return None
    return TerminalStatus(stream)
