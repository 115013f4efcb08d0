"""Protocol 2 on the reference listener (draft, SPEC-v2.md): the v2 listing, its ETag, 304, ``?wait=``.

The v2 listing is built from the same v1 listing the faults shape (membership, churn, error
workers), plus per worker health, parallel layout and weight version from the fleet's live state.
The change feed re-reads that state (the same state the churn faults and the fleet API change)
every few milliseconds while a ``?wait=`` request is held, and answers as soon as the
fingerprint moves.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

from prime_rl_dynamo.suite.reference.state import FleetState, ReferenceEngine
from prime_rl_dynamo.v2 import MAX_WAIT, PROTOCOL_HEADER, etag_of, fingerprint
from prime_rl_dynamo.wire import WorkerId

__all__ = ["V2_BREAKS", "V2Answer", "counter_answer", "repeat_member", "serve_v2", "v2_body"]

_TICK = 0.005  # seconds between two looks at the fleet state while a wait is held


def _layout(engine: ReferenceEngine | None, world_size: int) -> dict[str, int]:
    if engine is not None:
        spec = engine.spec
        if spec.tp * spec.pp * spec.pcp * spec.dp == world_size:
            layout = {"tensor": spec.tp, "pipeline": spec.pp, "data": spec.dp}
            if spec.pcp != 1:
                layout["context"] = spec.pcp
            return layout
    return {"tensor": world_size, "pipeline": 1, "data": 1}  # a resize keeps one engine's TP


#: V2 requirement -> what the ``break-v2=ID`` fault does to break exactly it.
V2_BREAKS = {
    "V2-1": "v2 answers without Vary: Dynamo-RL-Protocol",
    "V2-2": "the v2 listing's text writes its namespace member twice (same value)",
    "V2-3": "an ETag that is not the quoted fingerprint",
    "V2-4": "If-None-Match ignored: always 200",
    "V2-5": "?wait= ignored: an unchanged listing answers 304 at once",
    "V2-6": "the first engine's tensor size doubled (the layout no longer multiplies to world_size)",
    "V2-7": "the first probed worker's health says unhealthy",
}


def v2_body(v1: dict[str, Any], state: FleetState, broken: str | None = None) -> dict[str, Any]:
    """The v2 listing of a v1 listing: fingerprint, and per worker health, parallel, weights."""
    by_identity = {e.identity: e for e in state.engines}
    workers = []
    for worker in v1["workers"]:
        entry = dict(worker)
        engine = by_identity.get(WorkerId.from_entry(entry))
        entry["health"] = "unhealthy" if "error" in entry else "ready"
        if "world_size" in entry:
            entry["parallel"] = _layout(engine, entry["world_size"])
        if engine is not None and engine.weight_dirs and "error" not in entry:
            entry["weight_version"] = str(len(engine.weight_dirs))
        workers.append(entry)
    _break_body(workers, broken)
    return {
        "protocol_version": 2,
        "namespace": v1["namespace"],
        "fingerprint": fingerprint(v1["namespace"], workers),
        "workers": workers,
    }


def _break_body(workers: list[dict[str, Any]], broken: str | None) -> None:
    if broken == "V2-6":
        sized = [w for w in workers if "parallel" in w]
        if sized:
            sized[0]["parallel"] = {
                **sized[0]["parallel"],
                "tensor": sized[0]["parallel"]["tensor"] * 2,
            }
    elif broken == "V2-7":
        probed = [w for w in workers if "error" not in w]
        if probed:
            probed[0]["health"] = "unhealthy"


class V2Answer:
    """What a v2 request gets: a status, the v2 body (None for 304) and the headers."""

    def __init__(
        self, status: int, body: dict[str, Any] | None, etag: str | None, *, vary: bool = True
    ) -> None:
        self.status = status
        self.body = body
        self.etag = etag
        self.vary = vary

    def headers(self) -> list[tuple[bytes, bytes]]:
        """Response headers: the protocol, Vary (unless broken), and the ETag if there is one."""
        out = [(PROTOCOL_HEADER.lower().encode(), b"2")]
        if self.vary:
            out.append((b"vary", PROTOCOL_HEADER.encode()))
        if self.etag is not None:
            out.append((b"etag", self.etag.encode()))
        return out


def _wait_seconds(query: bytes) -> float:
    values = parse_qs(query.decode("latin-1")).get("wait", [])
    try:
        wait = float(values[-1]) if values else 0.0
    except ValueError:
        return 0.0
    return min(max(wait, 0.0), MAX_WAIT) if wait == wait else 0.0


def _token(state: FleetState, epoch: int) -> tuple[Any, ...]:
    with state.lock:
        return (
            epoch,
            tuple((e.member, e.alive, e.world_size, len(e.weight_dirs)) for e in state.engines),
        )


async def serve_v2(
    scope: Any,
    build: Callable[[], tuple[int, Any]],
    state: FleetState,
    epoch: Callable[[], int],
    apply_schedule: Callable[[], None],
    broken: str | None = None,
    cache: dict[str, Any] | None = None,
    faults: tuple[str, ...] = (),
    hold_stale: bool = False,
) -> V2Answer:
    """Answer one v2 request: 200 with the listing, 304 when If-None-Match holds, waiting first
    when ``?wait=`` asks (V2-3, V2-4, V2-5). ``build`` gives the v1 status and body;
    ``hold_stale`` (fault ``hold-stale``) holds a stale If-None-Match for the whole wait too."""
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    asked = {t.strip() for t in headers.get("if-none-match", "").split(",") if t.strip()}
    wait = _wait_seconds(scope.get("query_string", b""))
    if broken == "V2-4":
        asked = set()
    if broken == "V2-5":
        wait = 0.0

    def current() -> V2Answer:
        # The last answer is kept with the state it was built from: an unchanged fleet costs a
        # look at each engine's membership fields, not a new listing and a new hash (V2-4).
        key = (_token(state, epoch()), faults, broken)
        if cache is not None and cache.get("key") == key:
            answer: V2Answer = cache["answer"]
            return answer
        answer = build_answer()
        if cache is not None:
            cache["key"], cache["answer"] = key, answer
        return answer

    def build_answer() -> V2Answer:
        status, value = build()
        if status != 200 or not isinstance(value, dict) or "workers" not in value:
            return V2Answer(status, value, None)
        body = v2_body(value, state, broken)
        fp = body["fingerprint"][::-1] if broken == "V2-3" else body["fingerprint"]
        return V2Answer(200, body, etag_of(fp), vary=broken != "V2-1")

    answer = current()
    if hold_stale and asked and wait > 0 and answer.etag not in asked:
        await asyncio.sleep(wait)  # fault hold-stale: a stale validator is held like a fresh one
    if answer.etag is not None and wait > 0 and answer.etag in asked:
        deadline = time.monotonic() + wait
        seen = _token(state, epoch())
        while time.monotonic() < deadline:
            await asyncio.sleep(_TICK)
            apply_schedule()
            token = _token(state, epoch())
            if token == seen:
                continue
            seen = token
            answer = current()
            if answer.etag not in asked:
                break
    if answer.etag is not None and answer.etag in asked:
        return V2Answer(304, None, answer.etag, vary=answer.vary)
    return answer


def counter_answer(v1: tuple[int, Any], state: FleetState, number: int) -> V2Answer:
    """Fault ``etag-counter``: the v2 listing whose fingerprint (and ETag) is the request's number,
    a new one on every answer, with If-None-Match and ``?wait=`` ignored: always 200 at once."""
    status, value = v1
    if status != 200 or not isinstance(value, dict) or "workers" not in value:
        return V2Answer(status, value, None)
    body = v2_body(value, state)
    body["fingerprint"] = f"{number:032x}"
    return V2Answer(200, body, etag_of(body["fingerprint"]))


def repeat_member(data: bytes) -> bytes:
    """Fault ``break-v2=V2-2``: the listing's text with its top-level namespace written twice."""
    start = data.find(b'"namespace":')
    end = data.find(b",", start)
    if start < 0 or end < 0:
        return data
    member = data[start : end + 1]
    return data[:start] + member + data[start:]
