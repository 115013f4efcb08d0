"""The description of the machine a benchmark ran on, stored next to every figure.

Figures mean little without it: CPU count and model, memory, load, Python and the versions of the
packages that were measured.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["MEASURED_PACKAGES", "describe_machine"]

#: Distributions whose versions change the figures.
MEASURED_PACKAGES = (
    "prime-rl-dynamo",
    "msgspec",
    "jsonschema",
    "orjson",
    "pydantic",
    "pydantic-core",
    "httpx",
    "starlette",
    "uvicorn",
    "ai-dynamo-runtime",
    "matplotlib",
    "rich",
)


def _cpu_model(cpuinfo: Path) -> str | None:
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return platform.processor() or None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "Hardware"):
            return value.strip() or None
    return platform.processor() or None


def _memory_bytes(meminfo: Path) -> int | None:
    try:
        text = meminfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            parts = line.split()
            # /proc/meminfo reports kB (really KiB).
            return int(parts[1]) * 1024 if len(parts) >= 2 and parts[1].isdigit() else None
    return None


def _package_versions(names: tuple[str, ...]) -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None  # not installed: that contender is skipped
    return versions


def describe_machine(
    *, cpuinfo: Path = Path("/proc/cpuinfo"), meminfo: Path = Path("/proc/meminfo")
) -> dict[str, Any]:
    """CPU count and model, memory, load average, OS, Python, package versions and a timestamp."""
    try:
        load: list[float] | None = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    usable: int | None
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        usable = os.cpu_count()
    return {
        "timestamp": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "cpu_usable": usable,
        "cpu_model": _cpu_model(cpuinfo),
        "memory_bytes": _memory_bytes(meminfo),
        "load_average": load,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "packages": _package_versions(MEASURED_PACKAGES),
    }
