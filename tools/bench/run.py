"""The whole benchmark: validation, discovery and conformance-suite figures in one report.

``run_bench(config)`` returns the report dictionary written as JSON by ``python -m tools.bench``;
``quick_config()`` and ``full_config()`` are the two presets of the command.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from tools.bench.client_profile import ClientProfileConfig, run_client_profile
from tools.bench.discovery import DiscoveryConfig, run_discovery
from tools.bench.engines import EnginesConfig, run_engines
from tools.bench.machine import describe_machine
from tools.bench.progress import NullReporter, Reporter
from tools.bench.scale import ScaleConfig, run_scale
from tools.bench.suite import SuiteConfig, run_suite
from tools.bench.validation_figures import ValidationConfig, run_validation

__all__ = [
    "REPORT_FORMAT",
    "BenchConfig",
    "full_config",
    "quick_config",
    "run_bench",
    "write_report",
]

#: Identifies the layout of the JSON report; bump when keys change meaning.
REPORT_FORMAT = "prime-rl-dynamo-bench/1"

SECTIONS = ("validation", "discovery", "suite", "scale", "client", "engines")


@dataclass(frozen=True)
class BenchConfig:
    """What one benchmark run measures; a section set to None is not run."""

    mode: str = "custom"
    validation: ValidationConfig | None = field(default_factory=ValidationConfig)
    discovery: DiscoveryConfig | None = field(default_factory=DiscoveryConfig)
    suite: SuiteConfig | None = field(default_factory=SuiteConfig)
    # 64-256 engines and the 256-engine round trip: minutes of two cores, so only on request
    # (--only scale) or in the full run.
    scale: ScaleConfig | None = None
    client: ClientProfileConfig | None = field(default_factory=ClientProfileConfig)
    # Real vLLM engines (minutes of both cores, about 8 GiB, the real-engine virtualenv): only on
    # request (--only engines), never in the full run.
    engines: EnginesConfig | None = None

    def only(self, sections: list[str] | tuple[str, ...]) -> BenchConfig:
        """The same run restricted to some sections."""
        unknown = [s for s in sections if s not in SECTIONS]
        if unknown:
            raise ValueError(f"unknown sections {unknown}; expected some of {list(SECTIONS)}")
        return replace(
            self,
            validation=self.validation if "validation" in sections else None,
            discovery=self.discovery if "discovery" in sections else None,
            suite=self.suite if "suite" in sections else None,
            scale=(self.scale or ScaleConfig()) if "scale" in sections else None,
            client=self.client if "client" in sections else None,
            engines=(self.engines or EnginesConfig()) if "engines" in sections else None,
        )

    def without_dynamo(self) -> BenchConfig:
        """The same run on the reference frontend only."""
        discovery = self.discovery and replace(
            self.discovery, frontends=tuple(f for f in self.discovery.frontends if f != "dynamo")
        )
        suite = self.suite and replace(
            self.suite, targets=tuple(t for t in self.suite.targets if t != "dynamo")
        )
        scale = self.scale and replace(
            self.scale, frontends=tuple(f for f in self.scale.frontends if f != "dynamo")
        )
        validation = self.validation and replace(self.validation, dynamo_engines=())
        return replace(self, validation=validation, discovery=discovery, suite=suite, scale=scale)


def full_config() -> BenchConfig:
    """The full run quoted in the documentation (several minutes)."""
    return BenchConfig(
        mode="full",
        # Every worker defective costs jsonschema once per worker (seconds at 8,192): fewer rounds
        # up there. Pure-Python jsonschema of a whole body costs that much at every size, so it
        # runs on the small bodies only; hostile bodies at two sizes show the cost per byte.
        validation=ValidationConfig(
            repetitions=11,
            large_repetitions=3,
            jsonschema_max_workers=64,
            hostile_sizes=(64, 1024),
        ),
        discovery=DiscoveryConfig(),
        suite=SuiteConfig(repetitions=3),
        scale=ScaleConfig(),
        # four whole profiles each (about 6 minutes), and the conformant ones at the 1 s pace
        client=ClientProfileConfig(
            repetitions=2, real_pace_clients=("project client", "spec client")
        ),
    )


def quick_config() -> BenchConfig:
    """A run that finishes in well under two minutes on two shared cores."""
    return BenchConfig(
        mode="quick",
        # Pure-Python jsonschema is left out: even the 1-worker body costs seconds per sample.
        validation=ValidationConfig(
            repetitions=5,
            large_repetitions=5,
            jsonschema_max_workers=0,
            hostile_sizes=(1024,),
            dynamo_engines=(),
        ),
        discovery=DiscoveryConfig(sizes=(1, 8, 64), requests=30, ready_repetitions=3, warmup=2),
        # The default run takes minutes; --quick times its frontend and workers profiles only.
        suite=SuiteConfig(
            targets=("reference",), profiles=("frontend", "workers"), repetitions=1, timeout_s=90.0
        ),
        client=ClientProfileConfig(clients=("project client",), repetitions=1, topologies=1),
    )


def _skipped(reason: str) -> dict[str, Any]:
    return {"status": "skipped", "reason": reason}


def run_bench(
    config: BenchConfig | None = None,
    reporter: Reporter | None = None,
    *,
    command: str | None = None,
) -> dict[str, Any]:
    """Run every configured section and return the report (see docs/bench.md for its keys)."""
    config = config or full_config()
    reporter = reporter or NullReporter()
    started = time.perf_counter()
    report: dict[str, Any] = {
        "format": REPORT_FORMAT,
        "mode": config.mode,
        "command": command,
        "machine": describe_machine(),
    }
    # Cheapest and most CPU-bound first: the validation figures suffer most from a busy machine.
    report["validation"] = (
        run_validation(config.validation, reporter)
        if config.validation is not None
        else _skipped("not selected")
    )
    report["discovery"] = (
        run_discovery(config.discovery, reporter)
        if config.discovery is not None
        else _skipped("not selected")
    )
    report["suite"] = (
        run_suite(config.suite, reporter) if config.suite is not None else _skipped("not selected")
    )
    report["scale"] = (
        run_scale(config.scale, reporter) if config.scale is not None else _skipped("not selected")
    )
    report["client"] = (
        run_client_profile(config.client, reporter)
        if config.client is not None
        else _skipped("not selected")
    )
    report["engines"] = (
        run_engines(config.engines, reporter)
        if config.engines is not None
        else _skipped("not selected")
    )
    configs = {name: getattr(config, name) for name in SECTIONS}
    report["config"] = {name: asdict(c) if c is not None else None for name, c in configs.items()}
    report["wall_s"] = time.perf_counter() - started
    report["machine"]["load_average_after"] = describe_machine()["load_average"]
    return report


def write_report(report: dict[str, Any], path: str | Path) -> Path:
    """Write the report as indented JSON (infinite ratios become null)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(_finite(report), indent=2) + "\n", encoding="utf-8")
    return out


def _finite(value: Any) -> Any:
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None  # JSON has no infinity; a null ratio means "denominator was zero"
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
