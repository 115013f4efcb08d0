"""The log records a client under test emits, captured into the report instead of the terminal.

A client run in-process logs through Python's ``logging``; with no handler configured its warnings
reach stderr through ``logging.lastResort`` and land before the suite's summary (the pool's
expected ``CRED-3: driving engine ... without credentials`` looks like an error there).
``captured`` holds every record of warning level or above that a thread other than the suite's
own emits while a client runs, and lets the rest through as before.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["captured"]

#: Loggers of the suite's own instruments (the fleets it stands up), never the client's.
_INSTRUMENTS = (
    "uvicorn",
    "prime_rl_dynamo.suite.reference",
    "prime_rl_dynamo.suite.harness",
    "httpx",
)


class _Capture(logging.Handler):
    def __init__(self, suite_thread: int) -> None:
        super().__init__(logging.WARNING)
        self.records: list[dict[str, Any]] = []
        self._suite_thread = suite_thread
        self._others = [h for h in logging.getLogger().handlers if h is not self]

    def emit(self, record: logging.LogRecord) -> None:
        ours = record.thread == self._suite_thread or record.name.startswith(_INSTRUMENTS)
        if not ours:
            self.records.append(
                {
                    "level": record.levelname,
                    "logger": record.name,
                    "thread": record.threadName,
                    "message": record.getMessage(),
                }
            )
        elif not self._others and logging.lastResort is not None:
            logging.lastResort.handle(record)  # what would have happened without this handler


@contextlib.contextmanager
def captured() -> Iterator[list[dict[str, Any]]]:
    """While inside: the client's warning-or-worse records go into the yielded list, not stderr."""
    handler = _Capture(threading.get_ident())
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler.records
    finally:
        root.removeHandler(handler)
