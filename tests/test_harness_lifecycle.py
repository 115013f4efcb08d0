"""The harness never leaves a process behind: SIGTERM or SIGKILL of the harness, a failing stub.

Each case runs a real fleet (real Dynamo frontend, stub workers; etcd when installed) in a
separate driver process, or with an interpreter wrapper that makes the stubs fail.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from prime_rl_dynamo.errors import HarnessError
from prime_rl_dynamo.topology import topology_from_dict
from tests._harness_support import etcd_available, pids_alive, require_dynamo

require_dynamo()

from prime_rl_dynamo.suite.harness import DynamoFleet  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.dynamo]

DRIVER = """
import json, sys, time
from prime_rl_dynamo.suite.harness import start_dynamo_fleet
from prime_rl_dynamo.topology import topology_from_dict
fleet = start_dynamo_fleet(
    topology_from_dict({"engines": [{"component": "a", "count": 2}]}), discovery=sys.argv[1]
)
info = {"pids": [p.pid for p in fleet.processes], "workdir": str(fleet.workdir)}
print(json.dumps(info), flush=True)
time.sleep(120)
"""


def _start_driver(discovery: str) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, discovery], stdout=subprocess.PIPE, text=True
    )
    assert driver.stdout is not None
    line = driver.stdout.readline()  # the driver prints once its fleet is listed
    assert line, f"the driver exited with {driver.wait(timeout=10)} before its fleet was up"
    return driver, json.loads(line)


def _wait_gone(pids: list[int], timeout: float = 15.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while pids_alive(pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return pids_alive(pids)


def test_sigterm_to_the_harness_stops_the_whole_fleet() -> None:
    driver, info = _start_driver("file")
    try:
        assert len(pids_alive(info["pids"])) == 3  # frontend + 2 stubs
        driver.send_signal(signal.SIGTERM)
        assert driver.wait(timeout=20) == 128 + signal.SIGTERM
        assert _wait_gone(info["pids"]) == []
        assert not Path(info["workdir"]).exists()
    finally:
        driver.kill()
        driver.wait(timeout=10)


def test_sigkill_of_the_harness_takes_its_children_along() -> None:
    backend = "etcd" if etcd_available() else "file"
    driver, info = _start_driver(backend)
    try:
        assert len(pids_alive(info["pids"])) == (4 if backend == "etcd" else 3)
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=10)
        # Nothing can clean up after SIGKILL but the kernel's parent-death signal.
        assert _wait_gone(info["pids"]) == []
    finally:
        driver.kill()
        driver.wait(timeout=10)
        shutil.rmtree(info["workdir"], ignore_errors=True)


def test_a_stub_that_fails_to_start_is_reported_with_its_log(tmp_path: Path) -> None:
    wrapper = tmp_path / "python"
    wrapper.write_text(
        "#!/bin/sh\n"
        'case "$*" in *harness.stub_worker*) echo "boom: stub cannot start" >&2; exit 4;; esac\n'
        f'exec {sys.executable} "$@"\n'
    )
    wrapper.chmod(0o755)
    fleet = DynamoFleet(topology_from_dict({"engines": [{"component": "a"}]}), python=str(wrapper))
    with pytest.raises(HarnessError) as info:
        fleet.start()
    message = str(info.value)
    assert "stub worker stub-001" in message and "exited during start-up" in message
    assert "boom: stub cannot start" in message
    assert fleet.frontend is not None and "frontend" in message  # every process's tail
    assert pids_alive([p.pid for p in fleet.processes]) == []
    assert not fleet.workdir.exists()


def test_cli_dynamo_up_prints_the_fleet_and_stops_on_ctrl_c() -> None:
    cli = subprocess.Popen(
        [sys.executable, "-m", "prime_rl_dynamo.cli", "dynamo", "up", "--json"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert cli.stdout is not None
        lines = []
        for line in cli.stdout:  # the JSON document ends with a closing brace at column 0
            lines.append(line)
            if line.rstrip() == "}":
                break
        info = json.loads("".join(lines))
        assert info["inference_world_size"] == 16  # the default topology
        assert len(info["engines"]) == 6
        listing = httpx.get(info["discovery_url"], timeout=10).json()
        assert len(listing["workers"]) == 6
        listed = {w["admin_base_url"] for w in listing["workers"]}
        assert listed == {e["admin_base_url"] for e in info["engines"]}
        pids = _fleet_pids(cli.pid)
        assert len(pids) == 7  # frontend + 6 stubs
        cli.send_signal(signal.SIGINT)
        assert cli.wait(timeout=20) == 0
        assert _wait_gone(pids) == []
        assert not Path(info["workdir"]).exists()
    finally:
        cli.kill()
        cli.wait(timeout=10)


def _fleet_pids(parent: int) -> list[int]:
    """Children of ``parent`` (read from /proc/*/stat, which every Linux kernel has)."""
    children = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == parent:  # fields: state, ppid, ...
            children.append(int(entry.name))
    return children


def test_a_stolen_frontend_port_is_chosen_again(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from prime_rl_dynamo.suite.harness import _fleet

    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    taken = squatter.getsockname()[1]
    real_free_port = _fleet.free_port
    handed: list[int] = []

    def first_one_taken() -> int:
        port = taken if not handed else real_free_port()
        handed.append(port)
        return port

    monkeypatch.setattr(_fleet, "free_port", first_one_taken)
    try:
        with DynamoFleet(topology_from_dict({"engines": [{"component": "a"}]})) as fleet:
            fleet.start()
            assert fleet.http_port != taken and handed[0] == taken
            assert fleet.frontend is not None and fleet.frontend.name == "frontend-1"
            assert "already in use" in (fleet.workdir / "frontend-0.log").read_text()
            assert len(fleet.wait_ready(1, timeout=30)["workers"]) == 1
    finally:
        squatter.close()
