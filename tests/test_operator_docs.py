"""What an operator reads matches what the commands do: every fault in docs/reference.md's table,
and serve's help with its defaults (serve naming a fleet that can never become ready: test_cli_serve)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from prime_rl_dynamo.cli import main
from prime_rl_dynamo.errors import ConfigError
from prime_rl_dynamo.suite.reference.faults import FAULTS, parse_fault

ROOT = Path(__file__).resolve().parent.parent


def test_every_fault_is_in_the_reference_docs_table() -> None:
    text = (ROOT / "docs" / "reference.md").read_text()
    rows = set(re.findall(r"^\| `([a-z0-9-]+)(?:=[A-Z_]+)?` \|", text, re.M))
    assert set(FAULTS) - rows == set()


def test_serve_help_shows_defaults_and_wraps_its_description(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    out = capsys.readouterr().out
    assert "(default: 127.0.0.1)" in out and "(default: 8001; 0: any free port)" in out
    description = out.split("\n\n")[1]
    assert max(len(line) for line in description.splitlines()) <= 100
    assert "  latency=MS" in out  # the fault table keeps its lines


def test_a_mistyped_break_id_gets_a_suggestion() -> None:
    with pytest.raises(ConfigError, match=r"'LIST-66' \(did you mean LIST-6\?\)"):
        parse_fault("break=LIST-66")


@pytest.mark.integration
def test_the_schemathesis_config_runs_from_any_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # docs/conformance.md: schemathesis --config-file "$(... schema path schemathesis.toml)" run
    import os
    import subprocess
    import sys

    from prime_rl_dynamo.suite.reference import start_reference_fleet

    assert main(["schema", "path", "schemathesis.toml"]) == 0
    config = capsys.readouterr().out.strip()
    assert Path(config).is_file()
    assert main(["schema", "path", "rl-frontend"]) == 0
    document = capsys.readouterr().out.strip()
    schemathesis = Path(sys.executable).with_name("schemathesis")
    scratch = tmp_path / "elsewhere"  # not the repository root
    scratch.mkdir()
    with start_reference_fleet() as fleet:
        proc = subprocess.run(
            [str(schemathesis), "--config-file", config, "run", document,
             "--generation-deterministic", "--max-examples", "3"],
            cwd=scratch, env={**os.environ, "RL_URL": fleet.frontend_url},
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert (scratch / "schemathesis-report" / "junit.xml").is_file()
