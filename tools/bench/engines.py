"""What the real-engine fleet costs: time to listed and ready, resident memory, weight updates.

``python -m tools.bench --only engines`` (not part of the full run: it stands up real vLLM
engines, minutes of both cores and about 8 GiB) starts one heterogeneous ``RealEngineFleet``
(tensor parallel 1 and 2 by default, W = 3) and measures: the time until each engine is listed
and the whole fleet is ready, the fleet's resident memory once ready and after the updates, the
``DiscoveryClient``'s time to a ready snapshot (``discover_sync``), and a weight update through
the package's ``AdminPool`` (pause, reload from a path with ``api="vllm"``, resume), alternating
two checkpoints. The greedy tokens of every engine are compared before and after, so an update
that changed nothing fails the section instead of timing it. The gloo broadcast is not timed
here (it needs a trainer process of its own; ``tests/test_real_engines.py`` runs it).

Without the real-engine virtualenv, or with less available memory than the fleet needs, the
section is skipped with the reason (nothing starts).
"""

from __future__ import annotations

import asyncio
import re
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from prime_rl_dynamo.errors import HarnessError
from tools.bench.progress import NullReporter, Reporter
from tools.bench.stats import summarize

__all__ = [
    "EnginesConfig",
    "engines_console",
    "engines_cost_says",
    "refusal",
    "run_engines",
    "summarize_engines",
]

_GIB = 2**30
_LISTED = re.compile(r"real engines: (?P<key>\S+) listed after")


@dataclass(frozen=True)
class EnginesConfig:
    """The fleet the section stands up and how often it repeats each measurement."""

    tensor_parallel: tuple[int, ...] = (1, 2)
    discover_repetitions: int = 3
    update_repetitions: int = 5
    startup_timeout_s: float = 900.0


def refusal(
    config: EnginesConfig, venv: Path | None = None, available: int | None = None
) -> str | None:
    """Why the section cannot run here (no real-engine virtualenv, too little memory), or None.
    ``available``: the bytes of memory to judge by (default: this machine's MemAvailable)."""
    from prime_rl_dynamo.suite.harness.real import available_memory, engines_python, memory_needed

    try:
        engines_python(venv)
    except HarnessError as exc:
        return str(exc)
    needed = memory_needed(config.tensor_parallel)
    if available is None:
        available = available_memory()
    if available is not None and available < needed:
        return (
            f"the fleet needs about {needed / _GIB:.1f} GiB and the machine has "
            f"{available / _GIB:.1f} GiB available (MemAvailable)"
        )
    return None


def run_engines(
    config: EnginesConfig | None = None,
    reporter: Reporter | None = None,
    *,
    venv: Path | None = None,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Stand the fleet up once and measure it; returns the ``engines`` section of the report."""
    config = config or EnginesConfig()
    reporter = reporter or NullReporter()
    say = log or (lambda line: print(line, file=sys.stderr, flush=True))
    why = refusal(config, venv)
    if why is not None:
        say(f"engines: skipped: {why}")
        return {"status": "skipped", "reason": why, "config": asdict(config)}

    from prime_rl_dynamo.admin import AdminPool
    from prime_rl_dynamo.client import discover_sync
    from prime_rl_dynamo.readiness import PollingPolicy, ReadinessPolicy
    from prime_rl_dynamo.suite.harness.real import RealEngineFleet, tiny_llama

    width = sum(config.tensor_parallel)
    listed: dict[str, float] = {}
    lines: list[str] = []  # the fleet's own progress, as `dynamo up --real` prints it
    began = time.monotonic()

    def progress(line: str) -> None:
        found = _LISTED.match(line)
        if found:
            listed[found["key"]] = time.monotonic() - began
        lines.append(line)
        say(line)

    phase = reporter.phase(
        "real engines", 1 + config.discover_repetitions + config.update_repetitions
    )
    fleet = RealEngineFleet(
        config.tensor_parallel, progress=progress, startup_timeout=config.startup_timeout_s
    )
    with fleet:
        fleet.start()
        phase.advance()
        ready_s = fleet.startup_seconds
        memory_ready = fleet.memory_bytes()
        discover_s = []
        for _ in range(config.discover_repetitions):
            t0 = time.perf_counter()
            discovery = discover_sync(
                fleet.frontend_url,
                ReadinessPolicy(inference_world_size=width),
                PollingPolicy(timeout=120.0),
            )
            discover_s.append(time.perf_counter() - t0)
            phase.advance()
        say(f"engines: discovery ready in {', '.join(f'{s:.2f}' for s in discover_s)} s")
        checkpoints = [fleet.checkpoint(0), fleet.checkpoint(1)]
        original = [e.generate(tiny_llama.PROMPT) for e in fleet.engines]
        update_s: list[float] = []

        async def update(checkpoint: Path) -> dict[str, Any]:
            async with AdminPool.from_discovery(discovery) as pool:
                return await pool.update_weights(str(checkpoint), api="vllm", verify=False)

        for i in range(config.update_repetitions):
            target = checkpoints[(i + 1) % 2]  # checkpoint 1, then 0, then 1 ...
            t0 = time.perf_counter()
            results = asyncio.run(update(target))
            update_s.append(time.perf_counter() - t0)
            codes = sorted(r.status_code for r in results.values())
            if codes != [200] * len(fleet.engines):
                raise HarnessError(f"a weight update answered {codes}, not 200 from every engine")
            now = [e.generate(tiny_llama.PROMPT) for e in fleet.engines]
            if (now == original) == (target == checkpoints[1]):
                raise HarnessError(
                    f"after the reload of {target.name} the engines generate {now}; the first "
                    f"checkpoint gives {original}, and only {checkpoints[1].name} differs from it"
                )
            say(f"engines: weight update {i + 1} ({target.name}) in {update_s[-1]:.2f} s")
            phase.advance()
        memory_after = fleet.memory_bytes()
        engines = [
            {"key": e.key, "world_size": e.world_size, "listed_s": listed.get(e.key)}
            for e in fleet.engines
        ]
    phase.done()
    return summarize_engines(
        config,
        {
            "ready_s": ready_s,
            "engines": engines,
            "memory_ready": memory_ready,
            "memory_after": memory_after,
            "discover_s": discover_s,
            "update_s": update_s,
            "progress": lines,
        },
    )


def summarize_engines(config: EnginesConfig, measured: dict[str, Any]) -> dict[str, Any]:
    """The section from what one fleet measured: ``ready_s``, ``engines`` (key, world size,
    listed_s), ``memory_ready`` and ``memory_after`` (bytes), ``discover_s`` and ``update_s``
    (samples, seconds), ``progress`` (the fleet's lines)."""
    engines = measured["engines"]
    return {
        "status": "ok",
        "config": asdict(config),
        "inference_world_size": sum(e["world_size"] for e in engines),
        "engines": engines,
        "ready_s": measured["ready_s"],
        "memory_gib": {
            "ready": measured["memory_ready"] / _GIB,
            "after_updates": measured["memory_after"] / _GIB,
        },
        "discover_s": summarize(measured["discover_s"]),
        "update_s": summarize(measured["update_s"]),
        "progress": list(measured.get("progress") or []),
    }


def engines_console(report: dict[str, Any]) -> str:
    """The fleet's progress lines from the measured run, as a console block (block
    engines-console)."""
    section = report.get("engines") or {}
    lines = section.get("progress") or ["(not measured in this report)"]
    return (
        "\n\n```console\n$ python -m tools.bench --only engines\n"
        + "\n".join(lines)
        + "\n...\n```\n\n"
    )


def _load(section: dict[str, Any]) -> str:
    machine = (section.get("run") or {}).get("machine") or {}
    load = machine.get("load_average") or [None]
    cores = machine.get("cpu_count")
    if load[0] is None:
        return ""
    return f", load average {load[0]:.1f}" + (f" on {cores} cores" if cores else "")


def engines_cost_says(report: dict[str, Any]) -> str:
    """The docs' sentence on the real-engine fleet's cost (block engines-cost)."""
    section = report.get("engines") or {}
    if section.get("status") != "ok":
        return "not measured in this report"
    listed = ", ".join(
        f"TP {e['world_size']} listed after {e['listed_s']:.0f} s"
        for e in section["engines"]
        if e.get("listed_s") is not None
    )
    tp = " + ".join(f"TP {e['world_size']}" for e in section["engines"])
    memory, discover, update = section["memory_gib"], section["discover_s"], section["update_s"]
    return (
        f"a {tp} fleet (W = {section['inference_world_size']}) was ready {section['ready_s']:.0f} s "
        f"after start ({listed}) in {memory['ready']:.1f} GiB resident "
        f"({memory['after_updates']:.1f} GiB after the updates); `discover` was ready in "
        f"{discover['median']:.2f} s ({discover['min']:.2f}-{discover['max']:.2f}, "
        f"{discover['n']} runs); a weight update (pause, reload from a path, resume, through "
        f"`AdminPool`) took {update['median']:.2f} s ({update['min']:.2f}-{update['max']:.2f}, "
        f"{update['n']} updates alternating two checkpoints, the generated tokens changing and coming back){_load(section)}"
    )
