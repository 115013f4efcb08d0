"""Real Dynamo 1.6.1 on every request plane, under every namespace scope, with models registered
through the runtime (docs/harness.md; findings in docs/findings.md)."""

from __future__ import annotations

from typing import Any

import pytest

from prime_rl_dynamo.errors import HarnessError
from prime_rl_dynamo.topology import topology_from_dict
from prime_rl_dynamo.validate import check_body
from tests._harness_support import fetch_snapshot, listening_sockets, pids_alive, require_dynamo

require_dynamo()

from conformance.roundtrip import compare_listing  # noqa: E402
from prime_rl_dynamo.suite.harness import DynamoFleet, start_dynamo_fleet  # noqa: E402
from prime_rl_dynamo.suite.harness._nats import find_nats_server  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.dynamo]

needs_nats = pytest.mark.skipif(
    find_nats_server() is None, reason="needs nats-server (Debian package nats-server)"
)

TWO = {"model": "m", "engines": [{"component": "prefill", "count": 2, "tp": 2}]}


@needs_nats
@pytest.mark.nats
def test_nats_plane_lists_nats_subjects_and_stays_on_loopback() -> None:
    with start_dynamo_fleet(topology_from_dict(TWO), request_plane="nats") as fleet:
        assert fleet.nats is not None and fleet.nats.url.startswith("nats://127.0.0.1:")
        raw, snapshot = fetch_snapshot(fleet)
        assert check_body(raw) == []
        by_identity = {w.identity: w for w in snapshot.workers}
        for engine in fleet.engines:
            worker = by_identity[engine.identity]
            assert worker.transport.tcp is None
            assert worker.transport.nats_tcp == (f"dynamo_prefill.rl-{engine.instance_id:x}"), (
                worker.transport
            )
            assert worker.model == "m"
        assert compare_listing(fleet.listing(), fleet.engines, set(), when="nats") == []
        sockets = listening_sockets(p.pid for p in fleet.processes)
        assert fleet.nats.process.pid in {pid for _, _, pid in sockets}
        assert [s for s in sockets if s[0] != "127.0.0.1"] == []
        pids = [p.pid for p in fleet.processes]
    assert pids_alive(pids) == []


def test_http_plane_is_refused_by_the_1_6_1_runtime_with_one_clear_line() -> None:
    fleet = DynamoFleet(topology_from_dict(TWO), request_plane="http", startup_timeout=30)
    with pytest.raises(HarnessError) as info:
        fleet.start()
    message = str(info.value)
    assert "exited during start-up" in message
    assert "Invalid request plane mode: 'http'. Valid options are: 'nats', 'tcp'" in message
    assert "Traceback" not in message
    assert pids_alive([p.pid for p in fleet.processes]) == []
    assert not fleet.workdir.exists()


def test_unknown_request_plane_is_a_harness_error() -> None:
    with pytest.raises(HarnessError, match="request plane must be one of"):
        DynamoFleet(topology_from_dict(TWO), request_plane="udp")


SCOPED = {
    "namespace": "rl-run-7",
    "model": None,
    "engines": [
        {"component": f"w{i}", "namespace": ns}
        for i, ns in enumerate(
            [
                "rl-run-7",
                "rl-run-7-prefill",
                "rl-run-7-a-b",
                "rl-run-70",
                "other-rl-run-7",
                "rl-run",
            ]
        )
    ],
}


@pytest.mark.parametrize(
    ("scope", "body_namespace", "listed"),
    [
        ({}, "rl-run-7", ["rl-run-7"]),
        (
            {"namespace_prefix": "rl-run-7"},
            "rl-run-7",
            ["rl-run-7", "rl-run-7-a-b", "rl-run-7-prefill"],
        ),
        ({"namespace_prefix": "rl-run-7", "prefix_strict": True}, "rl-run-7", ["rl-run-7"]),
        ({"worker_suffix": "prefill"}, "rl-run-7-prefill", ["rl-run-7-prefill"]),
        (
            {"namespace_prefix": "rl-run"},
            "rl-run",
            ["rl-run", *sorted(["rl-run-7", "rl-run-7-prefill", "rl-run-7-a-b", "rl-run-70"])],
        ),
    ],
    ids=["exact", "prefix", "prefix-strict", "worker-suffix", "prefix-parent"],
)
def test_namespace_scopes_as_1_6_1_applies_them(
    scope: dict[str, Any], body_namespace: str, listed: list[str]
) -> None:
    with start_dynamo_fleet(topology_from_dict(SCOPED), engines_per_process=8, **scope) as fleet:
        body = fleet.wait_settled(timeout=30)
        assert body["namespace"] == body_namespace == fleet.scope
        assert sorted(w["namespace"] for w in body["workers"]) == sorted(listed)
        assert sorted(e.spec.namespace for e in fleet.engines if fleet.in_scope(e)) == sorted(
            listed
        )
        assert check_body(body) == []  # LIST-5 holds under each of these scopes


def test_prefix_dynamo_lists_every_namespace_and_breaks_list_5() -> None:
    topology = {"namespace": "dynamo", "model": None, "engines": SCOPED["engines"][:2]}
    with start_dynamo_fleet(
        topology_from_dict(topology), engines_per_process=8, namespace_prefix="dynamo"
    ) as fleet:
        want = {"rl-run-7", "rl-run-7-prefill"}
        body = fleet.listing()
        for _ in range(50):
            if {w["namespace"] for w in body["workers"]} >= want:
                break
            body = fleet.listing()
        assert body["namespace"] == "dynamo"
        assert {w["namespace"] for w in body["workers"]} == want
        assert {v.requirement for v in check_body(body)} == {"LIST-5"}


MODELS = {
    "model": "Qwen/Qwen3-0.6B",
    "engines": [
        {"component": "prefill", "count": 2, "tp": 2},
        {"component": "judge", "model": "other/Model-7B"},
        {"component": "nomodel", "model": None},
        {"component": "multi"},
    ],
}


def test_models_registered_through_the_runtime_are_listed_as_registered() -> None:
    with start_dynamo_fleet(
        topology_from_dict(MODELS),
        engines_per_process=8,
        extra_models={"dynamo.multi#0": ["other/Model-7B"]},
    ) as fleet:
        body = fleet.wait_settled(timeout=30)
        models = {(w["component"], w.get("model")) for w in body["workers"]}
        assert models == {
            ("prefill", "Qwen/Qwen3-0.6B"),
            ("judge", "other/Model-7B"),
            ("nomodel", None),
            ("multi", None),  # two models on one instance: ambiguous, omitted
        }
        assert compare_listing(body, fleet.engines, set(), when="models") == []
        # The check can fail: a worker said to have registered another model is caught.
        wrong = fleet.engine("dynamo.judge#0")
        wrong.models = ("Qwen/Qwen3-0.6B",)
        problems = compare_listing(body, fleet.engines, set(), when="models")
        assert len(problems) == 1 and "expected model 'Qwen/Qwen3-0.6B'" in problems[0]
        # The card cache lives in the fleet's directory, nothing is downloaded.
        assert list((fleet.workdir / "home" / ".cache" / "dynamo").iterdir())


def test_roundtrip_on_the_http_plane_reports_the_runtimes_refusal() -> None:
    import conformance
    from conformance.results import Status

    report = conformance.run(profiles=["roundtrip"], request_plane="http", topologies=1, seed=1)
    assert {r.status for r in report.results} == {Status.ERROR}
    for result in report.results:
        assert "Invalid request plane mode: 'http'" in result.message, result.message


@needs_nats
@pytest.mark.nats
def test_dynamo_up_takes_engines_request_plane_and_scope() -> None:
    import json
    import signal
    import subprocess
    import sys

    import httpx

    argv = [sys.executable, "-m", "prime_rl_dynamo.cli", "dynamo", "up", "--engines", "2"]
    argv += ["--request-plane", "nats", "--namespace-prefix", "dynamo", "--json"]
    cli = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert cli.stdout is not None
        lines = []
        for line in cli.stdout:
            lines.append(line)
            if line.rstrip() == "}":
                break
        info = json.loads("".join(lines))
        assert info["request_plane"] == "nats" and info["nats_url"].startswith("nats://127.0.0.1:")
        assert info["scope"] == "dynamo"
        assert [e["models"] for e in info["engines"]] == [["Qwen/Qwen3-0.6B"]] * 2
        body = httpx.get(info["discovery_url"], timeout=10).json()
        assert sorted(list(w["transport"]) for w in body["workers"]) == [["nats_tcp"]] * 2
        assert {w.get("model") for w in body["workers"]} == {"Qwen/Qwen3-0.6B"}
        cli.send_signal(signal.SIGINT)
        assert cli.wait(timeout=30) == 0
    finally:
        cli.kill()
        cli.wait(timeout=10)
