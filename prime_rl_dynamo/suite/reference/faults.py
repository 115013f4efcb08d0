"""Fault specifications of the reference frontend: parsing ``NAME[=VALUE][:COUNT]`` strings.

A fault string names one way the RL listener misbehaves on purpose; ``:COUNT`` limits it to the
first COUNT listing requests so that a client can be seen to recover. Pure parsing, no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from prime_rl_dynamo.errors import ConfigError

__all__ = ["ENGINE_FAULTS", "FAULTS", "Fault", "parse_fault", "parse_faults"]

#: Every fault name, with what its value means (None: takes no value) and a one-line description.
FAULTS: dict[str, tuple[str | None, str]] = {
    "latency": ("MS", "wait MS milliseconds before answering"),
    "discovery-failed": (None, 'answer 500 {"error":"discovery_failed","message":...}'),
    "rate-limit": ("RETRY_AFTER_S", "answer 429 with Retry-After: RETRY_AFTER_S"),
    "unavailable": (None, "answer 503"),
    "reset": (None, "close the connection without answering (TCP reset)"),
    "truncate": (None, "send half the body under the full Content-Length, then close"),
    "malformed-json": (None, "send a 200 application/json body that is not JSON"),
    "break": ("REQUIREMENT_ID", "send a body that breaks exactly that one requirement"),
    "error-workers": ("N", "list N workers (chosen by the seed) with an error"),
    "churn": ("SECONDS", "change membership every SECONDS (leave, resize, join; by the seed)"),
    "gzip": (None, "send the body with Content-Encoding: gzip"),
    "oversized": ("BYTES", "pad the body past BYTES with a large unknown field (still valid)"),
    "padded": (
        "BYTES",
        "pad the body past BYTES with trailing whitespace (still valid, no new field)",
    ),
    "slow": ("BYTES_PER_SECOND", "dribble the body at BYTES_PER_SECOND"),
    "variant": ("NAME", "serve the listing as a known v1 variant does (VERSION-1)"),
    "v1-only": (None, "ignore Dynamo-RL-Protocol and serve v1 only, as Dynamo 1.6.1 does"),
    "break-v2": ("REQUIREMENT_ID", "under protocol 2, break exactly that V2 requirement"),
    "redirect-host": ("HOST", "answer 307 to the same URL under host name HOST (another origin)"),
    "unknown-fields": (None, "add unknown fields at every level of the body (still valid)"),
    "scope": ("NAMESPACE", "report NAMESPACE as the body's namespace; the workers are unchanged"),
    "lag": ("N", "answer each listing with the body computed N listing requests earlier"),
    "renumber": (None, "list every worker under another instance_id, as if it had restarted"),
    "version": ("N", "send protocol_version N (an integer) in an otherwise valid body"),
    "status": ("CODE", "answer CODE (a 4xx other than 429, say) with an error object"),
    "overload": ("CODE", "while a listing request is answered (each takes 50 ms), others get CODE"),
    "overload-redirect": ("HOST", "while a listing request is answered, others get 307 to HOST"),
    "head-body": (None, "HEAD answers with the GET body on the wire (bypassing the server)"),
    "head-status": ("CODE", "HEAD answers CODE with no body (GET is unchanged)"),
    "no-allow": (None, "other methods answer 405 without an Allow header"),
    "catch-all": (None, "every other path on the listener answers the listing with 200"),
    "etag-counter": (
        None,
        "v2: fingerprint and ETag count requests; If-None-Match, ?wait= ignored",
    ),
    "hold-stale": (None, "v2: ?wait= with a stale If-None-Match is held the whole wait"),
    "body-on-304": (None, "v2: a 304 carries the listing as its body on the wire"),
    "system-health-text": (None, "engines: GET {system_url}/health answers 200 text/plain OK"),
    "engine-status": ("CODE", "engines: POST {system_url}/engine/{route} answers CODE"),
    "engine-text": (None, "engines: engine route replies carry Content-Type text/plain"),
    "admin-health": ("CODE", "engines: GET {admin_base_url}/health answers CODE"),
}

#: Faults that act on the engines' servers rather than on listing requests (``:COUNT`` does not
#: apply to them: they act on every request of their kind).
ENGINE_FAULTS = ("system-health-text", "engine-status", "engine-text", "admin-health")


def _nearest(given: str | None, known: Iterable[str]) -> str:
    """``" (did you mean X?)"`` for the closest of ``known`` ('' when none is close)."""
    import difflib

    close = difflib.get_close_matches(str(given), list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


# Faults whose value is a number, with the smallest value that makes sense.
_NUMERIC: dict[str, float] = {
    "latency": 0,
    "rate-limit": 0,
    "error-workers": 1,
    "churn": 0.01,
    "oversized": 1,
    "padded": 1,
    "slow": 1,
    "version": 0,
    "lag": 1,
    "status": 100,
    "overload": 100,
    "head-status": 100,
    "engine-status": 100,
    "admin-health": 100,
}

# And the largest: past these a fault stops being a misbehaviour a client can be seen to survive
# and becomes a listener that never answers (latency=inf) or a body that never fits in memory.
_MAXIMUM: dict[str, float] = {
    "latency": 3_600_000,  # one hour, in ms
    "rate-limit": 86_400,  # one day, in s
    "error-workers": 1_000_000,
    "churn": 86_400,
    "oversized": 1 << 30,
    "padded": 1 << 30,
    "slow": 1 << 30,
    "version": 1_000_000,  # a protocol_version far past any the catalog names
    "lag": 1000,
    "status": 599,  # the last HTTP status code
    "overload": 599,
    "head-status": 599,
    "engine-status": 599,
    "admin-health": 599,
}

_SYNTAX = re.compile(
    r"^(?P<name>[a-z][a-z0-9_-]*)(?:=(?P<value>[^:]*))?"
    r"(?::(?:(?P<first>[0-9]+)-)?(?P<count>[0-9]+))?$"
)


@dataclass(frozen=True, slots=True)
class Fault:
    """One parsed fault: ``count`` None means every listing request, else requests ``first`` to
    ``count`` (``:COUNT`` is ``:1-COUNT``; ``:2-2`` is the second request only)."""

    name: str
    value: str | None = None
    count: int | None = None
    first: int = 1

    def active(self, request_number: int) -> bool:
        """Whether the fault applies to the listing request numbered ``request_number`` (from 1)."""
        return self.count is None or self.first <= request_number <= self.count

    @property
    def number(self) -> float:
        """The value as a number (for numeric faults)."""
        return float(self.value) if self.value is not None else 0.0

    def __str__(self) -> str:
        text = self.name if self.value is None else f"{self.name}={self.value}"
        if self.count is None:
            return text
        return f"{text}:{self.count}" if self.first == 1 else f"{text}:{self.first}-{self.count}"


def parse_fault(text: str) -> Fault:
    """Parse one ``NAME[=VALUE][:COUNT]`` string, raising ConfigError with what was expected."""
    match = _SYNTAX.match(text.strip())
    if match is None:
        raise ConfigError(f"fault {text!r}: expected NAME[=VALUE][:COUNT], e.g. rate-limit=1:2")
    name, value, count = match["name"], match["value"], match["count"]
    if name not in FAULTS:
        raise ConfigError(
            f"fault {text!r}: unknown name {name!r}{_nearest(name, FAULTS)}; expected one of "
            f"{sorted(FAULTS)}"
        )
    wanted, _ = FAULTS[name]
    if value == "":
        value = None
    if wanted is None and value is not None:
        raise ConfigError(f"fault {text!r}: {name} takes no value (found {value!r})")
    if wanted is not None and value is None:
        raise ConfigError(f"fault {text!r}: {name} needs a value {wanted}, e.g. {name}=1")
    if name in _NUMERIC and value is not None:
        try:
            number = float(value)
        except ValueError:
            raise ConfigError(
                f"fault {text!r}: {wanted} must be a number, found {value!r}"
            ) from None
        if not math.isfinite(number):
            raise ConfigError(f"fault {text!r}: {wanted} must be a finite number, found {value}")
        if number < _NUMERIC[name]:
            raise ConfigError(
                f"fault {text!r}: {wanted} must be >= {_NUMERIC[name]}, found {value}"
            )
        if number > _MAXIMUM[name]:
            raise ConfigError(
                f"fault {text!r}: {wanted} must be at most {_MAXIMUM[name]:g}, found {value}"
            )
    if name == "break":
        from prime_rl_dynamo.suite.reference.breaks import BREAKS

        if value not in BREAKS:
            raise ConfigError(
                f"fault {text!r}: no body breaks requirement {value!r}{_nearest(value, BREAKS)}; "
                "expected one of "
                f"{', '.join(BREAKS)}"
            )
    if name == "break-v2":
        from prime_rl_dynamo.suite.reference.v2 import V2_BREAKS

        if value not in V2_BREAKS:
            raise ConfigError(
                f"fault {text!r}: no v2 break for {value!r}{_nearest(value, V2_BREAKS)}; expected "
                f"one of {', '.join(V2_BREAKS)}"
            )
    if name == "variant":
        from prime_rl_dynamo.suite.reference.variants import VARIANT_BODIES

        if value not in VARIANT_BODIES:
            raise ConfigError(
                f"fault {text!r}: no known v1 variant {value!r}{_nearest(value, VARIANT_BODIES)}; "
                "expected one of "
                f"{', '.join(VARIANT_BODIES)}"
            )
    first = int(match["first"]) if match["first"] is not None else 1
    if count is not None and not 1 <= first <= int(count):
        raise ConfigError(
            f"fault {text!r}: :FIRST-LAST needs 1 <= FIRST <= LAST, found {first}-{count}"
        )
    return Fault(name, value, int(count) if count is not None else None, first)


def parse_faults(texts: Iterable[str | Fault]) -> tuple[Fault, ...]:
    """Parse several fault strings (already parsed faults pass through)."""
    return tuple(t if isinstance(t, Fault) else parse_fault(t) for t in texts)
