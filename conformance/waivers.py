"""Waiver files: known deviations of a target, reported as "waived" instead of failing a run.

A waiver names a requirement (optionally one check of it), says why, and may expire. A fail or
warn it matches becomes *waived* (still reported, with the reason); after its expiry date it
waives nothing and the matched result fails, so a forgotten waiver cannot hide a regression.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from conformance.results import Result, Status

__all__ = [
    "BUNDLED",
    "EXPIRED",
    "Waiver",
    "WaiverError",
    "apply_waivers",
    "expired_line",
    "load_waivers",
    "waiver_path",
]

#: What an expired waiver does to a run, as every report says it.
EXPIRED = "the run fails until the waiver is renewed or removed"

#: Waiver files shipped with the package, by name (``--waivers dynamo-1.6.1``).
BUNDLED = Path(__file__).resolve().parent / "deviations"


# Control characters and lone surrogates: a reason is shown in every report.
_ACTING = frozenset(chr(c) for c in [*range(0x20), *range(0x7F, 0xA0), *range(0xD800, 0xE000)]) - {
    "\n",
    "\t",
}


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


def expired_line(record: Mapping[str, Any]) -> str:
    """One line naming an expired waiver (a record of ``apply_waivers``, as the JSON report's
    ``waivers`` holds it): how the terminal, JUnit (both routes) and ``report diff`` say it."""
    name = record.get("check") or record.get("requirement")
    return f"waiver of {name} expired on {record.get('expires')}: {EXPIRED}"


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
    from prime_rl_dynamo.requirements import resolve_requirements

    source = waiver_path(path)
    data = _parse(source)
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
        bad = next((i for i, c in enumerate(reason) if c in _ACTING), None)
        if bad is not None:
            raise WaiverError(
                f"{where}: expected a reason of printable text; found a control character or "
                f"a lone surrogate (U+{ord(reason[bad]):04X}) at position {bad}"
            )
        try:
            (requirement,) = resolve_requirements([str(entry.get("requirement", ""))], where)
        except ValueError as exc:
            raise WaiverError(str(exc)) from None
        check = entry.get("check")
        if check is not None:
            check = _check_id(str(check), requirement, where)
        out.append(
            Waiver(
                requirement=requirement,
                reason=reason.strip(),
                check=check,
                expires=_date(entry.get("expires"), where),
            )
        )
    return out


def _parse(source: Path) -> Any:
    """The file's data: JSON when it reads as JSON (tabs and all), else YAML without anchors or
    aliases (an alias bomb expands to gigabytes) and without implicit dates (``expires`` is
    judged by ``_date``, which names the entry)."""
    import yaml

    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        shipped = ", ".join(sorted(p.stem for p in BUNDLED.glob("*.yaml")))
        raise WaiverError(
            f"waiver file {source}: {exc.strerror or exc}; a bare name picks a shipped file: "
            f"{shipped} (conformance/deviations/)"
        ) from None
    except UnicodeDecodeError as exc:
        raise WaiverError(
            f"waiver file {source}: expected UTF-8 text; found byte 0x{exc.object[exc.start]:02x} "
            f"at offset {exc.start}"
        ) from None
    if text.lstrip().startswith(("{", "[")):
        try:
            return json.loads(text)
        except RecursionError:
            raise WaiverError(f"waiver file {source}: expected JSON; nested too deep") from None
        except ValueError:
            pass  # YAML flow style reads as JSON's superset
    loader = _loader()
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                line = event.start_mark.line + 1 if event.start_mark else "?"
                raise WaiverError(
                    f"waiver file {source}, line {line}: expected plain YAML; found an "
                    "anchor or alias (& or *), which a waiver file does not use"
                )
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise WaiverError(
            f"waiver file {source}: expected YAML or JSON, found text that is not YAML: {first}"
        ) from None
    except RecursionError:
        raise WaiverError(f"waiver file {source}: expected YAML or JSON; nested too deep") from None


def _loader() -> Any:
    import yaml

    class Loader(yaml.SafeLoader):
        """SafeLoader without implicit timestamps: ``2027-02-30`` stays text for ``_date``."""

    Loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    return Loader


def _check_id(check: str, requirement: str, where: str) -> str:
    """A waiver's check ID as the registry spells it (matched case-insensitively), or WaiverError
    naming the nearest one: an unknown ID would waive nothing, silently."""
    import difflib

    from conformance.registry import all_checks

    known = [c.id for c in all_checks() if c.requirement == requirement]
    spelled = {k.upper(): k for k in known}
    if check.strip().upper() in spelled:
        return spelled[check.strip().upper()]
    near = difflib.get_close_matches(check, known, n=1, cutoff=0.5)
    hint = f"; did you mean {near[0]}?" if near else ""
    raise WaiverError(
        f"{where}: expected a check ID of {requirement} ({', '.join(known) or 'it has none'}); "
        f"found {check[:80]!r}{hint}"
    )


def _date(value: Any, where: str) -> datetime.date | None:
    if value is None:
        return None
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return value  # an explicit !!timestamp date
    text = str(value) if isinstance(value, str | int) else None
    try:
        if text is None:
            raise ValueError
        return datetime.date.fromisoformat(text.strip())
    except ValueError:
        raise WaiverError(
            f"{where}: expected expires to be a date YYYY-MM-DD (a day that exists, no time); "
            f"found {str(value)[:40]!r}"
        ) from None


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
