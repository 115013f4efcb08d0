"""The HTML report renders in a real headless Chromium with no network: its visible text holds
the verdict, the requirement table, each failure in full with its reproduction, and the options."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

import conformance
from conformance.html_report import write_html
from prime_rl_dynamo.suite.reference import start_reference_fleet

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing: scripts/install-system-deps.sh installs it")
        pytest.skip("chromium is not installed (scripts/install-system-deps.sh installs it)")
    return found


def render(page: Path, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / "chromium-profile"  # a fresh profile for every run
    return subprocess.run(
        [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *extra, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )


class _Text(HTMLParser):
    """The text a reader sees (style contents left out)."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._hidden += tag in ("style", "script", "head")

    def handle_endtag(self, tag: str) -> None:
        self._hidden -= tag in ("style", "script", "head")

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.parts.append(data)


def visible_text(dom: str) -> str:
    parser = _Text()
    parser.feed(dom)
    return re.sub(r"\s+", " ", " ".join(parser.parts))


def test_the_html_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    with start_reference_fleet(faults=["break=LIST-6"]) as broken:
        report = conformance.run(
            broken.frontend_url, ["frontend", "workers"], load_clients=2, load_requests=2, seed=7
        )
    page = write_html(report, tmp_path / "report.html")
    source = page.read_text()
    # Self-contained: nothing to fetch (no script, stylesheet, image or font from anywhere).
    assert not re.search(r"<script|<link|<img|@import|url\(|src=", source)
    proc = render(page, tmp_path, "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = visible_text(proc.stdout)
    assert "NOT CONFORMANT exit code 1" in text
    assert "LIST-6 MUST FAIL LIST-6::body LIST-6 at /workers/" in text
    assert "HTTP-1 MUST PASS" in text and "HTTP-5 MUST SKIP" in text
    assert "Failures, errors, warnings and waived results, in full" in text
    assert f"Reproduce: prime-rl-dynamo conformance {broken.frontend_url.rstrip('/')}" in text
    assert "--requirement LIST-6 --load 2x2 --seed 7" in text  # every non-default option
    assert "Options" in text and "load_clients 2" in text
    shot = tmp_path / "shot.png"
    proc = render(page, tmp_path, f"--screenshot={shot}", "--window-size=1280,1400")
    assert proc.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_expired_waiver_is_a_banner_and_a_failure(tmp_path: Path) -> None:
    from conformance.results import Report, Result, Status

    passed = Result("HTTP-2::head", "HTTP-2", "MUST", "frontend", "HEAD", Status.PASS, "200")
    report = Report(
        target={"kind": "url", "url": "http://127.0.0.1:1"},
        options={},
        seed=1,
        versions={},
        results=[passed],
        waivers=[
            {
                "requirement": "HTTP-2",
                "check": None,
                "reason": "old deviation",
                "expires": "2020-01-31",
                "state": "expired",
                "checks": [],
            }
        ],
    )
    text = visible_text(write_html(report, tmp_path / "r.html").read_text())
    assert "NOT CONFORMANT" in text
    assert (
        "waiver of HTTP-2 expired on 2020-01-31: the run fails until the waiver is renewed" in text
    )
