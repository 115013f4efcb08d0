"""Shared helpers of the real-Dynamo harness tests (tests/test_harness_*.py)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from typing import Any

import httpx
import pytest

from prime_rl_dynamo.client import Discovery, PollingPolicy, ReadinessPolicy, discover_sync
from prime_rl_dynamo.errors import NotReadyError
from prime_rl_dynamo.plan import Convention
from prime_rl_dynamo.suite.recording import RecordedRequest
from prime_rl_dynamo.topology import topology_from_dict
from prime_rl_dynamo.validate import validate_body

#: The heterogeneous fleet of the real-Dynamo tests: world sizes 2, 2, 4, 1 (W = HETERO_W).
HETERO: dict[str, Any] = {
    "namespace": "dynamo",
    "model": None,
    "engines": [
        {"component": "prefill", "count": 2, "tp": 2},
        {"component": "decode", "count": 1, "tp": 2, "dp": 2},
        {"component": "encode", "count": 1, "world_size": 1},
    ],
}
HETERO_W = 9


def require_dynamo() -> None:
    """Skip the module when the dynamo extra (ai-dynamo-runtime) is not installed."""
    pytest.importorskip("dynamo.runtime", reason="needs the dynamo extra (ai-dynamo-runtime)")


@contextlib.contextmanager
def hetero_fleet(topology: dict[str, Any] = HETERO) -> Iterator[Any]:
    """A started real-Dynamo fleet of ``topology`` (default HETERO), once its 4 engines are ready."""
    from prime_rl_dynamo.suite.harness import start_dynamo_fleet

    with start_dynamo_fleet(topology_from_dict(topology)) as running:
        running.wait_ready(4, timeout=60)
        yield running


def admin_calls(fleet: Any, *paths: str) -> dict[str, list[RecordedRequest]]:
    """Each engine's admin calls by key, once checked to be exactly ``paths``, in order."""
    calls = {e.key: fleet.recorder.requests(engine=e.key, server="admin") for e in fleet.engines}
    for key, made in calls.items():
        assert [c.path for c in made] == list(paths), key
    return calls


def fetch_snapshot(fleet: Any) -> tuple[bytes, Any]:
    """One raw GET of the real RL listener and the validator's Snapshot of exactly those bytes."""
    response = httpx.get(fleet.discovery_url, timeout=10.0)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    return response.content, validate_body(response.content)


def discover(fleet: Any, world: int, *, timeout: float) -> Discovery:
    """The project's discovery client against the fleet (W = ``world``), polling briskly."""
    polling = PollingPolicy(
        timeout=timeout, poll_interval=0.2, backoff_initial=0.05, backoff_max=0.5
    )
    return discover_sync(fleet.frontend_url, ReadinessPolicy(world), polling)


def expected_offsets(engines: Iterable[Any], convention: Convention) -> list[tuple[str, int, int]]:
    """(label, rank_offset, world_size) computed here from the fleet's own records.

    Canonical order is (namespace, component, endpoint, instance_id); offsets are the exclusive
    prefix sum, plus one for vLLM's native NCCL convention.
    """
    ordered = sorted(engines, key=lambda e: e.identity)
    out = []
    first = 1 if convention is Convention.VLLM_NATIVE_NCCL else 0
    for engine in ordered:
        out.append((engine.label, first, engine.spec.world_size))
        first += engine.spec.world_size
    return out


def plan_rows(discovery: Discovery, convention: Convention) -> list[tuple[str, int, int]]:
    """(label, rank_offset, world_size) of the plan the client builds."""
    plan = discovery.plan(convention)
    return [(e.label, e.rank_offset, e.world_size) for e in plan.engines]


def pending_message(fleet: Any, world: int, timeout: float) -> str:
    """The NotReadyError message the client gives within ``timeout`` (fails if it got ready)."""
    with pytest.raises(NotReadyError) as info:
        discover(fleet, world, timeout=timeout)
    return str(info.value)


def pending_until_restarted(fleet: Any, victim: Any, world: int) -> Discovery:
    """With ``victim`` killed, the client is pending and names it (READY-1); once restarted (a new
    instance id) it is ready without the dead instance. Returns that discovery."""
    message = pending_message(fleet, world, timeout=1.5)
    assert victim.label in message and "READY-1" in message
    (restarted,) = fleet.restart(victim.key)
    assert restarted.instance_id != victim.instance_id
    # Ready again once the dead instance has expired from the store (about 5-10 s).
    discovery = discover(fleet, world, timeout=45)
    labels = [w.label for w in discovery.workers]
    assert restarted.label in labels and victim.label not in labels
    return discovery


def pids_alive(pids: Iterable[int | None]) -> list[int]:
    """Which of these process ids still exist (zombies count as gone)."""
    alive = []
    for pid in pids:
        if pid is None:
            continue
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.append(pid)
    return alive


def etcd_available() -> bool:
    """Whether an etcd binary is installed (Debian etcd-server)."""
    from prime_rl_dynamo.suite.harness._etcd import find_etcd

    return find_etcd() is not None and os.access(find_etcd() or "", os.X_OK)


def listening_sockets(pids: Iterable[int | None]) -> list[tuple[str, int, int]]:
    """(address, port, pid) of every listening TCP socket and bound UDP socket of these processes.

    Read from /proc (inode of each socket fd, matched against /proc/net/{tcp,tcp6,udp,udp6}).
    """
    owner: dict[str, int] = {}
    for pid in pids:
        if pid is None:
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                owner[target[8:-1]] = pid
    found = []
    for table, listen_state in (("tcp", "0A"), ("tcp6", "0A"), ("udp", "07"), ("udp6", "07")):
        try:
            with open(f"/proc/net/{table}", encoding="ascii") as fh:
                rows = fh.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            local, state, inode = cols[1], cols[3], cols[9]
            if state != listen_state or inode not in owner:
                continue
            hex_addr, hex_port = local.split(":")
            found.append((_ip(hex_addr), int(hex_port, 16), owner[inode]))
    return found


def _ip(hex_addr: str) -> str:
    import ipaddress

    raw = bytes.fromhex(hex_addr)
    if len(raw) == 4:
        return str(ipaddress.IPv4Address(raw[::-1]))
    # /proc prints IPv6 as four little-endian 32-bit words.
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
    return str(ipaddress.IPv6Address(words))
