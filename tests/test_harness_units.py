"""Fast tests of the harness's parts that need no Dynamo: admin dispatcher, recorder, packing, processes.

Real child processes (sh, python) check the process-group and parent-death handling; the failure
test starts a fleet with a fake interpreter so the error path runs without Dynamo.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from prime_rl_dynamo.errors import HarnessError
from prime_rl_dynamo.suite.harness._fleet import DynamoFleet
from prime_rl_dynamo.suite.harness._process import ManagedProcess, free_port, stop_all
from prime_rl_dynamo.suite.harness._release import installed_release
from prime_rl_dynamo.suite.harness._signals import SigtermGuard
from prime_rl_dynamo.suite.harness._stubs import StubRecorder
from prime_rl_dynamo.suite.recording import RecordedRequest, Recorder
from prime_rl_dynamo.topology import topology_from_dict
from tests._harness_support import etcd_available, pids_alive

pytest.importorskip("starlette", reason="the stub admin API reuses the reference extra")

from prime_rl_dynamo.suite.harness._admin import AdminDispatcher
from prime_rl_dynamo.suite.reference.state import ReferenceEngine


def _wait_gone(pids: list[int], timeout: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while pids_alive(pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return pids_alive(pids)


def _admin_call(app: AdminDispatcher, method: str, url: str, **kwargs: object) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport) as client:
            return await client.request(method, url, **kwargs)  # type: ignore[arg-type]

    return asyncio.run(go())


@pytest.fixture
def admin() -> tuple[AdminDispatcher, Recorder]:
    topology = topology_from_dict(
        {
            "engines": [
                {"component": "prefill", "world_size": 2},
                {"component": "flaky", "faults": {"admin_fail": ["update_weights"]}},
            ]
        }
    )
    good, flaky = topology.engines()
    recorder = Recorder()
    engines = {
        4001: ReferenceEngine(spec=good, port=4001, host="127.0.0.1"),
        4002: ReferenceEngine(spec=flaky, port=4002, host="127.0.0.1"),
    }
    return AdminDispatcher(engines, recorder), recorder


def test_admin_dispatcher_routes_by_port_and_records_relative_paths(
    admin: tuple[AdminDispatcher, Recorder],
) -> None:
    app, recorder = admin
    reply = _admin_call(
        app, "POST", "http://127.0.0.1:4001/admin/pause?mode=keep&clear_cache=false"
    )
    assert reply.status_code == 200 and reply.json() == {"status": "ok"}
    rpc = _admin_call(
        app,
        "POST",
        "http://127.0.0.1:4001/admin/collective_rpc",
        json={"method": "m", "args": [], "kwargs": {}},
    )
    assert rpc.json() == {"results": [None, None]}  # one per worker of the ws=2 engine
    failed = _admin_call(
        app, "POST", "http://127.0.0.1:4002/admin/update_weights", json={"weight_dir": "/w"}
    )
    assert failed.status_code == 500 and failed.json()["status"] == "error"
    calls = recorder.requests(server="admin")
    assert [(c.engine, c.path, c.status) for c in calls] == [
        ("dynamo.prefill#0", "/pause", 200),
        ("dynamo.prefill#0", "/collective_rpc", 200),
        ("dynamo.flaky#0", "/update_weights", 500),
    ]
    assert calls[0].query == "mode=keep&clear_cache=false" and calls[0].host == "127.0.0.1"
    assert calls[2].json == {"weight_dir": "/w"}


def test_stub_admin_api_accepts_collective_rpc_as_vllm_does(
    admin: tuple[AdminDispatcher, Recorder],
) -> None:
    # vLLM defaults args to [] and kwargs to {}; every wire form trainers use is answered.
    app, _ = admin
    for body in (
        {"method": "init_broadcaster", "kwargs": {"host": "h", "port": 1, "rank_offset": 0}},
        {"method": "init_broadcaster", "timeout": 5, "args": ["h", 1, 0, 2, 5, "s"]},
        {"method": "update_weights_from_path", "args": ["/w"]},
        {"method": "reload_weights", "kwargs": {"weights_path": "/w"}},
        {"method": "get_weight_version"},
    ):
        reply = _admin_call(app, "POST", "http://127.0.0.1:4001/admin/collective_rpc", json=body)
        assert reply.status_code == 200 and reply.json() == {"results": [None, None]}, body
    bad = _admin_call(app, "POST", "http://127.0.0.1:4001/admin/collective_rpc", json={"args": []})
    assert bad.status_code == 400 and "'method' is required" in bad.json()["message"]


def test_admin_dispatcher_refuses_other_paths_and_ports(
    admin: tuple[AdminDispatcher, Recorder],
) -> None:
    app, recorder = admin
    # The system routes are served by Dynamo's system server, not by the admin port.
    assert (
        _admin_call(app, "POST", "http://127.0.0.1:4001/engine/pause_generation").status_code == 404
    )
    assert _admin_call(app, "GET", "http://127.0.0.1:4999/admin/health").status_code == 404
    bad = _admin_call(app, "POST", "http://127.0.0.1:4001/admin/init_broadcaster", json={"host": 1})
    assert bad.status_code == 400 and bad.json()["status"] == "error"
    assert [c.status for c in recorder.requests()] == [400]


def _line(engine: str, t: float) -> str:
    request = RecordedRequest(
        engine=engine, server="system", method="POST", path="/engine/x", query="",
        headers={}, json={"t": t}, time=t,
    )  # fmt: skip
    return json.dumps(request.to_dict()) + "\n"


def test_fleet_recorder_reads_complete_lines_in_time_order(tmp_path: Path) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text(_line("a", 3.0) + _line("a", 1.0)[:-10])  # the second line is half written
    second.write_text(_line("b", 2.0))
    recorder = StubRecorder(lambda: [first, second, tmp_path / "missing.jsonl"])
    assert [(r.engine, r.time) for r in recorder.requests()] == [("b", 2.0), ("a", 3.0)]
    with first.open("a") as fh:
        fh.write(_line("a", 1.0)[-10:])
    assert [r.time for r in recorder.requests(engine="a")] == [1.0, 3.0]
    recorder.clear()
    with second.open("a") as fh:
        fh.write(_line("b", 4.0))
    assert [r.time for r in recorder.requests()] == [4.0]


def test_fleet_options_are_checked_before_anything_starts() -> None:
    with pytest.raises(HarnessError, match="discovery backend must be one of"):
        DynamoFleet(discovery="consul")
    with pytest.raises(HarnessError, match="engines_per_process must be >= 1"):
        DynamoFleet(engines_per_process=0)
    with pytest.raises(HarnessError, match=r"replies name engines not in the topology: \['x#0'\]"):
        DynamoFleet(replies={"x#0": {"status": "ok"}})
    fleet = DynamoFleet()
    assert not fleet.workdir.exists()  # nothing is created before start()


def test_packing_gives_dead_engines_their_own_process() -> None:
    small = topology_from_dict({"engines": [{"component": "a", "count": 10}]})
    assert [len(c) for c in DynamoFleet(small).stubs.pack(small.engines())] == [1] * 10
    big = topology_from_dict(
        {
            "engines": [
                {"component": "a", "count": 20},
                {"component": "ghost", "faults": {"dead": True}},
            ]
        }
    )
    chunks = DynamoFleet(big).stubs.pack(big.engines())
    assert [len(c) for c in chunks] == [1, 8, 8, 4]
    assert chunks[0][0].component == "ghost"
    keys = [s.key for c in chunks for s in c]
    assert sorted(keys) == sorted(s.key for s in big.engines())
    packed = DynamoFleet(small, engines_per_process=4).stubs.pack(small.engines())
    assert [len(c) for c in packed] == [4, 4, 2]


@pytest.mark.integration
def test_free_ports_are_not_handed_out_twice() -> None:
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == 50


@pytest.mark.integration
def test_stop_all_reaches_the_whole_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    proc = ManagedProcess(
        "sh",
        ["sh", "-c", f"sleep 60 & echo $! > {pidfile}; wait"],
        dict(os.environ),
        tmp_path / "sh.log",
    )
    proc.start()
    deadline = time.monotonic() + 10
    while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.02)
    grandchild = int(pidfile.read_text())
    assert pids_alive([proc.pid, grandchild]) == [proc.pid, grandchild]
    stop_all([proc], grace=2.0)
    assert _wait_gone([grandchild]) == []
    assert not proc.alive()


DRIVER = """
import sys, time
from pathlib import Path
from typing import Any
from prime_rl_dynamo.suite.harness._process import ManagedProcess
child = ManagedProcess(
    "child",
    [sys.executable, "-c",
     "from prime_rl_dynamo.suite.harness._process import die_with_parent; die_with_parent(); "
     "import time; time.sleep(60)"],
    {**__import__("os").environ},
    Path(sys.argv[1]),
)
child.start()
print(child.pid, flush=True)
time.sleep(60)
"""


@pytest.mark.integration
def test_children_die_with_a_sigkilled_harness(tmp_path: Path) -> None:
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(tmp_path / "child.log")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert driver.stdout is not None
        child = int(driver.stdout.readline())
        assert pids_alive([child]) == [child]
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=10)
        assert _wait_gone([child]) == []
    finally:
        driver.kill()
        driver.wait(timeout=10)


@pytest.mark.integration
def test_start_failure_raises_with_the_log_tail_and_leaves_nothing(tmp_path: Path) -> None:
    fake = tmp_path / "fake-python"
    fake.write_text("#!/bin/sh\necho 'boom: this interpreter cannot run Dynamo' >&2\nexit 3\n")
    fake.chmod(0o755)
    fleet = DynamoFleet(
        topology_from_dict({"engines": [{"component": "a"}]}),
        python=str(fake),
        release=installed_release(),  # the fake interpreter cannot say which release it has
        startup_timeout=20,
    )
    with pytest.raises(HarnessError) as info:
        fleet.start()
    message = str(info.value)
    assert "exited during start-up" in message and "frontend" in message
    assert "boom: this interpreter cannot run Dynamo" in message
    assert "exited with 3" in message
    assert pids_alive([p.pid for p in fleet.processes]) == []
    assert not fleet.workdir.exists()


@pytest.fixture
def default_sigterm() -> Iterator[None]:
    """SIGTERM at its default for the test, whatever an earlier test left installed."""
    before = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def test_sigterm_guards_stack_and_the_last_one_out_restores_the_default(
    default_sigterm: None,
) -> None:
    first, second, third = SigtermGuard(), SigtermGuard(), SigtermGuard()
    assert first.install() and second.install()
    assert signal.getsignal(signal.SIGTERM) is second
    first.uninstall()  # stopped out of order: the handler on top stays
    assert signal.getsignal(signal.SIGTERM) is second
    assert third.install()
    third.uninstall()
    assert signal.getsignal(signal.SIGTERM) is second
    second.uninstall()  # skips the uninstalled first guard
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    with pytest.raises(SystemExit) as info:
        first(signal.SIGTERM, None)
    assert info.value.code == 128 + signal.SIGTERM


def test_sigterm_guard_leaves_someone_elses_handler_alone(default_sigterm: None) -> None:
    def theirs(signum: int, frame: object) -> None:
        pass

    signal.signal(signal.SIGTERM, theirs)
    try:
        guard = SigtermGuard()
        assert not guard.install()
        guard.uninstall()
        assert signal.getsignal(signal.SIGTERM) is theirs
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def test_cli_dynamo_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from prime_rl_dynamo.cli import main

    assert main(["dynamo"]) == 2  # no action: help
    assert "up" in capsys.readouterr().err  # the usage exit: help on stderr, as every group
    bad = tmp_path / "fleet.yaml"
    bad.write_text("engines:\n  - component: prefill\n    count: 0\n")
    assert main(["dynamo", "up", "--topology", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "is not a valid topology file" in err and "/engines/0/count" in err
    assert main(["dynamo", "up", "--topology", str(tmp_path / "missing.yaml")]) == 2
    assert "cannot read topology file" in capsys.readouterr().err


@pytest.mark.integration
@pytest.mark.etcd
@pytest.mark.skipif(not etcd_available(), reason="needs etcd (Debian package etcd-server)")
def test_etcd_restarts_on_new_ports_when_one_was_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    from prime_rl_dynamo.suite.harness import _etcd

    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        handed: list[int] = []
        real_free_port = _etcd.free_port

        def first_one_taken() -> int:
            handed.append(taken if not handed else real_free_port())
            return handed[-1]

        monkeypatch.setattr(_etcd, "free_port", first_one_taken)
        server = _etcd.EtcdServer(tmp_path, dict(os.environ))
        try:
            server.start(timeout=30)
            assert server.attempt == 1 and server.client_port != taken
            assert "address already in use" in (tmp_path / "etcd-0.log").read_text()
            assert httpx.get(f"{server.url}/health", timeout=5).json()["health"] == "true"
        finally:
            server.process.kill()
        assert pids_alive([server.process.pid]) == []


@pytest.mark.integration
def test_trim_log_keeps_the_tail_and_the_child_keeps_appending(tmp_path: Path) -> None:
    proc = ManagedProcess(
        "writer",
        [sys.executable, "-c", "import sys; sys.stdout.write('x' * 5000 + 'END1\\n')"],
        dict(os.environ),
        tmp_path / "writer.log",
    )
    proc.start()
    assert proc.popen is not None and proc.popen.wait(timeout=20) == 0
    assert not proc.trim_log(10_000)
    assert proc.trim_log(1000)
    text = proc.log.read_text()
    assert text.startswith("[... log trimmed by the harness ...]") and text.endswith("END1\n")
    assert len(text) < 600
    with proc.log.open("ab") as fh:  # as the child's O_APPEND descriptor would
        fh.write(b"END2\n")
    assert proc.tail(2).splitlines()[-1] == "END2"


@pytest.mark.parametrize(
    ("kwargs", "scope", "inside", "outside"),
    [
        ({}, "rl-run-7", ["rl-run-7"], ["rl-run-7-a", "rl-run-8"]),
        ({"worker_suffix": "p"}, "rl-run-7-p", ["rl-run-7-p"], ["rl-run-7", "rl-run-7-q"]),
        (
            {"namespace_prefix": "rl-run-7"},
            "rl-run-7",
            ["rl-run-7", "rl-run-7-a", "rl-run-7-a-b"],
            ["rl-run-70", "rl-run-7_x", "other-rl-run-7", "rl-run"],
        ),
        (
            {"namespace_prefix": "rl-run-7", "prefix_strict": True, "worker_suffix": "p"},
            "rl-run-7",
            ["rl-run-7"],
            ["rl-run-7-a", "rl-run-7-p"],
        ),
    ],
    ids=["exact", "worker-suffix", "prefix", "strict-prefix-ignores-suffix"],
)
def test_namespace_scope_rules_follow_what_1_6_1_does(
    kwargs: dict[str, Any], scope: str, inside: list[str], outside: list[str]
) -> None:
    fleet = DynamoFleet(topology_from_dict({"namespace": "rl-run-7", "engines": []}), **kwargs)
    assert fleet.scope == scope
    assert [ns for ns in inside if not fleet.environment.in_namespace_scope(ns)] == []
    assert [ns for ns in outside if fleet.environment.in_namespace_scope(ns)] == []


def test_model_directory_is_made_locally_and_complete(tmp_path: Path) -> None:
    from prime_rl_dynamo.suite.harness._model import write_model_dir

    first = write_model_dir(tmp_path, "org/Model-1")
    assert write_model_dir(tmp_path, "org/Model-1") == first
    assert write_model_dir(tmp_path, "org/Model-2") != first
    files = {p.name for p in first.iterdir()}
    assert files == {
        "config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "generation_config.json",
    }
    config = json.loads((first / "config.json").read_text())
    vocab = json.loads((first / "tokenizer.json").read_text())["model"]["vocab"]
    assert config["vocab_size"] == len(vocab) and config["eos_token_id"] == vocab["</s>"]
