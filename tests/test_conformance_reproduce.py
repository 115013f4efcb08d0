"""The printed ``reproduce:`` line reruns the same run: run it as printed (the console script in a
child process) and every check gets the status it had, with the same options recorded, whether
the first run came from the CLI, from the pytest plugin or against the embedded target."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from prime_rl_dynamo.suite.reference import start_reference_fleet
from tests._suite_support import pytest_route

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).with_name("prime-rl-dynamo"))
#: Not one default among them: each must reach the reproduce line to give the same results.
OPTIONS = [
    "--profile",
    "frontend",
    "--requirement",
    "LIST-6",
    "--requirement",
    "HTTP-6",
    "--requirement",
    "HTTP-7",
    "--requirement",
    "HTTP-2",
    "--skip-requirement",
    "HTTP-2",
    "--strict",
    "--timeout",
    "7.5",
    "--max-body-bytes",
    "2000000",
    "--polls",
    "2",
    "--load",
    "3x2",
    "--load-budget",
    "20",
    "--topologies",
    "2",
    "--client-timeout",
    "30",
    "--target-version",
    "ref 1",
    "--seed",
    "9",
]

FLAGS = [a for a in OPTIONS if a.startswith("--")]


@pytest.fixture(scope="module")
def broken() -> Iterator[Any]:
    with start_reference_fleet(faults=["break=LIST-6"]) as running:
        yield running


def _cli(args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "100"}  # narrower than the reproduce line
    return subprocess.run(
        [CLI, *args], capture_output=True, text=True, timeout=300, env=env, cwd=ROOT
    )


def _printed_reproduce(stdout: str) -> str:
    # Lines that end in a backslash go on, as in a shell; none is wider than COLUMNS.
    assert max(len(line) for line in stdout.splitlines()) <= 100
    (command,) = re.findall(r"^\s*reproduce: ((?:.* \\\n)*.*)$", stdout, re.MULTILINE)
    return str(command)


def _statuses(report: dict[str, Any]) -> dict[str, str]:
    return {r["check"]: r["status"] for r in report["results"]}


def _rerun(first: dict[str, Any], command: str, tmp_path: Path) -> dict[str, Any]:
    """Run ``command`` as a shell runs a pasted line (``-q --json-report`` added); its report."""
    again_path = tmp_path / "again.json"
    env = {**os.environ, "PATH": f"{Path(CLI).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    again = subprocess.run(
        ["sh", "-c", f"{command} -q --json-report {shlex.quote(str(again_path))}"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
    )
    assert again.returncode == first["exit_code"], again.stdout[-3000:] + again.stderr[-2000:]
    rerun = json.loads(again_path.read_text())
    assert _statuses(rerun) == _statuses(first)
    assert rerun["options"] == first["options"] and rerun["seed"] == first["seed"]
    assert rerun["reproduce"] == first["reproduce"]
    return rerun


def _words(command: str) -> list[str]:
    argv = shlex.split(command.replace(" \\\n", " "))
    assert argv[:2] == ["prime-rl-dynamo", "conformance"], command
    return argv[2:]


def test_the_printed_line_of_a_cli_run_reruns_it(broken: Any, tmp_path: Path) -> None:
    first_path = tmp_path / "first.json"
    proc = _cli(
        ["conformance", broken.frontend_url, "-q", *OPTIONS, "--json-report", str(first_path)]
    )
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    first = json.loads(first_path.read_text())
    statuses = _statuses(first)
    assert statuses["LIST-6::body"] == "fail" and statuses["HTTP-2::head"] == "skip"
    assert statuses["HTTP-6::stable-polls"] == statuses["HTTP-7::concurrent-polls"] == "pass"
    printed = _printed_reproduce(proc.stdout)
    assert "\\\n" in printed  # wrapped, as a shell reads it
    reproduce = _words(printed)
    assert shlex.join(["prime-rl-dynamo", "conformance", *reproduce]) == first["reproduce"]
    for flag in FLAGS:
        assert flag in reproduce, flag
    _rerun(first, printed, tmp_path)


def test_the_line_of_a_pytest_run_reruns_it_on_the_cli(broken: Any, tmp_path: Path) -> None:
    first_path = tmp_path / "pytest.json"
    spelled = [a.replace("--", "--rl-", 1) if a.startswith("--") else a for a in OPTIONS]
    proc = pytest_route(
        "--rl-url", broken.frontend_url, *spelled, "--rl-json-report", str(first_path), timeout=300
    )
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    first = json.loads(first_path.read_text())
    assert first["options"]["checks"] == []  # every selected item: no --check list in the line
    for flag in FLAGS:
        assert flag in _words(first["reproduce"]), flag
    _rerun(first, first["reproduce"], tmp_path)


def test_the_line_of_an_embedded_reference_run_keeps_its_target(tmp_path: Path) -> None:
    # Without --target reference a rerun would stand up real Dynamo when it is installed.
    first_path = tmp_path / "first.json"
    selection = "--profile frontend --check LIST-1::body --check HTTP-4::unknown-paths"
    small = "--load 2x2 --polls 1 --seed 4"
    argv = ["conformance", "-q", "--target", "reference", *selection.split(), *small.split()]
    proc = _cli([*argv, "--json-report", str(first_path)])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    first = json.loads(first_path.read_text())
    assert _statuses(first) == {"HTTP-4::unknown-paths": "pass", "LIST-1::body": "pass"}
    reproduce = _words(first["reproduce"])
    assert reproduce[reproduce.index("--target") + 1] == "reference"
    rerun = _rerun(first, first["reproduce"], tmp_path)
    assert rerun["target"]["kind"] == "reference"
