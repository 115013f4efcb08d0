"""``prime-rl-dynamo validate``: exit 0 valid, 1 invalid, 2 unreadable input or usage; text and JSON."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from prime_rl_dynamo.cli import main

SAMPLES = Path(__file__).resolve().parent / "data" / "samples"


def run(argv: list[str], capsys: pytest.CaptureFixture[str], stdin: bytes | None = None,
        monkeypatch: pytest.MonkeyPatch | None = None) -> tuple[int, str, str]:  # fmt: skip
    if stdin is not None and monkeypatch is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("path", sorted(SAMPLES.glob("*.json")), ids=lambda p: p.name)
def test_samples_are_valid(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["validate", str(path)], capsys)
    assert code == 0
    assert ": valid" in out


def test_summary_counts(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["validate", str(SAMPLES / "dynamo-1.6.1-mixed-fleet.json")], capsys)
    assert code == 0
    assert "6 workers, 2 engines ready, 3 with error, total world size 6" in out
    code, out, _ = run(["validate", "--json", str(SAMPLES / "dynamo-1.6.1-pd-fleet.json")], capsys)
    summary = json.loads(out)["summary"]
    assert summary["engines_ready"] == 3 and summary["total_world_size"] == 8


def test_invalid_body_lists_every_violation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc: dict[str, Any] = json.loads((SAMPLES / "dynamo-1.6.1-pd-fleet.json").read_bytes())
    doc["workers"][0]["world_size"] = None
    doc["workers"][2]["routes"].reverse()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    code, out, err = run(["validate", str(bad)], capsys)
    assert code == 1
    lines = out.strip().splitlines()
    # The null world_size is first named as the known null-optionals variant (VERSION-1).
    assert lines[0].split("\t")[:3] == ["VERSION-1", "/", "-"]
    assert "null-optionals" in lines[0]
    assert lines[1].split("\t")[:3] == [
        "WORKER-6",
        "/workers/0/world_size",
        "dynamo.decode.rl#10431879732901135543",
    ]
    assert lines[2].split("\t")[:2] == ["LIST-4", "/workers/2/routes/1"]
    assert "invalid, 3 violation(s)" in err
    code, out, _ = run(["validate", "--json", str(bad)], capsys)
    report = json.loads(out)
    assert code == 1 and report["valid"] is False
    assert [v["requirement"] for v in report["violations"]] == ["VERSION-1", "WORKER-6", "LIST-4"]


def test_stdin_and_not_json(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run(
        ["validate", "-"],
        capsys,
        (SAMPLES / "dynamo-1.6.1-empty-fleet.json").read_bytes(),
        monkeypatch,
    )
    assert code == 0 and "<stdin>: valid" in out
    code, out, _ = run(["validate"], capsys, b"<html>502 Bad Gateway</html>", monkeypatch)
    assert code == 1 and out.startswith("BODY-1\t/\t-\texpected a JSON document")


def test_unreadable_input_and_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["validate", str(tmp_path / "missing.json")], capsys)
    assert code == 2 and "cannot read" in err
    code, _, err = run(["validate", str(tmp_path)], capsys)  # a directory
    assert code == 2
    with pytest.raises(SystemExit) as info:
        main(["validate", "--no-such-flag"])
    assert info.value.code == 2


@pytest.mark.integration
def test_console_script_runs(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "prime_rl_dynamo.cli", "validate", str(SAMPLES / "dynamo-1.6.1-dead-workers.json")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "6 workers, 0 engines ready, 6 with error" in proc.stdout
