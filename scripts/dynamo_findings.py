"""Reproduce one finding of docs/findings.md on real Dynamo 1.6.1: ``python scripts/dynamo_findings.py NAME``.

Each reproduction starts what it needs on 127.0.0.1 (the bare runtime, or the project's harness:
the real frontend and stub workers on the real runtime), prints what the specification expects
and what was observed, and exits 0 when the deviation is reproduced, 1 when it is not (fixed or
changed upstream), 2 on a usage error. ``--list`` prints the names.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import httpx

Finding = Callable[[], tuple[bool, str, str]]  # -> (reproduced, expected, observed)
FINDINGS: dict[str, Finding] = {}


def finding(name: str) -> Callable[[Finding], Finding]:
    def register(fn: Finding) -> Finding:
        FINDINGS[name] = fn
        return fn

    return register


def _fleet(topology: dict[str, Any], **kwargs: Any) -> Any:
    from prime_rl_dynamo.suite.harness import start_dynamo_fleet
    from prime_rl_dynamo.topology import topology_from_dict

    data = {"version": 1, "model": None, **topology}
    return start_dynamo_fleet(topology_from_dict(data, source="finding"), **kwargs)


def _bare_runtime(env: dict[str, str], request_plane: str = "tcp") -> str:
    """Create a DistributedRuntime in a fresh interpreter; its one-line outcome."""
    code = (
        "import asyncio\n"
        "from dynamo.runtime import DistributedRuntime\n"
        "async def main():\n"
        "    try:\n"
        f"        DistributedRuntime(asyncio.get_running_loop(), 'file', {request_plane!r}).shutdown()\n"
        "        print('created')\n"
        "    except Exception as exc:\n"
        "        print(f'{type(exc).__name__}: {exc}')\n"
        "asyncio.run(main())\n"
    )
    with tempfile.TemporaryDirectory() as store:
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("DYN_", "NATS_"))}
        full = {**clean, "DYN_FILE_KV": store, "DYN_LOG": "error", **env}
        done = subprocess.run(
            [sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=60
        )
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    return lines[-1] if lines else f"no output (exit {done.returncode}): {done.stderr[-300:]}"


@finding("engine-2")
def engine_route_content_type() -> tuple[bool, str, str]:
    with _fleet({"engines": [{"component": "backend"}]}) as fleet:
        url = f"{fleet.engines[0].system_url}/engine/pause_generation"
        response = httpx.post(url, json={}, timeout=10.0)
        kind = response.headers.get("content-type", "")
        body = response.json()
    observed = f"POST {url} -> {response.status_code}, content-type: {kind}, body {body}"
    return kind.startswith("text/plain"), "content-type: application/json", observed


@finding("worker-7")
def system_url_passed_through() -> tuple[bool, str, str]:
    from prime_rl_dynamo.validate import check_body

    reply = {"status": "ok", "routes": ["r"], "system_url": "not a url"}
    with _fleet(
        {"engines": [{"component": "badsystem"}]}, replies={"dynamo.badsystem#0": reply}
    ) as fleet:
        body = fleet.listing()
    worker = body["workers"][0]
    violations = [str(v) for v in check_body(body) if v.requirement == "WORKER-7"]
    observed = f"listed system_url {worker.get('system_url')!r}; validator: {violations}"
    expected = "the entry refused (error) or system_url left out: never a non-URL system_url"
    return worker.get("system_url") == "not a url", expected, observed


@finding("http-7-probe-per-get")
def probe_per_get() -> tuple[bool, str, str]:
    engines, gets = 16, 3
    with _fleet(
        {"engines": [{"component": "backend", "count": engines}]}, engines_per_process=8
    ) as fleet:
        log = fleet.frontend.log

        def probes() -> int:
            return log.read_text(errors="replace").count("route request cancelled")

        time.sleep(1.0)
        before = probes()
        for _ in range(gets):
            fleet.listing()
        time.sleep(1.0)
        delta = probes() - before
    observed = f"{gets} GETs of a {engines}-engine fleet made {delta} routes probes"
    expected = "a listing that does not cost one request-plane round trip per worker per GET"
    return delta >= gets * engines, expected, observed


@finding("system-port-i16")
def system_port_i16() -> tuple[bool, str, str]:
    observed = "DYN_SYSTEM_PORT=40000 -> " + _bare_runtime({"DYN_SYSTEM_PORT": "40000"})
    expected = "any TCP port 1-65535 accepted for the system server that serves system_url"
    return "expected i16" in observed, expected, observed


def _native_module_settings() -> tuple[bool, list[str], list[str]]:
    """What the runtime's native module (dynamo/_core*.so) names: whether its request-plane
    refusal lists only nats and tcp, its HTTP request-plane settings, its TCP-plane ones."""
    import importlib.util
    import re

    spec = importlib.util.find_spec("dynamo._core")
    if spec is None or spec.origin is None:
        return False, [], []
    with open(spec.origin, "rb") as native:
        data = native.read()
    only_two = b"Valid options are: 'nats', 'tcp'" in data
    http = sorted({m.decode() for m in re.findall(rb"DYN_HTTP_RPC_[A-Z_]+", data)})
    tcp = sorted({m.decode() for m in re.findall(rb"DYN_TCP_RPC_(?:HOST|PORT)", data)})
    return only_two, http, tcp


@finding("worker-3-http-plane")
def http_plane_refused() -> tuple[bool, str, str]:
    refused = _bare_runtime({}, "http")
    env_ignored = _bare_runtime({"DYN_REQUEST_PLANE": "http"}, "tcp")
    only_two, http_settings, tcp_settings = _native_module_settings()
    observed = (
        f"DistributedRuntime(loop, 'file', 'http') -> {refused}; "
        f"DYN_REQUEST_PLANE=http with DistributedRuntime(loop, 'file', 'tcp') -> {env_ignored}; "
        f"native module: refusal lists only nats and tcp: {only_two}, "
        f"HTTP request-plane settings {http_settings}, TCP ones {tcp_settings}"
    )
    expected = "an http request plane, whose workers are listed with transport {'http': URL}"
    reproduced = (
        "Invalid request plane mode: 'http'" in refused
        and env_ignored == "created"
        and only_two
        and not http_settings
    )
    return reproduced, expected, observed


def _scope(prefix: str, namespaces: list[str], **kwargs: Any) -> dict[str, Any]:
    groups = [{"component": f"w{i}", "namespace": ns} for i, ns in enumerate(namespaces)]
    with _fleet(
        {"namespace": namespaces[0], "engines": groups},
        engines_per_process=8,
        namespace_prefix=prefix,
        **kwargs,
    ) as fleet:
        time.sleep(2.0)  # engines outside the harness's idea of the scope are not waited for
        body: dict[str, Any] = fleet.listing()
    return body


def _seen(body: dict[str, Any]) -> tuple[str, list[str]]:
    return body["namespace"], sorted(w["namespace"] for w in body["workers"])


@finding("list-5-prefix-dynamo")
def prefix_dynamo_is_global() -> tuple[bool, str, str]:
    from prime_rl_dynamo.validate import check_body

    body = _scope("dynamo", ["dynamo", "prod"])
    scope, listed = _seen(body)
    violations = [str(v) for v in check_body(body) if v.requirement == "LIST-5"]
    observed = (
        f"DYN_NAMESPACE_PREFIX=dynamo: body namespace {scope!r}, workers in {listed}; "
        f"validator: {violations}"
    )
    expected = "only namespaces dynamo and dynamo-... listed (LIST-5)"
    return "prod" in listed and bool(violations), expected, observed


@finding("list-5-prefix-boundary")
def prefix_needs_a_dash() -> tuple[bool, str, str]:
    scope, listed = _seen(_scope("rl-run-7", ["rl-run-7", "rl-run-7-prefill", "rl-run-70"]))
    observed = f"DYN_NAMESPACE_PREFIX=rl-run-7: body namespace {scope!r}, workers in {listed}"
    expected = "every namespace starting with the prefix listed, rl-run-70 included (SPEC 5.2)"
    return listed == ["rl-run-7", "rl-run-7-prefill"], expected, observed


@finding("list-5-prefix-strict")
def prefix_strict_is_exact() -> tuple[bool, str, str]:
    scope, listed = _seen(_scope("rl-run-7", ["rl-run-7", "rl-run-7-prefill"], prefix_strict=True))
    observed = (
        f"DYN_NAMESPACE_PREFIX=rl-run-7, DYN_NAMESPACE_PREFIX_STRICT=true: body namespace "
        f"{scope!r}, workers in {listed}"
    )
    expected = "a prefix scope (SPEC 5.2 knows no strict form): rl-run-7-prefill listed"
    return listed == ["rl-run-7"], expected, observed


@finding("list-7-model-from-cards")
def model_from_cards_only() -> tuple[bool, str, str]:
    reply = {"status": "ok", "routes": ["r"], "model": "said/in-the-reply"}
    with _fleet(
        {"model": "m1", "engines": [{"component": "said"}, {"component": "multi"}]},
        replies={"dynamo.said#0": reply},
        register_models=False,
        extra_models={"dynamo.multi#0": ["m1", "m2"]},
    ) as fleet:
        fleet.wait_settled(timeout=30)
        body = fleet.listing()
    models = {w["component"]: w.get("model", "<omitted>") for w in body["workers"]}
    observed = (
        "a worker answering routes with model 'said/in-the-reply' and no model card, and one "
        f"registering cards m1 and m2, are listed with model: {models}"
    )
    expected = "the model each instance reports (LIST-7), or a defined rule for several"
    return models == {"said": "<omitted>", "multi": "<omitted>"}, expected, observed


def main(argv: list[str]) -> int:
    if argv == ["--list"]:
        print("\n".join(FINDINGS))
        return 0
    if len(argv) != 1 or argv[0] not in FINDINGS:
        print(f"usage: python scripts/dynamo_findings.py {{{','.join(FINDINGS)}}} | --list")
        return 2
    reproduced, expected, observed = FINDINGS[argv[0]]()
    print(f"expected: {expected}")
    print(f"observed: {observed}")
    print("REPRODUCED" if reproduced else "NOT REPRODUCED (fixed or changed upstream?)")
    return 0 if reproduced else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
