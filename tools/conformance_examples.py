"""Regenerate the conformance examples of docs/conformance.md from real runs.

``python -m tools.conformance_examples`` (``make examples``) stands up the reference fleet twice on
loopback, clean and with ``break=LIST-6``, runs the frontend and workers profiles against each
(seed 1, ``--load 8x4``), and writes:

- ``docs/img/conformance-report-pass.json`` and ``docs/img/conformance-report-fail.json``: the two
  JSON reports;
- ``docs/img/conformance-report-fail.png``: the failing run's HTML report as headless Chromium
  renders it, with the SHA-256 of the JSON report it shows in a PNG text chunk;
- the marked blocks of docs/conformance.md: the screenshot's caption (its counts) and the
  ``report diff`` example, printed by the real command from the two JSON reports.

``tests/test_docs_examples.py`` fails when any of these drift from each other or from the suite's
checks, as ``tests/test_docs_figures.py`` does for the benchmark figures.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "conformance.md"
IMG = ROOT / "docs" / "img"
PASS_JSON = IMG / "conformance-report-pass.json"
FAIL_JSON = IMG / "conformance-report-fail.json"
FAIL_PNG = IMG / "conformance-report-fail.png"
#: The PNG text chunk that names the JSON report a screenshot shows.
SOURCE_KEY = "prime-rl-dynamo-source-sha256"
PROFILES = ("frontend", "workers")
BLOCK = re.compile(
    r"(<!-- example:(?P<name>[a-z-]+) -->\n)(?P<body>.*?)(<!-- /example:(?P=name) -->)", re.S
)
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--window-size=1280,1500",
)


def sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def png_text(path: Path) -> dict[str, str]:
    """The tEXt chunks of a PNG file: keyword -> text."""
    data = path.read_bytes()
    out, at = {}, 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        if kind == b"tEXt":
            key, _, text = body.partition(b"\0")
            out[key.decode("latin-1")] = text.decode("latin-1")
        at += 12 + length
    return out


def _with_text(png: bytes, key: str, text: str) -> bytes:
    body = key.encode("latin-1") + b"\0" + text.encode("latin-1")
    chunk = struct.pack(">I", len(body)) + b"tEXt" + body
    chunk += struct.pack(">I", zlib.crc32(b"tEXt" + body) & 0xFFFFFFFF)
    end = png.rindex(b"IEND") - 4  # before the IEND chunk's length
    return png[:end] + chunk + png[end:]


def report_diff_text() -> str:
    """What ``prime-rl-dynamo report diff before.json after.json`` prints for the two reports."""
    from prime_rl_dynamo.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["report", "diff", str(PASS_JSON), str(FAIL_JSON)])
    return out.getvalue().replace(f"{IMG}/", "")


def caption(report: dict[str, object]) -> str:
    """The screenshot's caption: the commands and what the run counted."""
    counts = report["counts"]
    assert isinstance(counts, dict)
    summary = ", ".join(f"{n} {status}" for status, n in counts.items() if n)
    return (
        "(`prime-rl-dynamo serve --port 18431 --fault break=LIST-6` and `prime-rl-dynamo conformance\n"
        "http://127.0.0.1:18431 --seed 1 --load 8x4 --html-report report.html`: "
        f"{report['verdict']}, {summary})\n"
    )


def blocks() -> dict[str, str]:
    """Every generated block of docs/conformance.md, rendered from the committed reports."""
    import json

    fail = json.loads(FAIL_JSON.read_text(encoding="utf-8"))
    diff = report_diff_text()
    return {
        "report-fail-caption": caption(fail),
        "report-diff": f"```\n$ prime-rl-dynamo report diff {PASS_JSON.name} {FAIL_JSON.name}\n{diff}```\n",
    }


def update_text(text: str, rendered: dict[str, str]) -> str:
    """``text`` with each marked block replaced by its rendering."""
    return BLOCK.sub(lambda m: m[1] + rendered[m["name"]] + m[4], text)


def _run(faults: list[str], json_path: Path, html_path: Path | None) -> None:
    import conformance
    from conformance.html_report import write_html
    from conformance.reporting import write_json
    from prime_rl_dynamo.suite.reference import start_reference_fleet

    with start_reference_fleet(faults=faults, seed=1) as fleet:
        report = conformance.run(
            url=fleet.frontend_url,
            profiles=list(PROFILES),
            seed=1,
            load_clients=8,
            load_requests=4,
        )
    write_json(report, json_path)
    if html_path is not None:
        write_html(report, html_path)


def screenshot(html: Path, png: Path, source: Path) -> None:
    """Render ``html`` with headless Chromium into ``png``, stamped with ``source``'s SHA-256."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise SystemExit("chromium is missing: scripts/install-system-deps.sh installs it")
    with tempfile.TemporaryDirectory() as profile:
        shot = Path(profile) / "shot.png"
        subprocess.run(
            [browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}/p", f"--screenshot={shot}",
             html.as_uri()],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        png.write_bytes(_with_text(shot.read_bytes(), SOURCE_KEY, sha256(source)))


def main() -> int:
    """Run both examples, take the screenshot, rewrite the doc's blocks."""
    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "report.html"
        _run([], PASS_JSON, None)
        _run(["break=LIST-6"], FAIL_JSON, html)
        screenshot(html, FAIL_PNG, FAIL_JSON)
    DOC.write_text(update_text(DOC.read_text(encoding="utf-8"), blocks()), encoding="utf-8")
    print(f"wrote {PASS_JSON.name}, {FAIL_JSON.name}, {FAIL_PNG.name} and the blocks of {DOC.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
