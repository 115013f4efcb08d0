"""``python -m tools.bench``: options reach the run, the JSON and PNG are written, usage errors
exit 2. The presets are shrunk so the test checks structure, never timing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tools.bench.run
from tools.bench.__main__ import main
from tools.bench.discovery import DiscoveryConfig
from tools.bench.run import BenchConfig
from tools.bench.validation_figures import ValidationConfig

pytestmark = pytest.mark.integration


def _tiny(mode: str) -> BenchConfig:
    return BenchConfig(
        mode=mode,
        validation=ValidationConfig(sizes=(1, 4), repetitions=2, jsonschema_max_workers=0),
        discovery=DiscoveryConfig(
            sizes=(1,), requests=2, ready_repetitions=1, warmup=1, frontends=("reference",)
        ),
        suite=None,
        client=None,
    )


def test_quick_writes_json_and_png(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(tools.bench.run, "quick_config", lambda: _tiny("quick"))
    out_json = tmp_path / "r.json"
    out_png = tmp_path / "r.png"
    code = main(["--quick", "--no-progress", "--json", str(out_json), "--plot", str(out_png)])
    assert code == 0, capsys.readouterr().err
    report = json.loads(out_json.read_text(encoding="utf-8"))
    assert report["mode"] == "quick"
    assert report["discovery"]["series"]["reference"]["points"][0]["engines"] == 1
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    printed = capsys.readouterr().out
    assert f"wrote {out_json} and {out_png}" in printed


def test_only_and_no_dynamo_shape_the_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[BenchConfig] = []

    def fake_run(config: BenchConfig, reporter: object, *, command: str | None) -> dict:
        seen.append(config)
        return {"mode": config.mode, "machine": {}, "validation": {}, "discovery": {}, "suite": {}}

    monkeypatch.setattr(tools.bench.run, "run_bench", fake_run)
    code = main(
        [
            "--only",
            "discovery",
            "--no-dynamo",
            "--no-progress",
            "--json",
            str(tmp_path / "x.json"),
            "--plot",
            str(tmp_path / "x.png"),
        ]
    )
    assert code == 0, capsys.readouterr().err
    (config,) = seen
    assert config.mode == "full"
    assert config.validation is None and config.suite is None
    assert config.discovery is not None and "dynamo" not in config.discovery.frontends


def test_plot_must_be_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--no-progress", "--plot", str(tmp_path / "figure.jpg")])
    assert code == 2
    assert "expects a .png file" in capsys.readouterr().err


def test_the_installed_command_has_no_bench() -> None:
    """The benchmarks are the checkout's: the console script neither lists nor imports them."""
    from prime_rl_dynamo.cli import SUBCOMMANDS

    assert "bench" not in SUBCOMMANDS
