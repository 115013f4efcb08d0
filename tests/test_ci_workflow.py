"""docs/ci/prime-rl-dynamo-conformance.yml does what it says: its run steps, executed here in order
against the real Dynamo frontend they start, wait for the fleet and leave the reports the upload
step names. Only the install step is left out (this checkout is installed already)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / "docs" / "ci" / "prime-rl-dynamo-conformance.yml"


def _job() -> dict[str, Any]:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    (job,) = workflow["jobs"].values()
    return dict(job)


@pytest.mark.integration
def test_workflow_uploads_what_its_steps_write_and_always_cleans_up() -> None:
    job = _job()
    steps = job["steps"]
    uses = [s["uses"].split("@")[0] for s in steps if "uses" in s]
    assert uses[:2] == ["actions/checkout", "actions/setup-python"]
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["if"] == "always()"  # reports are uploaded when the suite fails, too
    assert upload["with"]["path"].rstrip("/") == job["env"]["REPORT_DIR"]
    stop = next(s for s in steps if s.get("name") == "Stop the frontend")
    assert stop["if"] == "always()"
    suite = next(s for s in steps if s.get("name") == "Run the conformance suite")
    assert "--junit-xml" in suite["run"] and "--json-report" in suite["run"]
    # No GitHub expression inside a run step: what runs here is exactly what runs there.
    assert not any("${{" in s.get("run", "") for s in steps)
    # Every report the suite can write is asked for: once `conformance` has --html-report and
    # --waivers, the workflow must use them (this fails until it does).
    helped = subprocess.run(
        [str(Path(sys.executable).with_name("prime-rl-dynamo")), "conformance", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert helped.returncode == 0
    for flag in ("--junit-xml", "--json-report", "--html-report", "--waivers"):
        if flag in helped.stdout:
            assert flag in suite["run"], f"the workflow does not use {flag}"


@pytest.mark.integration
@pytest.mark.dynamo
@pytest.mark.slow
def test_the_workflows_run_steps_pass_against_prime_rl_dynamo_dynamo_up(tmp_path: Path) -> None:
    pytest.importorskip("dynamo.runtime")
    job = _job()
    github_env = tmp_path / "github_env"
    github_env.touch()
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")},
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}",
        "GITHUB_ENV": str(github_env),
        **{k: str(v) for k, v in job["env"].items()},
    }
    workspace = tmp_path / "workspace"  # the checkout directory of the CI job
    workspace.mkdir()
    ran, results = [], {}
    failed = False
    try:
        for step in job["steps"]:
            if "run" not in step or step.get("id") == "install":
                continue
            if failed and step.get("if") != "always()":
                continue
            assert step.get("shell") == "bash"
            for line in github_env.read_text().splitlines():  # what earlier steps exported
                key, _, value = line.partition("=")
                env[key] = value
            proc = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                cwd=workspace,
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            ran.append(step["name"])
            results[step["name"]] = proc
            failed = failed or proc.returncode != 0
    finally:
        pid = env.get("FLEET_PID")
        if pid and "Stop the frontend" not in ran:
            subprocess.run(["kill", pid], check=False)
    assert ran == [
        "Start a frontend",
        "Wait for a ready fleet",
        "Run the conformance suite",
        "Stop the frontend",
    ]
    for name, proc in results.items():
        assert proc.returncode == 0, f"{name}: {proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    reports = workspace / job["env"]["REPORT_DIR"]
    report = json.loads((reports / "report.json").read_text())
    assert report["ok"] and report["target"]["url"] == env["RL_URL"].rstrip("/")
    assert {r["profile"] for r in report["results"]} == {"frontend", "workers"}
    suites = ET.parse(reports / "junit.xml").getroot()
    assert int(suites.get("tests", "0")) == len(report["results"]) > 0
    assert "group_world_size 17" in (reports / "plan.txt").read_text()
    fleet = json.loads((reports / "fleet.json").read_text())
    assert fleet["frontend_url"] == env["RL_URL"]
    # The stop step really stopped the fleet.
    assert subprocess.run(["kill", "-0", env["FLEET_PID"]], capture_output=True).returncode != 0


@pytest.mark.integration
@pytest.mark.dynamo
@pytest.mark.slow
def test_the_schemathesis_snippet_of_docs_conformance_md_waits_and_passes(tmp_path: Path) -> None:
    pytest.importorskip("dynamo.runtime")
    import re
    import socket

    text = (ROOT / "docs" / "conformance.md").read_text(encoding="utf-8")
    (snippet,) = [b for b in re.findall(r"```sh\n(.*?)```", text, flags=re.S) if "fleet.json" in b]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = str(sock.getsockname()[1])
    script = (
        "set -eo pipefail\n"
        # Stop what the snippet starts in the background (SIGTERM: both stop cleanly).
        "trap 'kill $(jobs -p) 2>/dev/null; wait' EXIT\n" + snippet.replace("8001", port)
    )
    bin_dir = str(Path(sys.executable).parent)
    proc = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count("No issues found") == 2, proc.stdout[-3000:]
