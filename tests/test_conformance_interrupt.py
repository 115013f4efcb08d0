"""Ctrl-C during a run writes a partial report marked incomplete (a real subprocess, real SIGINT)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from prime_rl_dynamo.reference import start_reference_fleet

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

CLI = Path(sys.executable).parent / "prime-rl-dynamo"


def test_sigint_writes_a_partial_report_marked_incomplete(tmp_path: Path) -> None:
    with start_reference_fleet() as fleet:
        listing = httpx.get(fleet.frontend_url + "/v1/rl/workers", timeout=10).content
    head_seen, release = threading.Event(), threading.Event()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(listing)))
            self.end_headers()
            self.wfile.write(listing)

        def do_HEAD(self) -> None:  # HTTP-2 hangs here until the run is interrupted
            head_seen.set()
            release.wait(30)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    report, junit = tmp_path / "r.json", tmp_path / "r.xml"
    proc = subprocess.Popen(
        [
            str(CLI),
            "conformance",
            url,
            "-q",
            "--profile",
            "frontend",
            "--timeout",
            "60",
            "--json-report",
            str(report),
            "--junit-xml",
            str(junit),
            "--seed",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert head_seen.wait(60), "the run never reached HTTP-2"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        release.set()
        proc.kill()
        server.shutdown()
        server.server_close()
    assert proc.returncode == 130, out + err
    assert "Traceback" not in out + err
    assert "interrupted: partial report" in out
    data = json.loads(report.read_text())
    assert data["incomplete"] is True and data["verdict"] == "inconclusive"
    done = {r["check"]: r["status"] for r in data["results"]}
    assert done["HTTP-1::status-and-content-type"] == "pass"
    assert "HTTP-2::head" in data["not_run"] and "HTTP-2::head" not in done
    assert len(done) + len(data["not_run"]) > 20
    assert "incomplete" in junit.read_text()
