"""The benchmark end to end, tiny: every section produces the keys the docs promise, ratios follow
from the measured times, the JSON round-trips and the PNG is a PNG. Structure only, never timing.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from tools.bench.discovery import DiscoveryConfig
from tools.bench.plot import plot_report
from tools.bench.run import REPORT_FORMAT, BenchConfig, run_bench, write_report
from tools.bench.suite import SuiteConfig, run_suite
from tools.bench.table import render_tables
from tools.bench.validation_figures import ValidationConfig

pytestmark = pytest.mark.integration

TINY = BenchConfig(
    mode="tiny",
    validation=ValidationConfig(sizes=(1, 8), repetitions=2, jsonschema_max_workers=1),
    discovery=DiscoveryConfig(
        sizes=(1, 2), requests=3, ready_repetitions=2, frontends=("reference",), warmup=1
    ),
    suite=None,
    client=None,
)


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    return run_bench(TINY, command="test")


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} does not start with the PNG signature"
    assert data[12:16] == b"IHDR", f"{path}: first chunk is {data[12:16]!r}, expected IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_report_top_level(report: dict[str, Any]) -> None:
    assert report["format"] == REPORT_FORMAT
    assert report["mode"] == "tiny"
    assert report["command"] == "test"
    assert report["wall_s"] > 0
    machine = report["machine"]
    for key in ("cpu_count", "cpu_model", "memory_bytes", "python", "packages", "timestamp"):
        assert key in machine, f"machine description lacks {key}"
    assert machine["packages"]["prime-rl-dynamo"], "own version missing from the machine record"
    assert report["suite"] == {"status": "skipped", "reason": "not selected"}
    assert set(report["config"]) == {
        "validation",
        "discovery",
        "suite",
        "scale",
        "client",
        "engines",
    }
    assert report["scale"] == {"status": "skipped", "reason": "not selected"}
    assert report["client"] == {"status": "skipped", "reason": "not selected"}
    assert report["engines"] == {"status": "skipped", "reason": "not selected"}


def test_discovery_section_has_every_size_and_ratio_free_when_alone(
    report: dict[str, Any],
) -> None:
    section = report["discovery"]
    assert section["ratio_of"] == "dynamo / reference"
    reference = section["series"]["reference"]
    assert reference["status"] == "ok", reference
    assert [p["engines"] for p in reference["points"]] == [1, 2]
    for point in reference["points"]:
        assert point["inference_world_size"] == 2 * point["engines"]
        latency = point["latency_s"]
        assert latency["n"] == 3
        assert latency["min"] <= latency["p50"] <= latency["p99"] <= latency["max"]
        assert point["ready_s"]["n"] == 2
        assert point["body_bytes"] > 0
    # Only one frontend measured: no dynamo/reference ratio may be invented.
    assert section["ratios"] == []


def test_validation_section_ratios_follow_from_the_measured_times(report: dict[str, Any]) -> None:
    section = report["validation"]
    assert section["status"] == "ok", section
    validator, yardstick = section["validator"], section["yardstick"]
    assert {validator, yardstick, section["pydantic"]} <= set(section["contenders"])
    assert [p["workers"] for p in section["points"]] == [1, 8]
    for point in section["points"]:
        times = point["times_s"]
        # Pure-Python jsonschema was allowed up to 1 worker only (it costs seconds per sample).
        assert ("jsonschema (pure Python)" in times) == (point["workers"] <= 1)
        assert set(point["ratios"]) == {f"{validator} / {name}" for name in times} - {
            f"{validator} / {validator}"
        }
        for key, ratio in point["ratios"].items():
            other = key.split(" / ", 1)[1]
            expected = times[validator]["median"] / times[other]["median"]
            assert ratio["median"] == pytest.approx(expected, rel=1e-9), key
        paired = point["ratios"][f"{validator} / {yardstick}"]
        assert paired["min"] <= paired["max"], "a paired ratio keeps its per-repetition spread"
        for summary in times.values():
            assert summary["n"] == point["repetitions"]
            assert summary["min"] <= summary["median"] <= summary["max"]
    assert set(section["curves"]) == set(section["contenders"])
    # The verdict only speaks of the sizes the issue names; none were measured here.
    assert section["verdict"]["checks"] == []


def test_json_round_trip_and_png(report: dict[str, Any], tmp_path: Path) -> None:
    json_path = write_report(report, tmp_path / "out" / "bench.json")
    loaded = json.loads(json_path.read_text(encoding="utf-8"))
    assert loaded["discovery"]["series"]["reference"]["points"][0]["engines"] == 1
    png = plot_report(loaded, tmp_path / "bench.png")
    width, height = _png_size(png)
    assert width > 800 and height > 300


def test_tables_print_every_measured_point(report: dict[str, Any]) -> None:
    from rich.console import Console

    console = Console(record=True, width=200)
    render_tables(report, console)
    text = console.export_text()
    assert "Discovery" in text
    assert "reference" in text
    assert "machine:" in text


def test_suite_section_reports_skips_with_reasons() -> None:
    # No target selected: nothing is run, nothing is invented.
    section = run_suite(SuiteConfig(targets=(), repetitions=1))
    assert section["series"] == {}
    assert "ratio_dynamo_over_reference" not in section


def test_only_and_without_dynamo_select_sections() -> None:
    config = BenchConfig().only(["discovery"]).without_dynamo()
    assert config.validation is None and config.suite is None
    assert config.discovery is not None and config.discovery.frontends == ("reference",)
    with pytest.raises(ValueError, match="unknown sections"):
        BenchConfig().only(["nope"])


def test_unavailable_dynamo_is_reported_skipped_not_invented(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    from tools.bench.discovery import run_discovery

    # As if the dynamo extra were not installed: importing the harness fails.
    monkeypatch.setitem(sys.modules, "prime_rl_dynamo.suite.harness", None)
    section = run_discovery(DiscoveryConfig(sizes=(1,), requests=2, ready_repetitions=1, warmup=0))
    dynamo = section["series"]["dynamo"]
    assert dynamo["status"] == "skipped"
    assert "install prime-rl-dynamo[dynamo]" in dynamo["reason"]
    assert dynamo["points"] == []
    assert section["series"]["reference"]["status"] == "ok"
    assert section["ratios"] == []


@pytest.mark.slow
def test_suite_times_a_real_conformance_run_in_a_child_process() -> None:
    section = run_suite(SuiteConfig(targets=("reference",), profiles=("workers",), repetitions=1))
    assert section["run"] == "profiles workers"
    reference = section["series"]["reference"]
    assert reference["status"] == "ok", reference
    assert reference["wall_s"]["n"] == 1
    # The child's own timing of the library call fits inside the process's wall time.
    assert reference["run_s"]["median"] <= reference["wall_s"]["median"]
    assert sum(reference["counts"].values()) > 0
    # Which requirements did not pass, by status, agreeing with the counts (docs quote them).
    not_passed = reference["not_passed"]
    for status, n in reference["counts"].items():
        assert (status in not_passed) == (n > 0 and status != "pass"), (status, not_passed)
    assert "ratio_dynamo_over_reference" not in section


def test_markdown_quotes_every_section_with_its_command(report: dict[str, Any]) -> None:
    from tools.bench.markdown import render_markdown

    text = render_markdown(report)
    assert "Command: `test`" in text
    assert "| workers | json.loads | validate_body" in text
    assert "| reference | 1 |" in text and "| reference | 2 |" in text
    assert "Conformance suite: skipped (not selected)." in text


def test_client_profile_section_times_each_client_in_a_fresh_process() -> None:
    from tools.bench.client_profile import ClientProfileConfig, run_client_profile

    section = run_client_profile(
        ClientProfileConfig(clients=("project client",), repetitions=1, topologies=1)
    )
    series = section["series"]["project client"]
    assert series["status"] == "ok" and series["ok"] is True
    assert series["wall_s"]["n"] == 1 and series["wall_s"]["median"] >= series["run_s"]["median"]
    assert series["counts"]["pass"] >= 27 and series["counts"]["fail"] == 0
    with pytest.raises(ValueError, match="unknown clients"):
        run_client_profile(ClientProfileConfig(clients=("nobody",)))


def test_the_client_profile_sentence_sets_the_two_paces_side_by_side() -> None:
    from tools.bench.client_profile import REAL_PACE, client_profile_says

    def series(median: float) -> dict[str, Any]:
        return {"status": "ok", "wall_s": {"median": median}}

    section: dict[str, Any] = {
        "config": {"target": "reference", "poll_interval": 0.1},
        "series": {"project client": series(18.0), f"project client{REAL_PACE}": series(112.0)},
        "bounds": {
            "conformant": {"client": "project client", "wall_s": 18.0},
            "misbehaving": {"client": "never ready", "wall_s": 89.0},
        },
    }
    said = client_profile_says({"client": section})
    assert "(project client) takes 112 s, against 18 s at the 0.1 s pace" in said
    del section["series"][f"project client{REAL_PACE}"]
    assert "1 s pace" not in client_profile_says({"client": section})
