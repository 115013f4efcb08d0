"""How much the full validation of a discovery body costs, side by side with json.loads.

Contenders run interleaved on the same bytes: ``json.loads`` (the yardstick), ``orjson.loads``,
``validate_body`` (schema + semantic checks + typed snapshot), a plain pydantic parser of the listing
(the model-per-object design this project is measured against), the same with pydantic's own JSON
parser, pydantic's ``validate_json`` with a strict model of every field, pure-Python jsonschema,
and ``check_body`` on the same body with one defective worker and with every worker defective.
``GOALS`` are the ratios the validator is held to, each a ratio of two contenders' samples in one
run. Run ``python -m tools.bench.validation`` for a table; ``measure()`` returns the data.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from prime_rl_dynamo.wire import U64_MAX, WorkerId, transport_tcp, worker_entry
from tools.bench.stats import interleaved, paired_ratio, summarize

__all__ = [
    "CRITERIA",
    "GOALS",
    "contenders",
    "format_hostile",
    "hostile_bodies",
    "main",
    "make_body",
    "measure",
    "measure_hostile",
    "pydantic_parser",
]

#: The acceptance bar: at these sizes full validation costs at most 2.0x json.loads and less than
#: the plain pydantic parser, measured in the same run.
CRITERIA: dict[str, Any] = {
    "sizes": (1024, 8192),
    "max_over_json_loads": 2.0,
    "max_over_pydantic": 1.0,
}

MODEL = "Qwen/Qwen3-0.6B"
VALIDATOR = "validate_body"
YARDSTICK = "json.loads"
ORJSON = "orjson.loads"
#: The pydantic parser's name in reports (a key of every stored report, so it stays as written).
PYDANTIC = "pydantic (original change)"
#: pydantic-core's validate_json with a strict model of every field (what a user reaches for).
PYDANTIC_STRICT = "pydantic (strict model, validate_json)"
#: check_body on the body with its last worker defective (world_size 0), and with every worker
#: defective (world_size 0 and routes out of order: two violations each).
ONE_DEFECTIVE = "check_body (one defective worker)"
ALL_DEFECTIVE = "check_body (every worker defective)"
#: check_body on the body with the last worker's admin_base_url of another scheme (WORKER-8): a
#: URL outside LIST-6's form, judged on another road than a bad world_size (issue #26's case).
BAD_ADMIN = "check_body (one bad admin_base_url)"

#: The goals (issue #37), each ``(name, numerator, denominator, {workers: bar})``: the median of
#: the paired ratio numerator / denominator in one interleaved run must not exceed the bar at that
#: size. Linear time on hostile bodies (``LINEAR_BAR``) and the validator's share of real Dynamo's
#: own listing GET (``DYNAMO_SHARE_BAR``) are judged beside them.
GOALS: tuple[tuple[str, str, str, dict[int, float]], ...] = (
    ("valid body / orjson.loads", VALIDATOR, ORJSON, {1024: 3.0, 8192: 3.0}),
    ("valid body / strict pydantic", VALIDATOR, PYDANTIC_STRICT, {1024: 1.0, 8192: 1.0}),
    (
        "one defective worker / valid body",
        ONE_DEFECTIVE,
        VALIDATOR,
        {1: 5.0, 64: 5.0, 1024: 5.0, 8192: 5.0},
    ),
    (
        "one bad admin_base_url / valid body",
        BAD_ADMIN,
        VALIDATOR,
        {1: 5.0, 64: 5.0, 1024: 5.0, 8192: 5.0},
    ),
)
#: A hostile shape is linear in body size when its cost per byte at the largest size measured is
#: at most this many times its cost per byte at the smallest.
LINEAR_BAR = 2.0
#: The validator's time on real Dynamo's listing, as a share of that listing's GET: at most this.
DYNAMO_SHARE_BAR = 0.01


def make_body(workers: int, *, seed: int = 0) -> bytes:
    """A Dynamo 1.6.1-shaped body with ``workers`` engines: u64 ids above 2^53, admin URLs, sorted."""
    rng = random.Random(seed)
    entries = []
    for i in range(workers):
        component = ("prefill", "decode", "backend")[i % 3]
        instance_id = rng.randrange(2**53, U64_MAX + 1)
        worker = WorkerId("dynamo", component, "rl", instance_id)
        host = f"10.0.{i // 250 % 250}.{i % 250}"
        entries.append(
            worker_entry(
                worker,
                transport=transport_tcp(worker, 40000 + i % 20000, host),
                admin_base_url=f"http://10.1.{i // 250 % 250}.{i % 250}:{9000 + i // 62500}/engine/{i}",
                model=MODEL,
                routes=("pause_generation", "resume_generation"),
                world_size=(1, 2, 4, 8)[i % 4],
            )
        )
    entries.sort(key=WorkerId.from_entry)
    body = {"protocol_version": 1, "namespace": "dynamo", "workers": entries}
    return json.dumps(body, separators=(",", ":")).encode()


def hostile_bodies(workers: int) -> dict[str, bytes]:
    """Hostile bodies of about the size of ``make_body(workers)``, one per costly shape.

    Each drives the validator down its slowest road: the exhaustive path over the whole listing
    (one defect, or one per worker), jsonschema's uniqueItems on unhashable items, the parse check
    of unknown members (repeated names, nesting just inside the limit, huge integers).
    """
    valid = make_body(workers)
    size = len(valid)
    doc = json.loads(valid)
    out: dict[str, bytes] = {}

    last = json.loads(valid)
    if last["workers"]:
        last["workers"][-1]["world_size"] = 0
    out["one defect, last worker"] = json.dumps(last, separators=(",", ":")).encode()

    every = json.loads(valid)
    for w in every["workers"]:
        w["world_size"] = 0
        w["routes"] = w["routes"][::-1]
    out["two defects per worker"] = json.dumps(every, separators=(",", ":")).encode()

    n = max(2, size // 12)  # {"a":12345}, is ~12 bytes
    first = doc["workers"][0] if doc["workers"] else {}
    routes = {**first, "routes": [{"a": i % (n // 2)} for i in range(n)]}
    out["object routes, repeated"] = json.dumps(
        {**doc, "workers": [routes]}, separators=(",", ":")
    ).encode()

    unknown = json.loads(valid)
    for w in unknown["workers"]:
        w["x"] = {"a": 1}
    text = json.dumps(unknown, separators=(",", ":")).encode()
    out["repeated unknown names"] = text.replace(b'"x":{"a":1}', b'"x":{"a":1,"a":2}')

    per = max(1, size // max(1, 260 * max(1, workers)))
    nested = json.loads(valid)
    for w in nested["workers"]:
        w["x"] = 0
    text = json.dumps(nested, separators=(",", ":")).encode()
    out["nesting 128 deep"] = text.replace(b'"x":0', b'"x":' + (b"[" * 125 + b"]" * 125) * per)

    digits = max(5000, size // 2)
    out["one huge integer"] = valid[:-1] + b',"x":' + b"9" * digits + b"}"
    return out


def measure_hostile(
    sizes: Sequence[int] = (64, 1024),
    repetitions: int = 5,
    *,
    on_progress: Callable[[str], None] | None = None,
    cpu_time: bool = False,
) -> list[dict[str, Any]]:
    """check_body on every hostile body next to the valid body of that size, interleaved.

    Per size: the valid body's time, each hostile body's time and bytes, its cost per byte over
    the valid body's (1.0: as cheap per byte), and which one is the worst. The per-byte cost of
    the worst staying flat from size to size is what "linear time" means.
    """
    from prime_rl_dynamo.validate import check_body

    clock = time.thread_time if cpu_time else time.perf_counter
    out = []
    for n in sizes:
        valid = make_body(n)
        bodies = {"valid": valid, **hostile_bodies(n)}
        assert check_body(valid) == []
        if on_progress:
            on_progress(f"hostile bodies next to {n} workers ({len(valid):,} bytes)")
        calls = {name: (lambda b=body: check_body(b)) for name, body in bodies.items()}
        samples = interleaved(calls, repetitions, clock=clock)
        valid_s = summarize(samples["valid"])["median"]
        rows = {}
        for name, body in bodies.items():
            seconds = summarize(samples[name])
            rows[name] = {
                "bytes": len(body),
                "seconds": seconds,
                "us_per_byte": seconds["median"] / len(body) * 1e6,
                "per_byte_over_valid": (seconds["median"] / len(body)) / (valid_s / len(valid)),
            }
        worst = max((k for k in rows if k != "valid"), key=lambda k: rows[k]["us_per_byte"])
        out.append({"workers": n, "bytes": len(valid), "bodies": rows, "worst": worst})
    return out


def linearity(entries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per hostile shape: its cost per byte at the largest size of ``entries`` over its cost per
    byte at the smallest (1.0: exactly linear), against ``LINEAR_BAR``."""
    if len(entries) < 2:
        return []
    small, large = entries[0], entries[-1]
    out = []
    for name in small["bodies"]:
        if name in large["bodies"]:
            growth = large["bodies"][name]["us_per_byte"] / small["bodies"][name]["us_per_byte"]
            out.append({"shape": name, "from_workers": small["workers"],
                        "to_workers": large["workers"], "per_byte_growth": growth,
                        "bar": LINEAR_BAR, "ok": growth <= LINEAR_BAR})  # fmt: skip
    return out


def measure_dynamo_share(
    engines: Sequence[int] = (64, 128, 256),
    requests: int = 10,
    *,
    on_progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Real Dynamo (the harness: its frontend and runtime, stub engines) at each fleet size: its
    own listing GET timed, and ``validate_body`` on the body that GET returned, in the same run
    (each body validated ``VALIDATIONS_PER_GET`` times); the share is validation / GET."""
    import httpx

    from prime_rl_dynamo.validate import validate_body
    from tools.bench.discovery import FleetUnavailable, fleet_topology
    from tools.bench.scale import ScaleConfig, _dynamo_roundtrip

    out: list[dict[str, Any]] = []
    for n in engines:
        if on_progress:
            on_progress(f"real Dynamo, {n} engines: listing GET next to validate_body")
        topology = {**fleet_topology(n, 2), "model": "bench/model"}
        gets: list[float] = []
        checks: list[float] = []
        size = 0
        try:
            with _dynamo_roundtrip(topology, ScaleConfig()) as run, httpx.Client(timeout=60) as c:
                if not run.roundtrip_ok:
                    raise FleetUnavailable(f"the listing never equalled the fleet: {run.problems}")
                for _ in range(requests):
                    began = time.perf_counter()
                    body = c.get(run.discovery_url).raise_for_status().content
                    gets.append(time.perf_counter() - began)
                    began = time.perf_counter()
                    for _ in range(VALIDATIONS_PER_GET):
                        assert len(validate_body(body).workers) == n
                    checks.append((time.perf_counter() - began) / VALIDATIONS_PER_GET)
                    size = len(body)
        except (FleetUnavailable, httpx.HTTPError) as exc:
            out.append({"engines": n, "status": "skipped", "reason": str(exc)[:300]})
            continue
        get_s, check_s = summarize(gets), summarize(checks)
        share = check_s["median"] / get_s["median"]
        out.append({"engines": n, "status": "ok", "bytes": size, "get_s": get_s,
                    "validate_s": check_s, "share": share, "bar": DYNAMO_SHARE_BAR,
                    "ok": share <= DYNAMO_SHARE_BAR})  # fmt: skip
    return out


VALIDATIONS_PER_GET = 20


def format_hostile(entries: Sequence[dict[str, Any]]) -> str:
    """Per size: the worst hostile body next to the valid one, then every hostile shape."""
    lines = ["\nHostile bodies (check_body), next to the valid body of about the same size:"]
    for entry in entries:
        valid, worst = entry["bodies"]["valid"], entry["bodies"][entry["worst"]]
        lines.append(
            f"\n{entry['workers']} workers ({entry['bytes']:,} bytes): valid "
            f"{valid['seconds']['median'] * 1e3:.2f} ms; worst hostile: {entry['worst']!r} "
            f"{worst['seconds']['median'] * 1e3:.2f} ms for {worst['bytes']:,} bytes = "
            f"{worst['per_byte_over_valid']:.1f}x the valid body's cost per byte"
        )
        for name, row in entry["bodies"].items():
            lines.append(
                f"  {name:28s} {row['bytes']:>11,} B {row['seconds']['median'] * 1e3:10.2f} ms "
                f"{row['us_per_byte']:8.3f} us/B  {row['per_byte_over_valid']:7.1f}x per byte"
            )
    return "\n".join(lines)


def _pydantic_models() -> tuple[Any, Any, Any]:
    from pydantic import BaseModel, ConfigDict, Field

    class DiscoverySnapshot(BaseModel):
        """The top level: strict protocol_version 1, a list of objects."""

        model_config = ConfigDict(extra="ignore")
        protocol_version: int = Field(strict=True, ge=1, le=1)
        workers: list[dict[str, Any]]

    class DiscoveredWorker(BaseModel):
        """One worker: the fields a trainer needs, strictly typed."""

        model_config = ConfigDict(extra="ignore", frozen=True)
        component: str = Field(min_length=1)
        instance_id: int = Field(strict=True, ge=0)
        model: str
        admin_base_url: str = Field(min_length=1)
        world_size: int = Field(strict=True, gt=0)

    class TypedSnapshot(BaseModel):
        """The same, with the workers typed, for pydantic's own JSON parser."""

        model_config = ConfigDict(extra="ignore")
        protocol_version: int = Field(strict=True, ge=1, le=1)
        workers: list[DiscoveredWorker]

    return DiscoverySnapshot, DiscoveredWorker, TypedSnapshot


def strict_pydantic_parser() -> Callable[[bytes], Any]:
    """pydantic's validate_json with a strict model of every field of the listing.

    Types, bounds and lengths as the schema has them, in strict mode (no coercion), extra fields
    ignored. Not the URL patterns (pydantic's Rust regex engine has no look-ahead) nor the rules
    across fields or workers: a lighter job than the validator's.
    """
    from typing import Annotated

    from pydantic import BaseModel, ConfigDict, Field

    strict = ConfigDict(strict=True, extra="ignore", frozen=True)
    name = Annotated[str, Field(min_length=1)]

    class StrictTransport(BaseModel):
        """The transport: each address optional."""

        model_config = strict
        tcp: str | None = None
        nats_tcp: str | None = None
        http: str | None = None

    class StrictWorker(BaseModel):
        """One worker: every field of the schema, strictly typed."""

        model_config = strict
        namespace: name
        component: name
        endpoint: name
        instance_id: int = Field(ge=0, le=U64_MAX)
        transport: StrictTransport
        request_plane_url: str = Field(pattern=r"^dyn://")
        routes: tuple[name, ...]
        system_url: str | None = None
        admin_base_url: str | None = None
        model: name | None = None
        world_size: int | None = Field(default=None, ge=1, le=2**32 - 1)
        error: name | None = None

    class StrictSnapshot(BaseModel):
        """The top level."""

        model_config = strict
        protocol_version: int = Field(ge=1, le=1)
        namespace: str
        workers: tuple[StrictWorker, ...]

    return StrictSnapshot.model_validate_json


def bad_admin_body(workers: int) -> bytes:
    """The valid body with the last worker's admin_base_url of another scheme (ftp)."""
    doc = json.loads(make_body(workers))
    last = doc["workers"][-1]
    last["admin_base_url"] = "ftp" + last["admin_base_url"].removeprefix("http")
    return json.dumps(doc, separators=(",", ":")).encode()


def defective_bodies(workers: int) -> tuple[bytes, bytes]:
    """The valid body with its last worker defective, and with every worker defective."""
    bodies = hostile_bodies(workers)
    return bodies["one defect, last worker"], bodies["two defects per worker"]


def _checked(workers: Sequence[Any]) -> list[Any]:
    """Duplicate identities and admin URLs are fatal; the result is sorted (component, instance_id)."""
    identities = {(w.component, w.instance_id) for w in workers}
    if len(identities) != len(workers):
        raise ValueError("duplicate (component, instance_id)")
    if len({w.admin_base_url for w in workers}) != len(workers):
        raise ValueError("duplicate admin_base_url")
    return sorted(workers, key=lambda w: (w.component, w.instance_id))


def pydantic_parser(model_name: str = MODEL) -> Callable[[bytes], list[Any]]:
    """The plain pydantic parser: json, strict snapshot, model filter, per-worker model, checks, sort."""
    snapshot_model, worker_model, _ = _pydantic_models()

    def parse(data: bytes) -> list[Any]:
        snapshot = snapshot_model.model_validate(json.loads(data))
        kept = []
        for raw in snapshot.workers:
            if raw.get("model") not in (None, model_name):
                continue  # another model's worker
            if raw.get("error"):
                raise RuntimeError("pending: a worker reports an error")
            kept.append(worker_model.model_validate(raw))
        return _checked(kept)

    return parse


def _pydantic_json_parser() -> Callable[[bytes], list[Any]]:
    """A stronger opponent: the same models, parsed by pydantic-core straight from bytes."""
    _, _, typed = _pydantic_models()

    def parse(data: bytes) -> list[Any]:
        return _checked(typed.model_validate_json(data).workers)

    return parse


def contenders(body: bytes, *, with_jsonschema: bool = False) -> dict[str, Callable[[], object]]:
    """Zero-argument callables over ``body``, each checked once to do the full job."""
    from prime_rl_dynamo.validate import check_body, validate_body

    expected = len(json.loads(body)["workers"])
    found: dict[str, Callable[[], object]] = {
        YARDSTICK: lambda: json.loads(body),
        VALIDATOR: lambda: validate_body(body),
    }
    try:
        import orjson

        found[ORJSON] = lambda: orjson.loads(body)
    except ImportError:  # optional: the bench extra brings it
        pass
    try:
        parse = pydantic_parser()
        parse_json = _pydantic_json_parser()
        parse_strict = strict_pydantic_parser()
        found[PYDANTIC] = lambda: parse(body)
        found["pydantic (validate_json)"] = lambda: parse_json(body)
        found[PYDANTIC_STRICT] = lambda: parse_strict(body)
    except ImportError:
        pass
    if expected:
        one, every = defective_bodies(expected)
        found[ONE_DEFECTIVE] = lambda: check_body(one)
        found[ALL_DEFECTIVE] = lambda: check_body(every)
        assert len(check_body(one)) == 1 and len(check_body(every)) == 2 * expected
        admin = bad_admin_body(expected)
        found[BAD_ADMIN] = lambda: check_body(admin)
        assert [v.requirement for v in check_body(admin)] == ["WORKER-8"]
    if with_jsonschema:
        from jsonschema import Draft202012Validator

        from prime_rl_dynamo.resources import load_json

        validator = Draft202012Validator(load_json("rl-workers.v1.schema.json"))
        found["jsonschema (pure Python)"] = lambda: validator.validate(json.loads(body))
    assert len(validate_body(body).workers) == expected
    for name in (PYDANTIC, "pydantic (validate_json)"):
        if name in found:
            result = found[name]()
            assert isinstance(result, list) and len(result) == expected, name
    if PYDANTIC_STRICT in found:
        assert len(found[PYDANTIC_STRICT]().workers) == expected  # type: ignore[attr-defined]
    return found


def measure(
    sizes: Sequence[int] = (1, 64, 1024, 8192),
    repetitions: int = 15,
    *,
    jsonschema_max_workers: int = 64,
    on_progress: Callable[[str], None] | None = None,
    cpu_time: bool = False,
) -> dict[str, Any]:
    """Time every contender at every size; medians, min-max spread and ratios vs json.loads.

    ``cpu_time`` times with the thread's CPU clock instead of the wall clock: on a machine shared
    with other work it measures the cost without the time spent waiting for a core.
    """
    clock = time.thread_time if cpu_time else time.perf_counter
    results = []
    for n in sizes:
        body = make_body(n)
        calls = contenders(body, with_jsonschema=n <= jsonschema_max_workers)
        number = max(1, 1024 // max(n, 1))  # tiny bodies: average many calls per sample
        reps = repetitions
        if on_progress:
            on_progress(f"{n} workers ({len(body):,} bytes): {reps} x {len(calls)} contenders")
        samples = interleaved(calls, reps, number=number, clock=clock)
        yardstick = samples[YARDSTICK]
        entry: dict[str, Any] = {
            "workers": n,
            "bytes": len(body),
            "repetitions": reps,
            "calls_per_sample": number,
            "seconds": {name: summarize(s) for name, s in samples.items()},
            "ratio_vs_json_loads": {
                name: paired_ratio(s, yardstick) for name, s in samples.items() if name != YARDSTICK
            },
        }
        if PYDANTIC in samples:
            entry["validator_vs_pydantic"] = paired_ratio(samples[VALIDATOR], samples[PYDANTIC])
        entry["goals"] = [
            {
                "goal": goal,
                "bar": bars[n],
                "ratio": paired_ratio(samples[numerator], samples[denominator]),
                "ok": paired_ratio(samples[numerator], samples[denominator])["median"] <= bars[n],
            }
            for goal, numerator, denominator, bars in GOALS
            if n in bars and numerator in samples and denominator in samples
        ]
        results.append(entry)
    return {
        "criteria": dict(CRITERIA),
        "clock": "thread CPU time" if cpu_time else "wall clock",
        "sizes": results,
        "verdict": verdict(results),
    }


def verdict(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Does the validator meet the bar at the sizes that count? (Median ratios of one run.)"""
    checks = []
    for entry in results:
        if entry["workers"] not in CRITERIA["sizes"]:
            continue
        over_json = entry["ratio_vs_json_loads"][VALIDATOR]["median"]
        over_pyd = entry.get("validator_vs_pydantic", {}).get("median")
        checks.append(
            {
                "workers": entry["workers"],
                "over_json_loads": over_json,
                "over_pydantic": over_pyd,
                "ok": over_json <= CRITERIA["max_over_json_loads"]
                and (over_pyd is not None and over_pyd < CRITERIA["max_over_pydantic"]),
            }
        )
    return {"ok": bool(checks) and all(c["ok"] for c in checks), "checks": checks}


def format_table(report: dict[str, Any]) -> str:
    """A plain-text table: median time (min-max) and median ratio vs json.loads per contender."""
    lines = [f"clock: {report.get('clock', 'wall clock')}"]
    for entry in report["sizes"]:
        lines.append(
            f"\n{entry['workers']} workers, {entry['bytes']:,} bytes "
            f"({entry['repetitions']} reps x {entry['calls_per_sample']} calls)"
        )
        for name, s in entry["seconds"].items():
            ratio = entry["ratio_vs_json_loads"].get(name)
            rtext = (
                f"{ratio['median']:6.2f}x json.loads ({ratio['min']:.2f}-{ratio['max']:.2f})"
                if ratio
                else "  1.00x (yardstick)"
            )
            lines.append(
                f"  {name:28s} {s['median'] * 1e3:10.3f} ms  ({s['min'] * 1e3:.3f}-"
                f"{s['max'] * 1e3:.3f})  {rtext}"
            )
        if "validator_vs_pydantic" in entry:
            r = entry["validator_vs_pydantic"]
            lines.append(
                f"  validate_body / pydantic (original change): {r['median']:.2f}x "
                f"({r['min']:.2f}-{r['max']:.2f})"
            )
        for goal in entry.get("goals", []):
            lines.append(
                f"  goal {goal['goal']}: {goal['ratio']['median']:.2f}x (bar <= {goal['bar']}x): "
                f"{'met' if goal['ok'] else 'NOT met'}"
            )
    v = report["verdict"]
    lines.append("")
    for c in v["checks"]:
        pyd = "n/a" if c["over_pydantic"] is None else f"{c['over_pydantic']:.2f}x"
        lines.append(
            f"{c['workers']} workers: {c['over_json_loads']:.2f}x json.loads (bar "
            f"{CRITERIA['max_over_json_loads']}x), {pyd} pydantic (bar < 1.0x): "
            f"{'PASS' if c['ok'] else 'FAIL'}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tools.bench.validation [--sizes 1,64,1024,8192] [--repetitions 15] [--json]``."""
    parser = argparse.ArgumentParser(
        prog="python -m tools.bench.validation", allow_abbrev=False, description=__doc__
    )
    parser.add_argument("--sizes", default="1,64,1024,8192", help="worker counts, comma-separated")
    parser.add_argument("--repetitions", type=int, default=15)
    parser.add_argument("--jsonschema-max-workers", type=int, default=64)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--cpu-time", action="store_true", help="time with the thread's CPU clock (busy machines)"
    )
    parser.add_argument(
        "--hostile",
        default="",
        help="also time hostile bodies next to valid ones at these worker counts (e.g. 64,1024)",
    )
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    report = measure(
        sizes,
        args.repetitions,
        jsonschema_max_workers=args.jsonschema_max_workers,
        on_progress=lambda msg: print(msg, file=sys.stderr),
        cpu_time=args.cpu_time,
    )
    hostile_sizes = [int(s) for s in args.hostile.split(",") if s.strip()]
    if hostile_sizes:
        report["hostile"] = measure_hostile(
            hostile_sizes,
            max(3, args.repetitions // 3),
            on_progress=lambda msg: print(msg, file=sys.stderr),
            cpu_time=args.cpu_time,
        )
    text = format_table(report) + (format_hostile(report["hostile"]) if hostile_sizes else "")
    if hostile_sizes:
        report["linearity"] = linearity(report["hostile"])
        text += "".join(
            f"\n  linear: {g['shape']}: {g['per_byte_growth']:.2f}x per byte from "
            f"{g['from_workers']:,} to {g['to_workers']:,} workers (bar <= {g['bar']}x)"
            for g in report["linearity"]
        )
    print(json.dumps(report, indent=2) if args.json else text)
    return 0 if report["verdict"]["ok"] or not report["verdict"]["checks"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
