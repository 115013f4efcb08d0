"""The benchmark's real-engine section without a real fleet: its summary and sentence on a recorded
sample, its refusals (no real-engine virtualenv, too little memory), and that the full run leaves
it out. The section itself stands up real engines (``python -m tools.bench --only engines``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tools.bench.engines import (
    EnginesConfig,
    engines_console,
    engines_cost_says,
    refusal,
    run_engines,
    summarize_engines,
)
from tools.bench.run import full_config, quick_config

GIB = 2**30

#: What one run on this machine measured (seconds and bytes), as run_engines hands it over.
SAMPLE: dict[str, Any] = {
    "ready_s": 71.4,
    "engines": [
        {"key": "dynamo.tp1#0", "world_size": 1, "listed_s": 58.2},
        {"key": "dynamo.tp2#0", "world_size": 2, "listed_s": 71.1},
    ],
    "memory_ready": int(7.74 * GIB),
    "memory_after": int(7.81 * GIB),
    "discover_s": [1.31, 0.42, 0.45],
    "update_s": [0.61, 0.25, 0.31, 0.28, 0.9],
    "progress": ["real engines: dynamo.tp1#0 listed after 58 s"],
}


def _section() -> dict[str, Any]:
    section = summarize_engines(EnginesConfig(), SAMPLE)
    section["run"] = {"machine": {"load_average": [1.25, 1.0, 0.5], "cpu_count": 2}}
    return section


def test_the_summary_keeps_every_figure_with_its_spread() -> None:
    section = summarize_engines(EnginesConfig(), SAMPLE)
    assert section["status"] == "ok"
    assert section["inference_world_size"] == 3
    assert section["memory_gib"] == pytest.approx({"ready": 7.74, "after_updates": 7.81}, abs=1e-6)
    assert section["discover_s"]["median"] == pytest.approx(0.45)
    assert (section["update_s"]["n"], section["update_s"]["median"]) == (5, pytest.approx(0.31))
    assert (section["update_s"]["min"], section["update_s"]["max"]) == (0.25, 0.9)


def test_the_sentence_says_what_the_sample_measured() -> None:
    said = engines_cost_says({"engines": _section()})
    assert said.startswith("a TP 1 + TP 2 fleet (W = 3) was ready 71 s after start")
    assert "(TP 1 listed after 58 s, TP 2 listed after 71 s) in 7.7 GiB resident" in said
    assert "(7.8 GiB after the updates)" in said
    assert "`discover` was ready in 0.45 s (0.42-1.31, 3 runs)" in said
    assert "took 0.31 s (0.25-0.90, 5 updates" in said
    assert said.endswith("load average 1.2 on 2 cores")
    assert engines_cost_says({}) == "not measured in this report"
    console = engines_console({"engines": _section()})
    assert (
        "$ python -m tools.bench --only engines\nreal engines: dynamo.tp1#0 listed after 58 s\n"
        in console
    )
    assert console.startswith("\n\n```console\n") and console.endswith("```\n\n")


def test_without_the_real_engine_virtualenv_the_section_is_skipped_with_the_reason(
    tmp_path: Path,
) -> None:
    lines: list[str] = []
    section = run_engines(EnginesConfig(), venv=tmp_path, log=lines.append)
    assert section["status"] == "skipped"
    assert f"not installed in {tmp_path}" in section["reason"]
    assert lines == [f"engines: skipped: {section['reason']}"]


def test_a_machine_short_of_memory_is_refused(
    tmp_path: Path,
) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    for name in ("python", "vllm-rs"):
        (venv / "bin" / name).touch()
    why = refusal(EnginesConfig(), venv, available=1 * GIB)
    assert why is not None and "1.0 GiB available" in why
    assert "needs about" in why
    # the counterpart: with memory to spare the same venv is accepted
    assert refusal(EnginesConfig(), venv, available=64 * GIB) is None


def test_the_section_runs_only_on_request() -> None:
    assert full_config().engines is None
    assert quick_config().engines is None
    assert full_config().only(["engines"]).engines == EnginesConfig()
    assert full_config().only(["engines"]).client is None
