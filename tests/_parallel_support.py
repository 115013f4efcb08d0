"""Independent steps of one test run side by side: where a test starts several processes or
requests that do not depend on each other, most of each is waiting (an interpreter's start, a
deadline, a retry, a fleet's answer), so running them at once saves that wait, not work."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

__all__ = ["side_by_side"]


def side_by_side(*steps: Callable[[], T]) -> list[T]:
    """Run ``steps`` at once, each in its own thread, and return their results in the order
    given once every step has ended (a step that raised raises here, the first in that order)."""
    with ThreadPoolExecutor(len(steps)) as pool:
        futures = [pool.submit(step) for step in steps]
    return [future.result() for future in futures]
