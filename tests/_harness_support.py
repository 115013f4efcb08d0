"""Shared helpers of the real-Dynamo harness tests (tests/test_harness_*.py)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import httpx
import pytest

from prime_rl_dynamo.client import Discovery, discover_sync
from prime_rl_dynamo.errors import NotReadyError
from prime_rl_dynamo.plan import Convention
from prime_rl_dynamo.validate import validate_body


def require_dynamo() -> None:
    """Skip the module when the dynamo extra (ai-dynamo-runtime) is not installed."""
    pytest.importorskip("dynamo.runtime", reason="needs the dynamo extra (ai-dynamo-runtime)")


def fetch_snapshot(fleet: Any) -> tuple[bytes, Any]:
    """One raw GET of the real RL listener and the validator's Snapshot of exactly those bytes."""
    response = httpx.get(fleet.discovery_url, timeout=10.0)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    return response.content, validate_body(response.content)


def discover(fleet: Any, world: int, *, timeout: float, **kwargs: Any) -> Discovery:
    """The project's discovery client against the fleet, polling briskly."""
    return discover_sync(
        fleet.frontend_url,
        inference_world_size=world,
        timeout=timeout,
        poll_interval=0.2,
        backoff_initial=0.05,
        backoff_max=0.5,
        **kwargs,
    )


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
    from prime_rl_dynamo.harness._etcd import find_etcd

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
