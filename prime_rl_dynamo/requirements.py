"""The requirement catalog of schema/SPEC.md as data: IDs, levels, parties, who enforces each."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from prime_rl_dynamo._resources import load_json

__all__ = ["Requirement", "all_requirements", "requirement"]


@dataclass(frozen=True, slots=True)
class Requirement:
    """One numbered requirement of the specification."""

    id: str
    level: str  # MUST | SHOULD | MAY
    party: str  # server | worker | client
    enforced_by: str  # schema | validator | suite | client
    title: str
    since: str


@cache
def all_requirements() -> dict[str, Requirement]:
    """Every requirement by ID, in specification order."""
    doc = load_json("requirements.v1.json")
    return {item["id"]: Requirement(**item) for item in doc["requirements"]}


def requirement(req_id: str) -> Requirement:
    """Look one requirement up; unknown IDs are a programming error."""
    try:
        return all_requirements()[req_id]
    except KeyError:
        raise KeyError(f"no requirement {req_id!r} in schema/requirements.v1.json") from None
