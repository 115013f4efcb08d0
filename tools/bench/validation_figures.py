"""The validation section of the report, built on the measurements of ``bench.validation``.

``bench.validation.measure`` (owned with the validator) times the project's full validation
against ``json.loads``, ``orjson``, pure-Python ``jsonschema`` and a pydantic parser; this module
runs it size by size with the report's settings and adds the ratios, curves and verdict lines.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from tools.bench.progress import NullReporter, Reporter

__all__ = ["ValidationConfig", "run_validation"]


@dataclass(frozen=True)
class ValidationConfig:
    """Body sizes, interleaved repetitions, and the largest body pure-Python jsonschema gets."""

    sizes: tuple[int, ...] = (1, 64, 1024, 8192)
    repetitions: int = 15
    # Bodies above 1,024 workers: fewer rounds (pure-Python jsonschema takes ~25 s per 8,192 body).
    large_repetitions: int = 5
    # Pure-Python jsonschema takes seconds per 1,024-worker body (tens at 8,192).
    jsonschema_max_workers: int = 8192
    # Hostile bodies timed next to the valid body of each of these sizes: linear time is judged
    # from the smallest to the largest.
    hostile_sizes: tuple[int, ...] = (64, 1024)
    hostile_repetitions: int = 7
    # Real Dynamo fleets (the harness, stub engines) whose own listing GET the validator's time is
    # a share of, in the same run; () leaves them out.
    dynamo_engines: tuple[int, ...] = (64, 128, 256)
    # The thread's CPU clock: on a machine shared with other work it measures each contender's
    # cost without its wait for a core (the wall clock when False).
    cpu_time: bool = True


def _ratio_of_medians(times: dict[str, Any], numerator: str, denominator: str) -> dict[str, Any]:
    return {
        "median": times[numerator]["median"] / times[denominator]["median"],
        "min": None,  # no paired samples kept for this pair: headline figure only
        "max": None,
    }


def _point(entry: dict[str, Any], validator: str, yardstick: str, pydantic: str) -> dict[str, Any]:
    times = entry["seconds"]
    ratios: dict[str, Any] = {}
    for other in times:
        if other == validator:
            continue
        key = f"{validator} / {other}"
        if other == yardstick:
            ratios[key] = entry["ratio_vs_json_loads"][validator]  # paired: with spread
        elif other == pydantic and "validator_vs_pydantic" in entry:
            ratios[key] = entry["validator_vs_pydantic"]  # paired: with spread
        else:
            ratios[key] = _ratio_of_medians(times, validator, other)
    return {
        "workers": entry["workers"],
        "body_bytes": entry["bytes"],
        "repetitions": entry["repetitions"],
        "calls_per_sample": entry["calls_per_sample"],
        "times_s": times,
        "ratios": ratios,
        "ratios_vs_json_loads": entry["ratio_vs_json_loads"],
        "goals": entry.get("goals", []),
    }


def run_validation(
    config: ValidationConfig | None = None, reporter: Reporter | None = None
) -> dict[str, Any]:
    """Run the validation measurements; returns the ``validation`` section of the report."""
    config = config or ValidationConfig()
    reporter = reporter or NullReporter()
    try:
        from tools.bench import validation
    except ImportError as exc:  # e.g. the project's validator itself is not importable
        return {"status": "skipped", "reason": f"bench.validation: {exc}", "config": asdict(config)}

    phase = reporter.phase("validation", len(config.sizes))
    entries: list[dict[str, Any]] = []
    # One size at a time: progress per size, and each size's samples stay interleaved.
    for size in config.sizes:
        result = validation.measure(
            (size,),
            config.repetitions if size <= 1024 else config.large_repetitions,
            jsonschema_max_workers=config.jsonschema_max_workers,
            on_progress=phase.note,
            cpu_time=config.cpu_time,
        )
        entries.extend(result["sizes"])
        phase.advance()
    hostile = (
        validation.measure_hostile(
            config.hostile_sizes,
            config.hostile_repetitions,
            on_progress=phase.note,
            cpu_time=config.cpu_time,
        )
        if config.hostile_sizes
        else []
    )
    dynamo = validation.measure_dynamo_share(config.dynamo_engines, 20, on_progress=phase.note)
    phase.done()
    linear = validation.linearity(hostile)

    validator, yardstick, pydantic = validation.VALIDATOR, validation.YARDSTICK, validation.PYDANTIC
    contenders: list[str] = []
    for entry in entries:
        contenders.extend(name for name in entry["seconds"] if name not in contenders)
    points = [_point(entry, validator, yardstick, pydantic) for entry in entries]
    ratio_columns = [key for p in points for key in p["ratios"]]
    ratio_columns = list(dict.fromkeys(ratio_columns))
    verdict = validation.verdict(entries)
    verdicts = (
        [
            f"{check['workers']:,} workers: {validator} = {check['over_json_loads']:.2f}x json.loads "
            f"(bar <= {validation.CRITERIA['max_over_json_loads']}x), "
            + (
                f"{check['over_pydantic']:.2f}x the pydantic parser (bar < 1.0x)"
                if check["over_pydantic"] is not None
                else "pydantic not measured"
            )
            + f": {'met' if check['ok'] else 'NOT met'}"
            for check in verdict["checks"]
        ]
        + [
            f"{p['workers']:,} workers, goal {goal['goal']}: {goal['ratio']['median']:.2f}x "
            f"(bar <= {goal['bar']}x): {'met' if goal['ok'] else 'NOT met'}"
            for p in points
            for goal in p["goals"]
        ]
        + [
            f"hostile body {g['shape']!r}: {g['per_byte_growth']:.2f}x the cost per byte at "
            f"{g['to_workers']:,} workers as at {g['from_workers']:,} (bar <= {g['bar']}x, linear): "
            f"{'met' if g['ok'] else 'NOT met'}"
            for g in linear
        ]
        + [
            f"real Dynamo, {d['engines']} engines: {validator} = {d['share']:.2%} of its listing GET "
            f"({d['validate_s']['median'] * 1e3:.2f} ms of {d['get_s']['median'] * 1e3:.0f} ms; "
            f"bar < {d['bar']:.0%}): {'met' if d['ok'] else 'NOT met'}"
            if d["status"] == "ok"
            else f"real Dynamo, {d['engines']} engines: not measured ({d['reason']})"
            for d in dynamo
        ]
    )
    curves = {
        name: [
            {
                "workers": p["workers"],
                "median_s": p["times_s"][name]["median"],
                "min_s": p["times_s"][name]["min"],
                "max_s": p["times_s"][name]["max"],
            }
            for p in points
            if name in p["times_s"]
        ]
        for name in contenders
    }
    return {
        "status": "ok",
        "source": "bench.validation.measure",
        "hostile": hostile,
        "linearity": linear,
        "dynamo_share": dynamo,
        "config": asdict(config),
        "validator": validator,
        "yardstick": yardstick,
        "pydantic": pydantic,
        "contenders": contenders,
        "ratio_columns": ratio_columns,
        "points": points,
        "curves": curves,
        "criteria": {
            k: list(v) if isinstance(v, tuple) else v for k, v in validation.CRITERIA.items()
        },
        "verdict": verdict,
        "verdicts": verdicts,
        "goals_met": all(goal["ok"] for p in points for goal in p["goals"])
        and all(g["ok"] for g in linear)
        and all(d.get("ok", False) for d in dynamo),
    }
