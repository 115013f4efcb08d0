"""The check registry: every conformance check, its requirement ID, level and profile.

Checks are plain functions registered with ``@check(profile, requirement, slug, title)``. A check
returns ``None`` or a short note on success, raises ``Failed`` when the target breaks the
requirement, ``Skipped`` when it cannot apply, and ``CheckError`` when the suite cannot decide.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prime_rl_dynamo.requirements import requirement

__all__ = [
    "LISTENER_PROFILES",
    "LISTING_PROFILES",
    "PROFILES",
    "Check",
    "CheckError",
    "Failed",
    "Skipped",
    "all_checks",
    "check",
    "fail_on",
]

#: The suite's profiles, in the order a run executes them.
PROFILES: tuple[str, ...] = ("frontend", "frontend-v2", "workers", "client", "roundtrip")
#: The profiles that judge the target's own listing: what a run against a URL executes unless
#: told otherwise (the others stand up the fleets they judge).
LISTING_PROFILES: tuple[str, ...] = ("frontend", "workers")
#: The profiles that judge one RL listener shared by the run: the URL given, or the embedded
#: fleet the run stands up when none is.
LISTENER_PROFILES: tuple[str, ...] = ("frontend", "frontend-v2", "workers")

# Module that registers each profile's checks (imported lazily, so `import conformance` is cheap).
_PROFILE_MODULES = {
    "frontend": "conformance.frontend",
    "frontend-v2": "conformance.frontend_v2",
    "workers": "conformance.workers",
    "client": "conformance.client",
    "roundtrip": "conformance.roundtrip",
}


class Failed(Exception):
    """The target breaks the check's requirement; the message says expected / found / where."""

    def __init__(
        self,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        violations: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(message)
        self.details = dict(details or {})
        # Structured form of each violation: requirement, pointer, worker, expected, found, message.
        self.violations = list(violations or [])


class Skipped(Exception):
    """The check does not apply to this target; the message is the reason."""


def fail_on(problems: list[str], where: str) -> None:
    """Raise Failed naming ``where`` and every problem found, when any was."""
    if problems:
        raise Failed(f"{where}: " + "; ".join(problems))


class CheckError(Exception):
    """The suite or the target's harness broke: nothing was decided about conformance."""


CheckFunction = Callable[[Any], "str | None"]


@dataclass(frozen=True)
class Check:
    """One registered check."""

    profile: str
    requirement: str
    slug: str
    title: str
    func: CheckFunction

    @property
    def id(self) -> str:
        """Stable check ID: ``<REQUIREMENT>::<slug>`` (what pytest items and reports use)."""
        return f"{self.requirement}::{self.slug}"

    @property
    def level(self) -> str:
        """MUST / SHOULD / MAY, from the requirement catalog."""
        return requirement(self.requirement).level


_REGISTRY: dict[str, Check] = {}


def check(
    profile: str, requirement_id: str, slug: str, title: str
) -> Callable[[CheckFunction], CheckFunction]:
    """Register a check of ``profile`` verifying ``requirement_id`` (which must be in the catalog)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected one of {PROFILES}")
    requirement(requirement_id)  # unknown IDs are a programming error: fail at import

    def register(func: CheckFunction) -> CheckFunction:
        item = Check(profile, requirement_id, slug, title, func)
        if item.id in _REGISTRY and _REGISTRY[item.id].func is not func:
            raise ValueError(f"check {item.id} registered twice")
        _REGISTRY[item.id] = item
        return func

    return register


def _load(profiles: tuple[str, ...] = PROFILES) -> None:
    for name in profiles:
        importlib.import_module(_PROFILE_MODULES[name])


def all_checks(profiles: tuple[str, ...] | list[str] | None = None) -> list[Check]:
    """Every registered check of these profiles (all by default), profile by profile."""
    wanted = tuple(profiles) if profiles else PROFILES
    for name in wanted:
        if name not in PROFILES:
            raise ValueError(f"unknown profile {name!r}; expected one of {', '.join(PROFILES)}")
    _load(wanted)
    return [c for p in wanted for c in _REGISTRY.values() if c.profile == p]
