"""The requirement catalog of schema/SPEC.md as data: IDs, levels, parties, who enforces each."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from functools import cache

from prime_rl_dynamo.resources import load_json

__all__ = [
    "Reason",
    "Requirement",
    "all_requirements",
    "requirement",
    "resolve_requirements",
    "v2_requirements",
]


@dataclass(frozen=True, slots=True)
class Requirement:
    """One numbered requirement of the specification."""

    id: str
    level: str  # MUST | SHOULD | MAY
    party: str  # server | worker | client
    enforced_by: str  # schema | validator | suite | client
    title: str
    since: str


@dataclass(frozen=True, slots=True)
class Reason:
    """Why something was refused or judged: the requirement it breaks and what was seen.

    Code decides on ``requirement`` (and ``worker``), never on the wording of ``message``;
    ``str()`` is the line a person reads: ``"READY-1: dynamo.backend.rl#7 reports error: ..."``.
    """

    requirement: str
    message: str
    #: The worker the reason is about, as its label, when it is about one.
    worker: str | None = None

    def __str__(self) -> str:
        return f"{self.requirement}: {self.message}"


@cache
def all_requirements() -> dict[str, Requirement]:
    """Every requirement by ID, in specification order."""
    doc = load_json("requirements.v1.json")
    return {item["id"]: Requirement(**item) for item in doc["requirements"]}


@cache
def v2_requirements() -> dict[str, Requirement]:
    """What the draft protocol 2 adds (schema/requirements.v2.json, SPEC-v2.md), by ID."""
    doc = load_json("requirements.v2.json")
    return {item["id"]: Requirement(**item) for item in doc["requirements"]}


def requirement(req_id: str) -> Requirement:
    """Look one requirement up (v1, then the v2 draft); unknown IDs are a programming error."""
    try:
        return all_requirements()[req_id]
    except KeyError:
        pass
    try:
        return v2_requirements()[req_id]
    except KeyError:
        raise KeyError(
            f"no requirement {req_id!r} in schema/requirements.v1.json or requirements.v2.json"
        ) from None


def resolve_requirements(
    ids: tuple[str, ...] | list[str], flag: str = "--requirement"
) -> tuple[str, ...]:
    """Requirement IDs as the catalog spells them (case-insensitive; protocol 1's and the protocol 2
    draft's), or a ValueError naming ``flag`` and the nearest known ID for a near miss."""
    # Protocol 1's catalog and the protocol 2 draft's V2-* IDs (checked by frontend-v2).
    known = {r.upper(): r for r in [*all_requirements(), *v2_requirements()]}
    out = []
    for raw in ids:
        key = str(raw).strip().upper()
        if key in known:
            out.append(known[key])
            continue
        near = difflib.get_close_matches(key, list(known), n=2, cutoff=0.6)
        hint = f"; did you mean {' or '.join(known[n] for n in near)}?" if near else ""
        raise ValueError(
            f"{flag}: unknown requirement ID {raw!r}{hint} "
            "(prime-rl-dynamo conformance --list shows every ID)"
        )
    return tuple(dict.fromkeys(out))
