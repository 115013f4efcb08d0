"""Waiver files: known deviations of a target, reported as "waived" instead of failing a run.

A waiver names a requirement (optionally one check of it), says why, and may expire. A fail or
warn it matches becomes *waived* (still reported, with the reason); after its expiry date it
waives nothing and the matched result fails, so a forgotten waiver cannot hide a regression.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from conformance.results import Result, Status

__all__ = ["BUNDLED", "Waiver", "WaiverError", "apply_waivers", "load_waivers", "waiver_path"]

#: Waiver files shipped with the package, by name (``--waivers dynamo-1.6.1``).
BUNDLED = Path(__file__).resolve().parent / "deviations"


class WaiverError(ValueError):
    """The waiver file cannot be used (a usage error: it names the file and the entry)."""


@dataclass(frozen=True)
class Waiver:
    """One known deviation: a requirement (or one of its checks), why, and until when."""

    requirement: str
    reason: str
    check: str | None = None  # a check ID of the requirement; None: every check of it
    expires: datetime.date | None = None  # the last day it applies; None: no expiry

    def matches(self, result: Result) -> bool:
        """Whether this waiver covers the result's check."""
        if result.requirement != self.requirement:
            return False
        return self.check is None or result.check == self.check

    def expired(self, today: datetime.date) -> bool:
        """Whether the expiry date has passed."""
        return self.expires is not None and today > self.expires

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "requirement": self.requirement,
            "check": self.check,
            "reason": self.reason,
            "expires": self.expires.isoformat() if self.expires else None,
        }


def waiver_path(path: str | Path) -> Path:
    """The file ``path`` names: itself, or a bundled waiver file by name (``dynamo-1.6.1``)."""
    given = Path(path)
    bundled = BUNDLED / f"{given.name.removesuffix('.yaml')}.yaml"
    if not given.exists() and given.parent == Path(".") and bundled.exists():
        return bundled
    return given


def load_waivers(path: str | Path) -> list[Waiver]:
    """Read a waiver file (YAML or JSON): ``waivers: [{requirement, reason, check?, expires?}]``.

    A bare name such as ``dynamo-1.6.1`` names a file shipped in ``conformance/deviations/``.
    """
    import yaml

    from prime_rl_dynamo.requirements import resolve_requirements

    source = waiver_path(path)
    try:
        data = yaml.safe_load(source.read_text(encoding="utf-8"))
    except OSError as exc:
        shipped = ", ".join(sorted(p.stem for p in BUNDLED.glob("*.yaml")))
        raise WaiverError(
            f"waiver file {source}: {exc.strerror or exc}; a bare name picks a shipped file: "
            f"{shipped} (conformance/deviations/)"
        ) from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise WaiverError(f"waiver file {source}: not YAML: {str(exc).splitlines()[0]}") from None
    entries = data.get("waivers") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise WaiverError(f"waiver file {source}: expected a mapping with a 'waivers' list")
    out = []
    for index, entry in enumerate(entries):
        where = f"waiver file {source}, waivers[{index}]"
        if not isinstance(entry, dict):
            raise WaiverError(f"{where}: expected a mapping, found {type(entry).__name__}")
        unknown = set(entry) - {"requirement", "check", "reason", "expires"}
        if unknown:
            raise WaiverError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
        reason = entry.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise WaiverError(f"{where}: every waiver needs a reason (a non-empty string)")
        try:
            (requirement,) = resolve_requirements([str(entry.get("requirement", ""))], where)
        except ValueError as exc:
            raise WaiverError(str(exc)) from None
        check = entry.get("check")
        if check is not None and not str(check).upper().startswith(requirement + "::"):
            raise WaiverError(f"{where}: check {check!r} is not a check of {requirement}")
        out.append(
            Waiver(
                requirement=requirement,
                reason=reason.strip(),
                check=str(check) if check is not None else None,
                expires=_date(entry.get("expires"), where),
            )
        )
    return out


def _date(value: Any, where: str) -> datetime.date | None:
    if value is None or isinstance(value, datetime.date):
        return value
    try:
        return datetime.date.fromisoformat(str(value))
    except ValueError:
        raise WaiverError(f"{where}: expires must be a date YYYY-MM-DD, found {value!r}") from None


def apply_waivers(
    results: Sequence[Result], waivers: Sequence[Waiver], today: datetime.date | None = None
) -> tuple[list[Result], list[dict[str, Any]]]:
    """The results with waived fails and warns marked, and each waiver with how it applied.

    A waiver's ``state`` is ``applied`` (it waived at least one result), ``unused`` (nothing it
    names failed: the deviation may be fixed) or ``expired`` (past its date: what it names fails).
    """
    today = today or datetime.datetime.now(datetime.timezone.utc).date()
    out: list[Result] = []
    used: dict[int, list[str]] = {}
    for result in results:
        waiver = next((w for w in waivers if w.matches(result)), None)
        if waiver is None or result.status not in (Status.FAIL, Status.WARN):
            out.append(result)
            continue
        used.setdefault(id(waiver), []).append(result.check)
        note = {"waiver": waiver.to_dict()}
        if waiver.expired(today):
            assert waiver.expires is not None
            out.append(
                replace(
                    result,
                    status=Status.FAIL,
                    message=f"the waiver of {result.requirement} expired on "
                    f"{waiver.expires.isoformat()} (its reason: {waiver.reason}); the "
                    f"deviation is still there:\n{result.message}",
                    details={**result.details, **note},
                )
            )
            continue
        until = f", until {waiver.expires.isoformat()}" if waiver.expires else ""
        out.append(
            replace(
                result,
                status=Status.WAIVED,
                message=f"waived ({waiver.reason.rstrip('.')}{until}); found {result.status.value}:\n"
                f"{result.message}",
                details={**result.details, **note},
            )
        )
    records = []
    for w in waivers:
        state = "expired" if w.expired(today) else "applied" if id(w) in used else "unused"
        records.append({**w.to_dict(), "state": state, "checks": used.get(id(w), [])})
    return out, records
