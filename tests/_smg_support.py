"""A real SMG gateway (PyPI ``smg``, the ``smg`` extra) on 127.0.0.1 in front of stub SGLang workers.

``smg launch`` registers each ``--worker-urls`` URL by asking the worker what it is, so each stub
answers what smg 1.13.0 was seen asking for (its requests were watched on the wire): ``GET
/v1/models`` (``owned_by`` names the engine), ``/server_info`` (tp/dp/pp sizes, ``version``,
``weight_version``), ``/model_info`` and ``/health``, and its load monitor's ``/loads``,
``/v1/loads`` and ``/metrics``. Anything else is a 404. A stub can be stopped while the gateway
runs (a dead worker).

The gateway runs as SMG's own RL setup recommends (``--enable-rl --disable-health-check
--disable-circuit-breaker``), with every listener on loopback (``--prometheus-host 127.0.0.1``:
without it the metrics listener binds 0.0.0.0). Its Prometheus counters
(``smg_http_requests_total``) count the requests it received, for tests that count a client's
requests on the wire.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from prime_rl_dynamo.suite.harness import ManagedProcess, free_port, stop_all
from tests._client_support import QuietHandler, serving

MODEL = "Qwen/Qwen3-0.6B"
_STARTUP = 30.0  # seconds: smg starts in about 1 s on loopback
_COUNTER = re.compile(r'^smg_http_requests_total\{method="([A-Z]+)",path="([^"]*)"\} (\d+)$', re.M)


def smg_binary() -> str:
    """The ``smg`` console script of this interpreter's environment (the ``smg`` extra)."""
    found = shutil.which("smg", path=str(Path(sys.executable).parent)) or shutil.which("smg")
    if found is None:
        raise RuntimeError("no smg on PATH: install the smg extra (pip install -e '.[smg]')")
    return found


@dataclass
class Worker:
    """One stub SGLang worker: its URL and how to stop it (the gateway keeps listing it)."""

    url: str
    stop: contextlib.ExitStack


Sizes = tuple[int | None, int | None, int | None]  # tp, dp, pp; None: not reported


def _stub_handler(tp: int | None, dp: int | None, pp: int | None) -> type[QuietHandler]:
    sizes = {"tp_size": tp, "dp_size": dp, "pp_size": pp}
    info = {**{k: v for k, v in sizes.items() if v is not None}, "version": "0.5.6"}
    replies: dict[str, object] = {
        "/v1/models": {
            "object": "list",
            "data": [{"id": MODEL, "object": "model", "owned_by": "sglang", "max_model_len": 4096}],
        },
        "/server_info": {**info, "weight_version": "default", "model_path": MODEL},
        "/model_info": {"model_path": MODEL, "tokenizer_path": MODEL, "is_generation": True},
        "/health": {},
        "/loads": {"loads": []},
        "/v1/loads": {"loads": []},
    }

    class Handler(QuietHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self.answer(200, b"", "text/plain; version=0.0.4")
            elif path in replies:
                self.answer(200, json.dumps(replies[path]).encode())
            else:
                self.answer(404, b'{"detail":"Not Found"}')

    return Handler


@contextmanager
def sglang_workers(*sizes: Sizes) -> Iterator[list[Worker]]:
    """One stub SGLang worker per (tp, dp, pp), each on its own loopback port (a size None: its
    ``/server_info`` does not report it)."""
    with contextlib.ExitStack() as stack:
        workers = []
        for tp, dp, pp in sizes:
            own = stack.enter_context(contextlib.ExitStack())
            workers.append(Worker(own.enter_context(serving(_stub_handler(tp, dp, pp))), own))
        yield workers


@dataclass
class Gateway:
    """A running ``smg launch``: its base URL, its metrics URL and its log."""

    url: str
    metrics_url: str
    log: Path

    def requests(self) -> dict[tuple[str, str], int]:
        """(method, path) -> how many requests of it the gateway received so far."""
        text = httpx.get(self.metrics_url, timeout=10).text
        return {(m, p): int(n) for m, p, n in _COUNTER.findall(text)}


@contextmanager
def smg_gateway(
    workers: list[Worker],
    directory: Path,
    *,
    enable_rl: bool = True,
    api_key: str | None = None,
) -> Iterator[Gateway]:
    """``smg launch`` on 127.0.0.1 in front of ``workers``, once it lists every one of them (or,
    without RL, once it answers); stopped (its process group) when the block ends."""
    port, metrics = free_port(), free_port()
    argv = [
        smg_binary(), "launch", "--host", "127.0.0.1", "--port", str(port),
        "--prometheus-host", "127.0.0.1", "--prometheus-port", str(metrics),
        "--disable-health-check", "--disable-circuit-breaker", "--disable-tokenizer-autoload",
        "--shutdown-grace-period-secs", "0",  # SIGTERM ends it at once (its default waits)
    ]  # fmt: skip
    if workers:
        argv += ["--worker-urls", *(w.url for w in workers)]
    if enable_rl:
        argv.append("--enable-rl")
    if api_key is not None:
        argv += ["--api-key", api_key]
    log = directory / f"smg-{port}.log"
    process = ManagedProcess("smg", argv, {"PATH": "/usr/bin:/bin", "NO_COLOR": "1"}, log)
    process.start()
    gateway = Gateway(f"http://127.0.0.1:{port}", f"http://127.0.0.1:{metrics}/metrics", log)
    headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        _wait_listed(gateway, process, len(workers) if enable_rl else None, headers)
        yield gateway
    finally:
        stop_all([process])


def _wait_listed(
    gateway: Gateway, process: ManagedProcess, expected: int | None, headers: dict[str, str]
) -> None:
    deadline = time.monotonic() + _STARTUP
    seen = "nothing yet"
    while time.monotonic() < deadline:
        if not process.alive():
            break
        try:
            reply = httpx.get(gateway.url + "/v1/rl/workers", headers=headers, timeout=2)
        except httpx.TransportError as exc:
            seen = repr(exc)
        else:
            if expected is None or (reply.status_code == 200 and reply.json()["total"] == expected):
                return
            seen = f"{reply.status_code} {reply.text[:200]}"
        time.sleep(0.05)  # a poll interval, not a synchronisation: the loop waits on the listing
    raise RuntimeError(
        f"smg did not list {expected} worker(s) within {_STARTUP} s (last: {seen}); "
        f"{process.describe()}:\n{process.tail()}"
    )
