"""Where the tools the suite drives keep their state: the user's cache directory, not the cwd.

hypothesis writes ``.hypothesis/`` (constants, example database) into the working directory unless
told otherwise; a conformance run points it at ``$XDG_CACHE_HOME/prime-rl-dynamo/hypothesis``
(``~/.cache/...``) for its duration and puts the previous setting back afterwards, so a pytest
session's own hypothesis tests are not moved. ``HYPOTHESIS_STORAGE_DIRECTORY`` still wins.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["cache_dir", "tool_state_in_cache"]

_HOME = "__hypothesis_home_directory"  # hypothesis.configuration's module global


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/prime-rl-dynamo`` (default ``~/.cache/prime-rl-dynamo``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "prime-rl-dynamo"


@contextlib.contextmanager
def tool_state_in_cache() -> Iterator[None]:
    """During the block, hypothesis stores under :func:`cache_dir` (unless the user chose)."""
    if os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        yield
        return
    try:
        from hypothesis import configuration
    except ImportError:  # no hypothesis: nothing will write
        yield
        return
    previous = vars(configuration).get(_HOME)
    configuration.set_hypothesis_home_dir(cache_dir() / "hypothesis")
    try:
        yield
    finally:
        configuration.set_hypothesis_home_dir(previous)
