"""Ctrl-C during a run writes a partial report marked incomplete (a real subprocess, real SIGINT)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _gateway_support import stalling_head_frontend

from tests._suite_support import interrupt_when

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

CLI = Path(sys.executable).parent / "prime-rl-dynamo"


def test_sigint_writes_a_partial_report_marked_incomplete(tmp_path: Path) -> None:
    with stalling_head_frontend() as frontend:
        url = frontend.url
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
        out, err = interrupt_when(proc, frontend.head_seen, "HTTP-2")
    assert proc.returncode == 130, out + err
    assert "Traceback" not in out + err
    assert "interrupted: partial report" in out
    data = json.loads(report.read_text())
    assert data["incomplete"] is True and data["verdict"] == "inconclusive"
    assert data["exit_code"] == proc.returncode == 130  # the JSON says what the process did
    assert data["failed_requirements"][-1].startswith("interrupted: ")
    assert not data["ok"]
    done = {r["check"]: r["status"] for r in data["results"]}
    assert done["HTTP-1::status-and-content-type"] == "pass"
    assert "HTTP-2::head" in data["not_run"] and "HTTP-2::head" not in done
    assert len(done) + len(data["not_run"]) > 20
    assert "incomplete" in junit.read_text()
