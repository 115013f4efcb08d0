"""Shared test configuration: hypothesis profiles (deterministic under CI=true)."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, settings

# hypothesis keeps its state (example database, constants) under the user's cache directory, not
# in the checkout, for these tests and for every process they start; a value set by the caller wins.
os.environ.setdefault(
    "HYPOTHESIS_STORAGE_DIRECTORY",
    str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        / "prime-rl-dynamo"
        / "hypothesis-tests"
    ),
)

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    print_blob=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") == "true" else "dev")
