"""Every benchmark figure in the docs comes from the committed docs/bench/bench.json.

The figures sit in marked blocks that bench.docs renders from the report; this test regenerates
them and fails on drift, and fails when a benchmark figure appears outside a block in the sections
that quote the benchmark.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.docs import _BLOCK, DOCUMENTS, REPORT, render_blocks, update_text

ROOT = Path(__file__).resolve().parents[1]
RENDERED = render_blocks(json.loads((ROOT / REPORT).read_text(encoding="utf-8")))
# A measured figure: a number with a unit of time or a ratio.
FIGURE = re.compile(r"\b\d[\d,.]*\s?(?:ms|s|min|x)\b")


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_block_matches_the_committed_report(name: str) -> None:
    text = (ROOT / name).read_text(encoding="utf-8")
    assert _BLOCK.search(text), f"{name} quotes no generated figure"
    assert update_text(text, RENDERED, where=name) == text, (
        f"{name}: benchmark figures drifted from {REPORT}; run python -m bench.docs"
    )


def test_a_changed_figure_is_detected_and_restored() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = next(m for m in _BLOCK.finditer(text) if m["name"] == "suite-times")
    tampered = text.replace(block["body"], block["body"].replace(" s ", " 0 s ", 1), 1)
    assert tampered != text
    assert update_text(tampered, RENDERED) == text


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    following = re.search(r"^## ", text[start + len(heading) :], flags=re.M)
    return text[start : start + len(heading) + following.start()] if following else text[start:]


@pytest.mark.parametrize(
    ("name", "heading"),
    [("README.md", "## Benchmarks"), ("docs/bench.md", "## Latest figures")],
)
def test_no_benchmark_figure_outside_a_generated_block(name: str, heading: str) -> None:
    section = _section((ROOT / name).read_text(encoding="utf-8"), heading)
    prose = _BLOCK.sub("", section)
    assert not FIGURE.findall(prose), (
        f"{name} {heading}: hand-written figures {FIGURE.findall(prose)}"
    )


def test_the_stale_figures_are_gone() -> None:
    docs = "\n".join((ROOT / n).read_text(encoding="utf-8") for n in DOCUMENTS)
    for stale in ("44 ms", "about a minute", "About 40 ms of it is fixed", "44 / 43 ms"):
        assert stale not in docs


def test_the_check_command_agrees() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bench.docs", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
