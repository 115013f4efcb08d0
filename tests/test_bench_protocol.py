"""The v1/v2 protocol benchmark end to end, tiny: every figure present, ratios computed from them,
and the plot drawn (no timed assertion: the figures are the benchmark's, not the test's)."""

from __future__ import annotations

import math
from pathlib import Path

import httpx
import pytest

from tools.bench.protocol import ProtocolConfig, _wire_bytes, plot, run_protocol

pytestmark = pytest.mark.integration


def test_wire_bytes_count_both_directions() -> None:
    request = httpx.Request("GET", "http://h/v1/rl/workers", headers={"a": "b"})
    response = httpx.Response(304, headers={"etag": '"x"'}, content=b"", request=request)
    expected_request = (
        len("GET /v1/rl/workers HTTP/1.1\r\n")
        + 2
        + sum(len(k) + len(v) + 4 for k, v in request.headers.raw)
    )
    expected_reply = len("HTTP/1.1 304 Not Modified\r\n") + 2 + len("etag") + len('"x"') + 4
    assert _wire_bytes(response) == expected_request + expected_reply


def test_tiny_run_has_every_figure_and_ratio(tmp_path: Path) -> None:
    config = ProtocolConfig(sizes=(8,), dynamo_sizes=(), cpu_seconds=0.3, max_polls=50, trials=1)
    report = run_protocol(config, dynamo=False)
    figures = report["reference"]["8"]
    per = figures["per_poll"]
    assert per["v1"]["status"] == 200 and per["v2_conditional"]["status"] == 304
    assert per["v2_conditional"]["wire_bytes_per_poll"] < per["v1"]["wire_bytes_per_poll"]
    wire = figures["wire_bytes_per_minute"]
    ratios = figures["ratios_v1_over_v2"]
    assert math.isclose(ratios["wire_bytes_per_minute_feed"], wire["v1"] / wire["v2_feed"])
    assert set(figures["detect_s"]) == {"v1", "v2_feed"}
    assert all(v["samples"] and v["min"] > 0 for v in figures["detect_s"].values())
    out = tmp_path / "protocol.png"
    plot(report, out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_docs_table_is_rendered_from_the_stored_report() -> None:
    import json

    from tools.bench.protocol import markdown

    root = Path(__file__).resolve().parent.parent
    report = json.loads((root / "docs" / "bench" / "protocol.json").read_text("utf-8"))
    assert markdown(report) in (root / "docs" / "bench.md").read_text("utf-8"), (
        "docs/bench.md's protocol table is stale: paste markdown(docs/bench/protocol.json)"
    )
    assert set(report["reference"]) == {"64", "1024", "4096"}
    assert all("per_poll" in v for v in report["dynamo"].values())


def test_cli_bench_protocol_passes_its_options(monkeypatch: pytest.MonkeyPatch) -> None:
    import tools.bench.protocol
    from tools.bench.__main__ import main

    seen: list[list[str]] = []
    monkeypatch.setattr(tools.bench.protocol, "main", lambda argv: seen.append(argv) or 0)
    assert main(["--protocol", "--quick"]) == 0
    assert main(["--protocol", "--no-dynamo", "--json", "x.json"]) == 0
    assert seen == [
        ["--json", "bench-protocol.json", "--plot", "bench-protocol.png", "--quick"],
        ["--json", "x.json", "--plot", "bench-protocol.png", "--no-dynamo"],
    ]
