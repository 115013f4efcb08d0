"""``SCHEMATHESIS_HOOKS=conformance.hooks schemathesis run ...`` just works, text/plain included.

The shipped hooks register a ``text/plain`` deserializer (Dynamo 1.6.1 labels its system server's
JSON ``text/plain``). Run as users run it: ``schemathesis run`` in a child process, against
``prime-rl-dynamo serve`` and against a loopback system server that answers ``text/plain``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from prime_rl_dynamo.resources import schema_path

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BIN = Path(sys.executable).parent


def _schemathesis(
    document: str, url: str, *extra: str, hooks: bool = True, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SCHEMATHESIS_HOOKS"}
    if hooks:
        env["SCHEMATHESIS_HOOKS"] = "conformance.hooks"
    return subprocess.run(
        [
            str(BIN / "schemathesis"),
            "run",
            str(schema_path(f"openapi/{document}")),
            "--url",
            url,
            "--seed",
            "1",
            "--max-examples",
            "10",
            "--no-color",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        cwd=cwd,
    )


@contextmanager
def _serve(*extra: str) -> Iterator[dict[str, object]]:
    """``prime-rl-dynamo serve --port 0 --json``: yields what it printed, stops it at the end."""
    proc = subprocess.Popen(
        [str(BIN / "prime-rl-dynamo"), "serve", "--port", "0", "--json", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        text = ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            text += line
            if line.rstrip() == "}":  # the end of the indented JSON document
                break
        yield json.loads(text)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_schemathesis_run_with_the_shipped_hooks_passes_on_the_reference_serve(
    tmp_path: Path,
) -> None:
    with _serve() as info:
        engine = info["engines"][0]  # type: ignore[index]
        frontend = _schemathesis(
            "rl-frontend.openapi.json", str(info["frontend_url"]), "--checks", "all", cwd=tmp_path
        )
        system = _schemathesis(
            "worker-system.openapi.json", engine["system_url"], "--checks", "all", cwd=tmp_path
        )
    for result in (frontend, system):
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
        assert "No issues found" in result.stdout


def test_the_shipped_hooks_catch_a_custom_check_failure_on_serve(tmp_path: Path) -> None:
    # The same command with a listener that breaks LIST-6: the hooks' own check is really loaded.
    with _serve("--fault", "break=LIST-6") as info:
        result = _schemathesis(
            "rl-frontend.openapi.json", str(info["frontend_url"]), "--checks", "all", cwd=tmp_path
        )
    assert result.returncode == 1
    assert "rl_admin_url_unique" in result.stdout or "LIST-6" in result.stdout


class _TextPlainSystemServer:
    """A worker system server that labels its JSON ``text/plain`` as Dynamo 1.6.1 does."""

    def __init__(self, health_body: bytes) -> None:
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import Response
        from starlette.routing import Route

        async def health(request: Request) -> Response:
            return Response(health_body, media_type="text/plain; charset=utf-8")

        async def engine(request: Request) -> Response:
            return Response(b'{"status":"ok"}', media_type="text/plain; charset=utf-8")

        self.app = Starlette(
            routes=[
                Route("/health", health, methods=["GET"]),
                Route("/engine/{route}", engine, methods=["POST"]),
            ]
        )

    @contextmanager
    def running(self) -> Iterator[str]:
        import socket

        import uvicorn

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        server = uvicorn.Server(
            uvicorn.Config(self.app, host="127.0.0.1", port=port, log_level="error")
        )
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 10
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True
            thread.join(timeout=10)


def test_the_text_plain_deserializer_validates_bodies_schemathesis_would_skip(
    tmp_path: Path,
) -> None:
    good = _TextPlainSystemServer(b'{"status":"ready"}')
    bad = _TextPlainSystemServer(b'["not", "an", "object"]')  # breaks SystemHealth
    checks = ("--checks", "response_schema_conformance")
    with good.running() as url:
        good_run = _schemathesis("worker-system.openapi.json", url, *checks, cwd=tmp_path)
    with bad.running() as url:
        bad_with_hooks = _schemathesis("worker-system.openapi.json", url, *checks, cwd=tmp_path)
        bad_without = _schemathesis(
            "worker-system.openapi.json", url, *checks, hooks=False, cwd=tmp_path
        )
    assert good_run.returncode == 0, good_run.stdout[-3000:]
    # Without the hook schemathesis cannot read text/plain and lets the broken body through ...
    assert bad_without.returncode == 0, bad_without.stdout[-3000:]
    # ... with it, the body is judged against the document.
    assert bad_with_hooks.returncode == 1, bad_with_hooks.stdout[-3000:]
    assert "Response violates schema" in bad_with_hooks.stdout


@pytest.mark.dynamo
def test_schemathesis_run_with_the_shipped_hooks_passes_on_real_dynamos_text_plain(
    tmp_path: Path,
) -> None:
    pytest.importorskip("dynamo.runtime")
    from prime_rl_dynamo.suite.harness import start_dynamo_fleet
    from prime_rl_dynamo.topology import topology_from_dict

    topology = topology_from_dict(
        {"version": 1, "namespace": "dynamo", "engines": [{"component": "decode", "count": 1}]}
    )
    with start_dynamo_fleet(topology) as fleet:
        system = _schemathesis(
            "worker-system.openapi.json",
            fleet.engines[0].system_url,
            "--checks",
            "all",
            cwd=tmp_path,
        )
    assert system.returncode == 0, system.stdout[-3000:]
    assert "No issues found" in system.stdout
