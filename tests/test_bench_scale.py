"""The bench's scale section on a tiny fleet: both frontends' latency points, the Dynamo round
trip (start-up, listing equal to the fleet, memory), the Markdown lines and the plot panel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tools.bench.markdown import render_markdown
from tools.bench.plot import plot_report
from tools.bench.scale import ScaleConfig, run_scale

pytestmark = [pytest.mark.integration]


def test_scale_on_the_reference_frontend_alone() -> None:
    section = run_scale(ScaleConfig(sizes=(2, 4), requests=3, frontends=("reference",)))
    points = section["series"]["reference"]["points"]
    assert [p["engines"] for p in points] == [2, 4]
    for point in points:
        assert point["latency_s"]["n"] == 3
        assert point["body_bytes"] > 0
        assert "roundtrip_s" not in point
    assert section["ratios"] == []


@pytest.mark.dynamo
def test_scale_times_the_dynamo_round_trip_and_measures_memory(tmp_path: Path) -> None:
    pytest.importorskip("dynamo.runtime", reason="needs the dynamo extra")
    section = run_scale(ScaleConfig(sizes=(3,), requests=3, engines_per_process=3))
    dynamo: dict[str, Any] = section["series"]["dynamo"]["points"][0]
    assert dynamo["roundtrip_ok"] is True, dynamo["roundtrip_problems"]
    assert 0 < dynamo["startup_s"] <= dynamo["roundtrip_s"]
    assert dynamo["memory_bytes"] > 50 * 2**20  # a frontend and a stub process at least
    assert dynamo["processes"] == 2
    assert [r["engines"] for r in section["ratios"]] == [3]
    skipped = {"status": "skipped", "reason": "not selected"}
    report = {"mode": "test", "machine": {}, "scale": section}
    report.update({name: skipped for name in ("validation", "discovery", "suite")})
    text = render_markdown(report)
    assert "Dynamo, 3 engines (3 per stub process, 2 processes): round trip" in text
    assert "listing equals the fleet: yes" in text
    png = plot_report(report, tmp_path / "scale.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
