"""The ``client`` profile (black box): a client under test against generated reference fleets."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from conformance.registry import Skipped
from conformance.runner import RunContext, profile_setup


@profile_setup("client")
@contextlib.contextmanager
def _setup(run: RunContext) -> Iterator[None]:
    raise Skipped("the client profile is being built")
    yield
