"""The discovery client's side of protocol negotiation (SPEC-v2.md, V2-8): ask for 2, accept 1.

Every GET says ``Dynamo-RL-Protocol: 2, 1``. A server that answers v2 gets conditional GETs
(``If-None-Match``; a ``304`` reuses the last snapshot) and, when the client waits anyway, the
``?wait=`` change feed. A server that answers v1 (Dynamo 1.6.1 ignores the header) is polled as
before; the client says so once. Snapshots handed to the rest of the client are always v1-shaped.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from typing import Any

from prime_rl_dynamo.errors import ProtocolError
from prime_rl_dynamo.v2 import PROTOCOL_HEADER, check_body_v2, parse_v2
from prime_rl_dynamo.violation import Violation
from prime_rl_dynamo.wire import U32_MAX

__all__ = ["Negotiation"]

logger = logging.getLogger("prime_rl_dynamo.client")

_FINGERPRINT = re.compile(r"^[0-9a-f]{32}$")
_HEADER = PROTOCOL_HEADER.lower()


def _fast_v2_ok(parsed: Any) -> bool:
    """The v2 additions of a certainly valid body (the v1 validator checks the rest)."""
    if not isinstance(parsed, dict) or parsed.get("protocol_version") != 2:
        return False
    fp = parsed.get("fingerprint")
    if not isinstance(fp, str) or not _FINGERPRINT.match(fp):
        return False
    workers = parsed.get("workers")
    if not isinstance(workers, list):
        return False
    for w in workers:
        if not isinstance(w, dict):
            return False
        if w.get("health") != ("unhealthy" if "error" in w else "ready"):
            return False
        weights = w.get("weight_version", "x")
        if not isinstance(weights, str) or not weights:
            return False
        layout, size = w.get("parallel"), w.get("world_size")
        if size is None:
            if "parallel" in w:
                return False
            continue
        if not isinstance(layout, dict):
            return False
        product = 1
        for key in ("tensor", "pipeline", "data", "context"):
            part = layout.get(key, 1)
            if type(part) is not int or part < 1 or part > U32_MAX:
                return False
            product *= part
        if product != size or not {"tensor", "pipeline", "data"} <= layout.keys():
            return False
    return True


class Negotiation:
    """Which protocol one discovery URL speaks, its last validator, and the next wait."""

    def __init__(self, url: str, *, enabled: bool = True) -> None:
        self.url = url
        self.enabled = enabled
        self.version: int | None = None  # None until the first listing
        self.etag: str | None = None
        self._cached: Any = None
        self._wait: float | None = None
        self._sent_validator = False  # whether the last GET carried If-None-Match

    # -- the request ---------------------------------------------------------------------------

    def headers(self, base: Mapping[str, str]) -> dict[str, str]:
        """The GET's headers: the versions asked for and, under v2, the last validator."""
        out = dict(base)
        self._sent_validator = False
        if self.enabled:
            out[PROTOCOL_HEADER] = "2, 1"
            if self.version == 2 and self.etag and self._cached is not None:
                out["If-None-Match"] = self.etag
                self._sent_validator = True
        return out

    def params(self) -> dict[str, str] | None:
        """``?wait=`` for the next GET when one was armed and the server speaks v2 (used once)."""
        wait, self._wait = self._wait, None
        if wait and self.version == 2 and self.etag and self._cached is not None:
            return {"wait": f"{wait:g}"}
        return None

    def arm_wait(self, seconds: float) -> bool:
        """Let the next GET wait up to ``seconds`` for a change; False when the server cannot."""
        if seconds > 0 and self.version == 2 and self.etag and self._cached is not None:
            self._wait = seconds
            return True
        self._wait = None
        return False

    def next_delay(self, interval: float, limit: float) -> float:
        """How long to sleep before the next poll: 0 under v2, where the GET itself waits up to
        ``interval`` (at most ``limit``) for a change; ``interval`` under v1."""
        return 0.0 if limit > 0 and self.arm_wait(min(interval, limit)) else interval

    # -- the answer ----------------------------------------------------------------------------

    def not_modified(self, url: str) -> Any:
        """The snapshot a ``304`` stands for (the last one), or a ProtocolError when there is none."""
        # Only an answer to a conditional GET: a 304 to a GET that carried no If-None-Match
        # (the last v2 listing had no ETag) says nothing about the fleet.
        if self.version == 2 and self._cached is not None and self._sent_validator:
            return self._cached
        raise ProtocolError(
            f"HTTP-1: GET {url} answered 304 to a request without a validator",
            violations=[Violation("V2-4", "", "304 without If-None-Match")],
            requirement="HTTP-1",
        )

    def accept(
        self, headers: Mapping[str, str], body: bytes, validate: Callable[[Any], Any]
    ) -> Any:
        """Validate a 200 listing of either version; a v1-shaped snapshot either way."""
        if not (self.enabled and headers.get(_HEADER, "").strip() == "2"):
            if self.enabled and self.version is None:
                logger.info(
                    "%s does not speak protocol 2 (no %s header in its answer): falling back to "
                    "protocol 1 polling",
                    self.url,
                    PROTOCOL_HEADER,
                )
            self.version, self.etag, self._cached = 1, None, None
            return validate(body)
        # One validator for both versions: v1's rules read the bytes (repeated members, numbers,
        # nesting), then the v2 rules; the body is never re-serialised (1e999 stays as v1 has it).
        parsed, violations = parse_v2(body)
        if parsed is not None and not violations and not _fast_v2_ok(parsed):
            violations = check_body_v2(parsed)
        if violations or not isinstance(parsed, dict):
            violations = violations or [Violation("BODY-2", "", "expected a JSON object")]
            ids = ", ".join(dict.fromkeys(v.requirement for v in violations))
            raise ProtocolError(
                f"discovery body (protocol 2) breaks {ids}: {violations[0]}",
                violations=violations,
                body=body,
            )
        # The v1 snapshot the planner reads (v2 members ignored), from the parsed document.
        snapshot = validate({**parsed, "protocol_version": 1})
        if self.version != 2:
            logger.info(
                "%s speaks protocol 2: conditional GETs and the ?wait= change feed", self.url
            )
        self.version, self.etag, self._cached = 2, headers.get("etag"), snapshot
        return snapshot
