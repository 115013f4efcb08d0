"""Every benchmark figure in the docs comes from the committed docs/bench/bench.json.

The figures sit in marked blocks that bench.docs renders from the report; this test regenerates
them and fails on drift, and fails when a benchmark figure appears outside a block in the sections
that quote the benchmark.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tools.bench.docs import _BLOCK, DOCUMENTS, REPORT, SCALE_REPORT, render_blocks, update_text

ROOT = Path(__file__).resolve().parents[1]
RENDERED = render_blocks(json.loads((ROOT / REPORT).read_text(encoding="utf-8")))
# A measured figure: a number with a unit of time, size or share, or a ratio ("2.79x"; "4 x world
# size 2" is a count of engines).
FIGURE = re.compile(r"\b\d[\d,.]*(?:\s?(?:ms|s|min|MB|MiB|GB|GiB|%)|x)(?!\w)")


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_block_matches_the_committed_report(name: str) -> None:
    text = (ROOT / name).read_text(encoding="utf-8")
    assert _BLOCK.search(text), f"{name} quotes no generated figure"
    assert update_text(text, RENDERED, where=name) == text, (
        f"{name}: benchmark figures drifted from {REPORT}; run python -m tools.bench.docs"
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
    [
        ("README.md", "## Benchmarks"),
        ("docs/bench.md", "## Latest figures"),
        ("docs/harness.md", "## Tests"),
        ("docs/harness.md", "## Scale"),
        ("docs/reference.md", "## Design and scale"),
        ("docs/bench.md", "## Protocol 1 polling against protocol 2"),
        ("docs/bench.md", "## Scale: 64 to 256 engines"),
    ],
)
def test_no_benchmark_figure_outside_a_generated_block(name: str, heading: str) -> None:
    section = _section((ROOT / name).read_text(encoding="utf-8"), heading)
    prose = _BLOCK.sub("", section)
    assert not FIGURE.findall(prose), (
        f"{name} {heading}: hand-written figures {FIGURE.findall(prose)}"
    )


def _bars(report: dict[str, Any]) -> set[str]:
    """The bars the report records, as the docs write them: a ratio's ``3x``, a share's ``1 %``."""
    found: set[str] = set()

    def walk(node: Any, share: bool) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "bar" and isinstance(value, (int, float)):
                    percent = value * 100
                    found.update({f"{percent:g} %", f"{percent:g}%"} if share else {f"{value:g}x"})
                else:
                    walk(value, share or key == "dynamo_share")
        elif isinstance(node, list):
            for item in node:
                walk(item, share)

    walk(report, False)
    return found


BARS = _bars(json.loads((ROOT / REPORT).read_text(encoding="utf-8")))


def _hand_figures(text: str) -> list[str]:
    """The figures outside the generated blocks of every section (``## ``) that holds one, other
    than the bars the report records: a measurement typed by hand beside generated ones."""
    found = []
    for section in re.split(r"(?m)^(?=## )", text):
        if _BLOCK.search(section):
            found += [f for f in FIGURE.findall(_BLOCK.sub("", section)) if f not in BARS]
    return found


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_figure_beside_a_generated_block_is_the_reports(name: str) -> None:
    # In a section quoting the benchmark, a figure is generated from the report, or it is one of
    # the report's bars: an old figure left in the prose (or retyped) fails here.
    text = (ROOT / name).read_text(encoding="utf-8")
    assert _hand_figures(text) == [], f"{name}: hand-written figures beside generated ones"


def test_a_figure_typed_beside_a_generated_block_is_found() -> None:
    text = (ROOT / "docs/validation.md").read_text(encoding="utf-8")
    heading = "## Benchmark"
    assert _BLOCK.search(_section(text, heading)) and {"3x", "1 %"} <= BARS
    typed = text.replace(heading + "\n", heading + "\n\nA poll took 44 ms, 4x a valid body.\n", 1)
    assert typed != text and _hand_figures(typed) == ["44 ms", "4x"]
    outside = text + "\n## Elsewhere\n\nA timeout of 30 s.\n"  # no block: not the benchmark's
    assert _hand_figures(outside) == []


def _with_blocks(text: str, rendered: dict[str, str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for match in _BLOCK.finditer(update_text(text, rendered)):
        out.setdefault(match["name"], []).append(match["body"])
    return out


def test_a_rerun_benchmark_regenerates_every_conformance_count() -> None:
    # After the lead reruns the benchmark (new checks: a frontend-v2 profile, a LIST-5 check),
    # `python -m tools.bench.docs` must rewrite every count and the requirements behind them.
    report = json.loads((ROOT / REPORT).read_text(encoding="utf-8"))
    dynamo = report["suite"]["series"]["dynamo"]
    dynamo["counts"] = {"pass": 45, "skip": 8, "warn": 1, "fail": 0, "error": 0}
    dynamo["not_passed"] = {"skip": ["HTTP-5", "V2-1"], "warn": ["ENGINE-2"]}
    rendered = render_blocks(report)
    quoted = []
    for name in DOCUMENTS:
        blocks = _with_blocks((ROOT / name).read_text(encoding="utf-8"), rendered)
        quoted += blocks.get("dynamo-counts", [])
        for body in blocks.get("dynamo-not-passed", []):
            assert body == "skip: HTTP-5, V2-1; warn: ENGINE-2"
        for body in blocks.get("figures", []):
            assert "45 pass, 8 skip, 1 warn" in body
    assert quoted and set(quoted) == {"45 pass, 8 skip, 1 warn"}
    docs = "\n".join(
        update_text((ROOT / n).read_text(encoding="utf-8"), rendered) for n in DOCUMENTS
    )
    assert "44 pass, 1 skip, 1 warn" not in docs


def test_scale_figures_come_from_the_scale_report() -> None:
    scale = json.loads((ROOT / SCALE_REPORT).read_text(encoding="utf-8"))
    bench = json.loads((ROOT / REPORT).read_text(encoding="utf-8"))
    point = scale["scale"]["series"]["dynamo"]["points"][-1]
    point["memory_bytes"] = 7 * 2**30
    table = render_blocks(bench, scale)["scale-table"]
    assert f"| {point['engines']} | " in table and "7.00 GiB" in table
    # A full benchmark run that holds a scale section is preferred to scale.json.
    both = {**bench, "scale": scale["scale"]}
    assert "7.00 GiB" in render_blocks(both)["scale-table"]
    text = (ROOT / "docs/harness.md").read_text(encoding="utf-8")
    assert "7.00 GiB" in update_text(text, render_blocks(bench, scale))


def test_protocol_figures_come_from_the_protocol_report() -> None:
    from tools.bench.docs import PROTOCOL_REPORT

    protocol = json.loads((ROOT / PROTOCOL_REPORT).read_text(encoding="utf-8"))
    bench = json.loads((ROOT / REPORT).read_text(encoding="utf-8"))
    middle = protocol["reference"]["1024"]["ratios_v1_over_v2"]
    middle["server_cpu_per_poll"] = 999.0
    text = update_text(
        (ROOT / "docs/bench.md").read_text(encoding="utf-8"), render_blocks(bench, None, protocol)
    )
    assert "costs the reference server 999x less CPU per poll" in text
    assert "(**999x**)" in text  # the table too


def test_the_real_engine_figures_come_from_the_report_and_a_retyped_one_is_found() -> None:
    # docs/harness.md "Real engines" and docs/bench.md quote the engines section (python -m
    # tools.bench --only engines); a rerun rewrites both, and a figure typed beside them fails.
    report = json.loads((ROOT / REPORT).read_text(encoding="utf-8"))
    assert report["engines"]["status"] == "ok"
    report["engines"]["update_s"]["median"] = 9.87
    report["engines"]["memory_gib"]["ready"] = 6.54
    rendered = render_blocks(report)
    for name in ("docs/harness.md", "docs/bench.md"):
        text = (ROOT / name).read_text(encoding="utf-8")
        body = _with_blocks(text, rendered)["engines"][0]
        assert "took 9.87 s" in body and "in 6.5 GiB resident" in body, name
        assert update_text(text, rendered) != text  # the committed figures are not these
    text = (ROOT / "docs/harness.md").read_text(encoding="utf-8")
    heading = "## Real engines"
    assert {"engines", "engines-console"} <= {m["name"] for m in _BLOCK.finditer(text)}
    assert _hand_figures(_section(text, heading)) == []
    typed = text.replace("**Cost**", "**Cost** (a weight update takes 0.3 s)", 1)
    assert typed != text and _hand_figures(_section(typed, heading)) == ["0.3 s"]
