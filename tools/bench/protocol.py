"""Protocol 1 polling against protocol 2 (conditional GET, change feed), at 64, 1,024 and 4,096 engines.

Three figures per fleet size, each for v1 polling, v2 conditional GETs and the v2 change feed:
the server's CPU per poll of an unchanged fleet (the listener's own process, from /proc), the bytes
on the wire per minute of polling (one poll a second; the feed holds each GET 30 s), and the time
from an engine's death or resize to the client's TopologyChangedError (``AdminPool.verify_topology``
polled every second under v1, held with ``wait=`` under v2). The reference listener runs in a
process of its own; real Dynamo 1.6.1 (v1 only) is the baseline up to 256 engines.

``python -m tools.bench.protocol [--quick] [--json FILE] [--plot FILE.png]``; progress on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

from prime_rl_dynamo.defaults import POLL_INTERVAL  # the client's: seconds between v1 polls
from prime_rl_dynamo.wire import DISCOVERY_PATH
from tools.bench import child_argv, child_env
from tools.bench.discovery import fleet_topology
from tools.bench.machine import describe_machine

__all__ = ["ProtocolConfig", "main", "run_protocol"]

FEED_WAIT = 30.0  # seconds a change-feed GET is held (the reference's cap)
ENGINE_WORLD_SIZE = 2  # every benchmark engine's world size; W is this times the engine count
ASK = {"Dynamo-RL-Protocol": "2, 1"}


@dataclass(frozen=True)
class ProtocolConfig:
    """Sizes and repetitions; every loop is bounded in count and time."""

    sizes: tuple[int, ...] = (64, 1024, 4096)
    dynamo_sizes: tuple[int, ...] = (64, 256)
    cpu_seconds: float = 3.0  # wall budget per CPU measurement (polls until it is spent)
    max_polls: int = 2000
    trials: int = 4  # death/resize trials per mode and size (alternating)
    seed: int = 11


def _say(text: str) -> None:
    print(f"[bench.protocol] {text}", file=sys.stderr, flush=True)


def _cpu(pid: int) -> float:
    """User + system CPU seconds of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wire_bytes(response: httpx.Response) -> int:
    """Bytes of one HTTP/1.1 exchange: request line and headers, status line, headers, body."""
    req = response.request
    request = len(f"{req.method} {req.url.raw_path.decode()} HTTP/1.1\r\n") + 2
    request += sum(len(k) + len(v) + 4 for k, v in req.headers.raw)
    reply = len(f"HTTP/1.1 {response.status_code} {response.reason_phrase}\r\n") + 2
    reply += sum(len(k) + len(v) + 4 for k, v in response.headers.raw)
    return request + reply + len(response.content)


def _poll_cost(
    client: httpx.Client, url: str, pid: int, headers: dict[str, str], budget: float, cap: int
) -> dict[str, Any]:
    """Server CPU per GET over as many GETs as fit ``budget`` seconds (at most ``cap``)."""
    client.get(url, headers=headers)  # warm
    cpu0, wall0, n = _cpu(pid), time.perf_counter(), 0
    last: httpx.Response | None = None
    while n < cap and time.perf_counter() - wall0 < budget:
        last = client.get(url, headers=headers)
        n += 1
    cpu = _cpu(pid) - cpu0
    wall = time.perf_counter() - wall0
    assert last is not None
    return {
        "polls": n,
        "status": last.status_code,
        "server_cpu_ms_per_poll": cpu / n * 1000,
        "wall_ms_per_poll": wall / n * 1000,
        "wire_bytes_per_poll": _wire_bytes(last),
    }


def _costs(url: str, pid: int, config: ProtocolConfig, v2: bool) -> dict[str, Any]:
    with httpx.Client(timeout=60, headers={"accept-encoding": "identity"}) as client:
        out = {"v1": _poll_cost(client, url, pid, {}, config.cpu_seconds, config.max_polls)}
        if v2:
            first = client.get(url, headers=ASK)
            conditional = {**ASK, "If-None-Match": first.headers["etag"]}
            out["v2_conditional"] = _poll_cost(
                client, url, pid, conditional, config.cpu_seconds, config.max_polls
            )
    per_minute = {"v1": 60 / POLL_INTERVAL * out["v1"]["wire_bytes_per_poll"]}
    if v2:
        per_poll = out["v2_conditional"]["wire_bytes_per_poll"]
        per_minute["v2_conditional"] = 60 / POLL_INTERVAL * per_poll
        per_minute["v2_feed"] = 60 / FEED_WAIT * per_poll  # one held GET per 30 s, all 304
    return {"per_poll": out, "wire_bytes_per_minute": per_minute}


async def _detect(
    url: str,
    engines: int,
    mode: str,
    trigger: Callable[[], object],
    delay: float,
) -> float:
    """Seconds from ``trigger()`` (run ``delay`` s after the pool is ready) to TopologyChangedError."""
    from prime_rl_dynamo.admin import AdminPool
    from prime_rl_dynamo.client import DiscoveryClient, PollingPolicy, ReadinessPolicy
    from prime_rl_dynamo.errors import TopologyChangedError

    async with DiscoveryClient(
        url,
        ReadinessPolicy(ENGINE_WORLD_SIZE * engines),  # the operator's W (READY-3)
        PollingPolicy(poll_interval=POLL_INTERVAL, timeout=120),
        max_body_bytes=256 * 2**20,
        protocol="v1" if mode == "v1" else "auto",
    ) as client:
        ready = await client.wait_ready()
        async with AdminPool.from_plan(ready.plan("prime-nccl"), discovery=client) as pool:
            loop = asyncio.get_running_loop()
            fired: list[float] = []

            def fire() -> None:
                fired.append(time.perf_counter())
                trigger()

            loop.call_later(delay, fire)
            deadline = time.perf_counter() + 60
            while time.perf_counter() < deadline:
                try:
                    if mode == "v1":
                        await pool.verify_topology(timeout=30)
                        await asyncio.sleep(POLL_INTERVAL)
                    else:
                        await pool.verify_topology(timeout=40, wait=FEED_WAIT)
                except TopologyChangedError:
                    return time.perf_counter() - fired[0]
    raise RuntimeError(f"{mode}: no TopologyChangedError within 60 s at {engines} engines")


@contextmanager
def _reference(engines: int) -> Iterator[tuple[str, int, subprocess.Popen[str]]]:
    proc = subprocess.Popen(
        child_argv("protocol_server", str(engines)),
        env=child_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        hello = json.loads(proc.stdout.readline())
        yield hello["url"] + DISCOVERY_PATH, int(hello["pid"]), proc
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _command(proc: subprocess.Popen[str], line: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(line + "\n")
    proc.stdin.flush()


def _summary(values: list[float]) -> dict[str, Any]:
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "samples": values,
    }


def _reference_size(engines: int, config: ProtocolConfig, rng: random.Random) -> dict[str, Any]:
    with _reference(engines) as (url, pid, proc):
        _say(f"reference, {engines} engines: server CPU per poll, bytes")
        result: dict[str, Any] = _costs(url, pid, config, v2=True)
        latency: dict[str, list[float]] = {"v1": [], "v2_feed": []}
        for trial in range(config.trials):
            victim = rng.randrange(engines)
            delay = rng.uniform(0, POLL_INTERVAL)  # where in the poll cycle the event falls
            kind = "kill" if trial % 2 == 0 else "resize"
            for mode in ("v1", "v2_feed"):
                event = f"kill {victim}" if kind == "kill" else f"resize {victim} 4"
                undo = f"revive {victim}" if kind == "kill" else f"resize {victim} 2"
                seconds = asyncio.run(
                    _detect(url, engines, mode, functools.partial(_command, proc, event), delay)
                )
                _command(proc, undo)
                assert proc.stdout is not None
                proc.stdout.readline()
                proc.stdout.readline()
                latency[mode].append(seconds)
                _say(f"  {engines} engines, {kind} #{trial + 1}, {mode}: {seconds * 1000:.0f} ms")
        result["detect_s"] = {mode: _summary(v) for mode, v in latency.items()}
        return result


def _dynamo_size(engines: int, config: ProtocolConfig) -> dict[str, Any]:
    from prime_rl_dynamo.suite.harness import start_dynamo_fleet
    from prime_rl_dynamo.topology import topology_from_dict

    topology = topology_from_dict(fleet_topology(engines, ENGINE_WORLD_SIZE), source="<bench>")
    _say(f"real Dynamo, {engines} engines: starting the fleet")
    with start_dynamo_fleet(topology, startup_timeout=300) as fleet:
        assert fleet.frontend is not None and fleet.frontend.pid is not None
        url = fleet.discovery_url
        _say(f"real Dynamo, {engines} engines: server CPU per poll, bytes")
        budget = ProtocolConfig(cpu_seconds=config.cpu_seconds, max_polls=200)
        result: dict[str, Any] = _costs(url, fleet.frontend.pid, budget, v2=False)
        asked = httpx.get(url, headers=ASK, timeout=60)
        result["answers_v2"] = "dynamo-rl-protocol" in asked.headers
        victim = fleet.engines[-1].key
        seconds = asyncio.run(
            _detect(url, engines, "v1", lambda: fleet.kill(victim), POLL_INTERVAL / 2)
        )
        _say(f"  real Dynamo {engines} engines, kill, v1: {seconds * 1000:.0f} ms")
        result["detect_s"] = {"v1": _summary([seconds])}
        return result


def run_protocol(config: ProtocolConfig, *, dynamo: bool = True) -> dict[str, Any]:
    """Every figure of the section, with v1/v2 ratios per size."""
    rng = random.Random(config.seed)
    started = time.perf_counter()
    reference: dict[str, Any] = {}
    for engines in config.sizes:
        figures = _reference_size(engines, config, rng)
        per = figures["per_poll"]
        wire = figures["wire_bytes_per_minute"]
        detect = figures["detect_s"]
        figures["ratios_v1_over_v2"] = {
            "server_cpu_per_poll": per["v1"]["server_cpu_ms_per_poll"]
            / max(per["v2_conditional"]["server_cpu_ms_per_poll"], 1e-9),
            "wire_bytes_per_minute_conditional": wire["v1"] / wire["v2_conditional"],
            "wire_bytes_per_minute_feed": wire["v1"] / wire["v2_feed"],
            "detect_time": detect["v1"]["median"] / detect["v2_feed"]["median"],
        }
        reference[str(engines)] = figures
    real: dict[str, Any] = {}
    if dynamo:
        for engines in config.dynamo_sizes:
            try:
                real[str(engines)] = _dynamo_size(engines, config)
            except Exception as exc:  # a baseline that cannot run is reported, not fatal
                real[str(engines)] = {"status": "skipped", "reason": f"{type(exc).__name__}: {exc}"}
                _say(f"real Dynamo {engines}: skipped ({exc})")
    return {
        "config": asdict(config),
        "poll_interval_s": POLL_INTERVAL,
        "feed_wait_s": FEED_WAIT,
        "machine": describe_machine(),
        "reference": reference,
        "dynamo": real,
        "wall_s": time.perf_counter() - started,
    }


def plot(report: dict[str, Any], path: Path) -> None:
    """Three panels (CPU per poll, bytes per minute, detection time) against fleet size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ref = report["reference"]
    sizes = [int(s) for s in ref]
    dyn = {int(s): v for s, v in report["dynamo"].items() if "per_poll" in v}
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))
    series = [
        ("v1 polling (reference)", "v1", "o-"),
        ("v2 conditional GET (reference)", "v2_conditional", "s-"),
    ]
    ax = axes[0]
    for label, key, style in series:
        ax.plot(
            sizes,
            [ref[str(s)]["per_poll"][key]["server_cpu_ms_per_poll"] for s in sizes],
            style,
            label=label,
        )
    if dyn:
        ax.plot(
            list(dyn),
            [v["per_poll"]["v1"]["server_cpu_ms_per_poll"] for v in dyn.values()],
            "^--",
            label="v1 polling (real Dynamo 1.6.1)",
        )
    ax.set_title("server CPU per poll of an unchanged fleet")
    ax.set_ylabel("ms")
    ax = axes[1]
    for label, key, style in [*series, ("v2 change feed (reference)", "v2_feed", "d-")]:
        ax.plot(
            sizes, [ref[str(s)]["wire_bytes_per_minute"][key] for s in sizes], style, label=label
        )
    if dyn:
        ax.plot(
            list(dyn),
            [v["wire_bytes_per_minute"]["v1"] for v in dyn.values()],
            "^--",
            label="v1 polling (real Dynamo 1.6.1)",
        )
    ax.set_title(f"bytes on the wire per minute (a poll every {POLL_INTERVAL:g} s)")
    ax.set_ylabel("bytes")
    ax = axes[2]
    for label, key, style in [
        ("v1 polling every 1 s", "v1", "o-"),
        ("v2 change feed", "v2_feed", "d-"),
    ]:
        med = [ref[str(s)]["detect_s"][key]["median"] * 1000 for s in sizes]
        lo = [
            m - ref[str(s)]["detect_s"][key]["min"] * 1000 for m, s in zip(med, sizes, strict=True)
        ]
        hi = [
            ref[str(s)]["detect_s"][key]["max"] * 1000 - m for m, s in zip(med, sizes, strict=True)
        ]
        ax.errorbar(sizes, med, yerr=[lo, hi], fmt=style, capsize=3, label=f"{label} (reference)")
    if dyn:
        ax.plot(
            list(dyn),
            [v["detect_s"]["v1"]["median"] * 1000 for v in dyn.values()],
            "^--",
            label="v1 polling (real Dynamo 1.6.1)",
        )
    ax.set_title("engine death or resize -> TopologyChangedError")
    ax.set_ylabel("ms")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("engines")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _ms(value: float) -> str:
    return f"{value:.3f}" if value < 1 else f"{value:.1f}"


def _bytes(value: float) -> str:
    for unit, size in (("MB", 1e6), ("kB", 1e3)):
        if value >= size:
            return f"{value / size:.1f} {unit}"
    return f"{value:.0f} B"


def markdown(report: dict[str, Any]) -> str:
    """The docs/bench.md tables of this section, rendered from a stored report."""
    ref, dyn = report["reference"], report["dynamo"]
    lines = [
        "| engines | frontend | server CPU per poll, ms: v1 / v2 conditional (ratio) "
        "| bytes per minute: v1 / v2 conditional / v2 feed (ratios) "
        "| death or resize -> TopologyChangedError, ms median [min-max]: v1 / v2 feed (ratio) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for size, f in ref.items():
        per, wire, det, r = (
            f["per_poll"],
            f["wire_bytes_per_minute"],
            f["detect_s"],
            f["ratios_v1_over_v2"],
        )
        lines.append(
            f"| {int(size):,} | reference "
            f"| {_ms(per['v1']['server_cpu_ms_per_poll'])} / "
            f"{_ms(per['v2_conditional']['server_cpu_ms_per_poll'])} "
            f"(**{r['server_cpu_per_poll']:.0f}x**) "
            f"| {_bytes(wire['v1'])} / {_bytes(wire['v2_conditional'])} / {_bytes(wire['v2_feed'])} "
            f"(**{r['wire_bytes_per_minute_conditional']:,.0f}x** / "
            f"**{r['wire_bytes_per_minute_feed']:,.0f}x**) "
            f"| {det['v1']['median'] * 1000:.0f} [{det['v1']['min'] * 1000:.0f}-"
            f"{det['v1']['max'] * 1000:.0f}] / {det['v2_feed']['median'] * 1000:.0f} "
            f"[{det['v2_feed']['min'] * 1000:.0f}-{det['v2_feed']['max'] * 1000:.0f}] "
            f"(**{r['detect_time']:.1f}x**) |"
        )
    for size, f in dyn.items():
        if "per_poll" not in f:
            lines.append(f"| {int(size):,} | real Dynamo 1.6.1 | skipped: {f.get('reason')} | | |")
            continue
        per, wire, det = f["per_poll"], f["wire_bytes_per_minute"], f["detect_s"]
        lines.append(
            f"| {int(size):,} | real Dynamo 1.6.1 (v1 only) "
            f"| {_ms(per['v1']['server_cpu_ms_per_poll'])} / n/a | {_bytes(wire['v1'])} / n/a "
            f"| {det['v1']['median'] * 1000:.0f} / n/a |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the section, write JSON and the plot, print the ratios."""
    parser = argparse.ArgumentParser(prog="python -m tools.bench.protocol", allow_abbrev=False)
    parser.add_argument(
        "--quick", action="store_true", help="64 and 1,024 engines, 2 trials, no Dynamo"
    )
    parser.add_argument("--no-dynamo", action="store_true")
    parser.add_argument("--json", dest="json_path", default="bench-protocol.json")
    parser.add_argument("--plot", dest="plot_path", default="bench-protocol.png")
    args = parser.parse_args(argv)
    config = ProtocolConfig()
    if args.quick:
        config = ProtocolConfig(sizes=(64, 1024), dynamo_sizes=(), cpu_seconds=1.0, trials=2)
    report = run_protocol(config, dynamo=not (args.no_dynamo or args.quick))
    Path(args.json_path).write_text(json.dumps(report, indent=2) + "\n", "utf-8")
    plot(report, Path(args.plot_path))
    print(markdown(report))
    for size, figures in report["reference"].items():
        ratios = ", ".join(f"{k} {v:.1f}x" for k, v in figures["ratios_v1_over_v2"].items())
        print(f"{size} engines, v1/v2: {ratios}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
