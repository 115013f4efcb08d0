"""Progress reporting for long benchmark runs: a rich display on stderr, or nothing at all.

Benchmarks call ``reporter.phase(title, total)`` and ``advance()`` on what it returns; the CLI
passes a :class:`RichReporter`, tests and library callers the silent default.
"""

from __future__ import annotations

import sys
from typing import Any, Protocol

__all__ = ["NullReporter", "Phase", "Reporter", "RichReporter"]


class Phase(Protocol):
    """One bar of the display."""

    def advance(self, steps: int = 1) -> None: ...

    def note(self, text: str) -> None: ...

    def done(self) -> None: ...


class Reporter(Protocol):
    """Where benchmarks say how far they got."""

    def phase(self, title: str, total: int) -> Phase: ...

    def log(self, text: str) -> None: ...


class _NullPhase:
    def advance(self, steps: int = 1) -> None:
        pass

    def note(self, text: str) -> None:
        pass

    def done(self) -> None:
        pass


class NullReporter:
    """Reports nothing (library calls and tests)."""

    def phase(self, title: str, total: int) -> Phase:
        return _NullPhase()

    def log(self, text: str) -> None:
        pass


class _RichPhase:
    def __init__(self, progress: Any, task: Any, title: str) -> None:
        self._progress = progress
        self._task = task
        self._title = title

    def advance(self, steps: int = 1) -> None:
        self._progress.advance(self._task, steps)

    def note(self, text: str) -> None:
        self._progress.update(self._task, description=f"{self._title}: {text}")

    def done(self) -> None:
        task = self._progress.tasks[self._progress.task_ids.index(self._task)]
        self._progress.update(self._task, completed=task.total, description=self._title)


class RichReporter:
    """A rich progress display on stderr; use as a context manager."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self._progress = Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(file=sys.stderr),
            transient=False,
        )

    def __enter__(self) -> RichReporter:
        self._progress.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._progress.stop()

    def phase(self, title: str, total: int) -> Phase:
        task = self._progress.add_task(title, total=max(total, 1))
        return _RichPhase(self._progress, task, title)

    def log(self, text: str) -> None:
        self._progress.console.log(text)
