"""What a fleet saw: every request an engine's servers received, for checks from the outside.

The reference fleet (in-process) and the real Dynamo harness (stub processes writing JSON lines)
share this record, so the conformance suite checks a client the same way on both.
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["RecordedRequest", "Recorder"]


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One HTTP request as an engine's system or admin server received it."""

    engine: str  # EngineSpec.key, e.g. "dynamo.prefill#0"
    server: str  # "admin" | "system" | "frontend"
    method: str
    path: str  # path relative to the server's base (admin_base_url or system_url), e.g. "/pause"
    query: str
    headers: dict[str, str]  # lower-cased names
    json: Any  # parsed body, or None when there was none or it was not JSON
    time: float  # time.time() when received
    host: str = ""  # the Host header's host part (which name the client used)
    status: int = 0  # status code answered

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (for JSON-lines files written by stub processes)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RecordedRequest:
        """Inverse of ``to_dict``."""
        return cls(**data)


@dataclass
class Recorder:
    """A thread-safe, append-only list of recorded requests, optionally mirrored to a file."""

    path: Path | None = None
    _items: list[RecordedRequest] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, request: RecordedRequest) -> None:
        """Append one request (and one JSON line to ``path`` when set)."""
        with self._lock:
            self._items.append(request)
            if self.path is not None:
                with self.path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(request.to_dict()) + "\n")

    def requests(
        self, *, engine: str | None = None, server: str | None = None, path: str | None = None
    ) -> list[RecordedRequest]:
        """Recorded requests, oldest first, filtered by engine key, server and exact path."""
        with self._lock:
            items = list(self._items)
        return [
            r
            for r in items
            if (engine is None or r.engine == engine)
            and (server is None or r.server == server)
            and (path is None or r.path == path)
        ]

    def clear(self) -> None:
        """Forget everything recorded so far."""
        with self._lock:
            self._items.clear()

    @classmethod
    def load_jsonl(cls, files: list[Path]) -> Recorder:
        """A recorder holding what stub processes wrote to JSON-lines files (missing files: none)."""
        rec = cls()
        for file in files:
            if not file.exists():
                continue
            for line in file.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    rec._items.append(RecordedRequest.from_dict(json.loads(line)))
        rec._items.sort(key=lambda r: r.time)
        return rec
