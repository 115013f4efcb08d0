"""Every benchmark figure the docs quote, generated from the committed ``docs/bench/bench.json``
(and ``docs/bench/scale.json`` for the scale figures, when bench.json has no scale section).

The docs hold marked blocks, ``<!-- bench:NAME -->...<!-- /bench:NAME -->`` (a table, a paragraph
or a few words inside a sentence); this module renders each NAME from the report and rewrites the
blocks. ``python -m tools.bench.docs`` updates README.md and docs/*.md after a new benchmark run;
``python -m tools.bench.docs --check`` (and tests/test_docs_figures.py) fails when a block drifts.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from prime_rl_dynamo.exitcodes import ExitCode
from tools import REPO
from tools.bench.client_profile import client_profile_says
from tools.bench.engines import engines_console, engines_cost_says
from tools.bench.markdown import render_markdown, rerun_command
from tools.bench.table import fmt_ratio

__all__ = ["BLOCKS", "DOCUMENTS", "REPORT", "render_blocks", "update_text"]

#: The committed report every figure comes from.
REPORT = Path("docs/bench/bench.json")
#: The scale run (``bench --only scale``): the ``scale`` section, when bench.json has none.
SCALE_REPORT = Path("docs/bench/scale.json")
#: The protocol 1 / protocol 2 run (``bench --protocol``).
PROTOCOL_REPORT = Path("docs/bench/protocol.json")
#: The files that quote benchmark figures, relative to the repository root.
DOCUMENTS = (
    "README.md",
    "docs/bench.md",
    "docs/conformance.md",
    "docs/validation.md",
    "docs/harness.md",
    "docs/reference.md",
    "docs/findings.md",
)

_BLOCK = re.compile(
    r"<!-- bench:(?P<name>[a-z0-9-]+) -->(?P<body>.*?)<!-- /bench:(?P=name) -->", re.S
)


def _ms(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.1f}" if ms >= 10 else f"{ms:.2f}"


def _point(section: dict[str, Any], workers: int) -> dict[str, Any]:
    return next(p for p in section["points"] if p["workers"] == workers)


def _series_points(report: dict[str, Any], frontend: str) -> dict[int, dict[str, Any]]:
    series = report["discovery"]["series"].get(frontend, {})
    return {p["engines"]: p for p in series.get("points", [])}


def _counts(series: dict[str, Any]) -> str:
    return ", ".join(f"{n} {status}" for status, n in series["counts"].items() if n)


def _not_passed(series: dict[str, Any]) -> str:
    """Which requirements did not pass, by status ("skip: HTTP-5; warn: ENGINE-2")."""
    if "not_passed" not in series:  # a report from before the benchmark recorded them
        return "which ones: not recorded by this benchmark run"
    parts = [f"{status}: {', '.join(ids)}" for status, ids in series["not_passed"].items() if ids]
    return "; ".join(parts) or "every check passed"


def _facts(report: dict[str, Any]) -> tuple[str, str, str, str]:
    """A stored run's command, cores, load average before and after, and date, as the docs say them."""
    machine = report["machine"]
    before, after = machine["load_average"][0], machine["load_average_after"][0]
    return (
        f"`{rerun_command(report)}`",
        f"{machine['cpu_count']} cores",
        f"load average {before:.1f} before and {after:.1f} after",
        machine["timestamp"][:10],
    )


def _run_line(report: dict[str, Any]) -> str:
    command, cores, load, date = _facts(report)
    return f"{command} ({report['wall_s'] / 60:.1f} min, {cores}, {load}, {date})"


def _readme_validation(report: dict[str, Any]) -> str:
    section = report["validation"]
    lines = [
        "| workers in the body | `validate_body` ÷ `orjson.loads` | ÷ `json.loads` | ÷ strict "
        "pydantic `validate_json` | ÷ pydantic parser of the original change | one defective "
        "worker ÷ valid | one bad `admin_base_url` ÷ valid | every worker defective ÷ valid |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for p in section["points"]:
        if p["workers"] < 64:
            continue
        ours, orjson = p["times_s"]["validate_body"], p["times_s"].get("orjson.loads")
        r = p["ratios"]
        goals = {g["goal"]: g for g in p.get("goals", [])}

        def goal(name: str, goals: dict[str, Any] = goals) -> str:
            g = goals.get(name)
            return "-" if g is None else fmt_ratio(g["ratio"], spread=False)

        vs_orjson = fmt_ratio(r.get("validate_body / orjson.loads"), spread=False)
        if orjson:
            vs_orjson += f" ({_ms(ours['median'])} ms vs {_ms(orjson['median'])} ms)"
        lines.append(
            f"| {p['workers']:,} | {vs_orjson} "
            f"| {fmt_ratio(r.get('validate_body / json.loads'), spread=False)} "
            f"| {fmt_ratio(r.get('validate_body / pydantic (strict model, validate_json)'), spread=False)} "
            f"| {fmt_ratio(r.get('validate_body / pydantic (original change)'), spread=False)} "
            f"| {goal('one defective worker / valid body')} "
            f"| {goal('one bad admin_base_url / valid body')} "
            f"| {_every_defective(p)} |"
        )
    run = section.get("run")
    if run and run.get("machine"):  # merged from its own run (python -m tools.bench.merge)
        load = run["machine"].get("load_average") or [0.0]
        lines.append(
            f"\nThese validation figures come from their own run, `{run.get('command')}` "
            f"({run.get('wall_s', 0) / 60:.1f} min, load average {load[0]:.1f} before)."
        )
    return "\n".join(lines)


def _every_defective(p: dict[str, Any]) -> str:
    """check_body on a body with every worker defective, over a valid body (no bar: a figure)."""
    times = p["times_s"]
    every = times.get("check_body (every worker defective)")
    return f"{every['median'] / times['validate_body']['median']:.2f}x" if every else "-"


def _validation_goals(report: dict[str, Any]) -> str:
    """Every goal at every size it applies to: the median paired ratio [min-max] and the bar;
    then linear time per hostile shape, and the share of real Dynamo's listing GET."""
    section = report["validation"]
    lines = [
        "| workers | goal | ratio, median [min-max] | bar | met |",
        "| --- | --- | --- | --- | --- |",
    ]
    for p in section["points"]:
        for g in p.get("goals", []):
            lines.append(
                f"| {p['workers']:,} | {g['goal']} | {fmt_ratio(g['ratio'])} | <= {g['bar']:g}x "
                f"| {'yes' if g['ok'] else '**no**'} |"
            )
    for g in section.get("linearity", []):
        lines.append(
            f"| {g['from_workers']:,} to {g['to_workers']:,} | linear: {g['shape']}, cost per "
            f"byte at {g['to_workers']:,} / at {g['from_workers']:,} | {g['per_byte_growth']:.2f}x "
            f"| <= {g['bar']:g}x | {'yes' if g['ok'] else '**no**'} |"
        )
    for d in section.get("dynamo_share", []):
        if d.get("status") != "ok":
            lines.append(f"| {d['engines']} engines | real Dynamo's listing GET | not measured "
                         f"({d.get('reason', '')}) | < 1 % | **no** |")  # fmt: skip
            continue
        lines.append(
            f"| {d['engines']} engines | validate_body / real Dynamo's own listing GET "
            f"({_ms(d['validate_s']['median'])} ms / {_ms(d['get_s']['median'])} ms) "
            f"| {d['share']:.2%} | < {d['bar']:.0%} | {'yes' if d['ok'] else '**no**'} |"
        )
    if len(lines) == 2:
        return "(The committed run predates the goals: `python -m tools.bench.merge` brings them.)"
    return "\n".join(lines)


def _readme_discovery(report: dict[str, Any]) -> str:
    ref, dyn = _series_points(report, "reference"), _series_points(report, "dynamo")
    lines = [
        "| engines | reference frontend GET p50 / p99 | real Dynamo 1.6.1 GET p50 / p99 | "
        "time to a ready snapshot, reference / Dynamo |",
        "| --- | --- | --- | --- |",
    ]

    def get(p: dict[str, Any] | None) -> str:
        if not p or not p.get("latency_s"):
            return "-"
        return f"{_ms(p['latency_s']['p50'])} / {_ms(p['latency_s']['p99'])} ms"

    def ready(p: dict[str, Any] | None) -> str:
        return _ms(p["ready_s"]["median"]) if p and p.get("ready_s") else "-"

    for engines in sorted(set(ref) | set(dyn)):
        r, d = ref.get(engines), dyn.get(engines)
        lines.append(f"| {engines} | {get(r)} | {get(d)} | {ready(r)} / {ready(d)} ms |")
    return "\n".join(lines)


def _suite_sentence(report: dict[str, Any]) -> str:
    series = report["suite"]["series"]
    ref, dyn = series["reference"]["wall_s"]["median"], series["dynamo"]["wall_s"]["median"]
    ratio = report["suite"]["ratio_dynamo_over_reference"]["median"]
    return (
        f"{ref:.0f} s against the reference frontend and {dyn:.0f} s against real Dynamo "
        f"({ratio:.2f}x)"
    )


def _validation_says(report: dict[str, Any]) -> str:
    section = report["validation"]
    small, large = section["criteria"]["sizes"]
    rs, rl = _point(section, small)["ratios"], _point(section, large)["ratios"]
    js = [
        1 / p["ratios"]["validate_body / jsonschema (pure Python)"]["median"]
        for p in section["points"]
        if p["ratios"].get("validate_body / jsonschema (pure Python)", {}).get("median")
    ]
    strict = "validate_body / pydantic (strict model, validate_json)"

    def ratios(r: dict[str, Any]) -> str:
        text = f"{fmt_ratio(r.get('validate_body / orjson.loads'), spread=False)} `orjson.loads`, "
        text += f"{fmt_ratio(r.get('validate_body / json.loads'), spread=False)} `json.loads`"
        if strict in r:
            text += f" and {fmt_ratio(r[strict], spread=False)} strict pydantic `validate_json`"
        return text

    goals = [g for p in section["points"] for g in p.get("goals", [])]
    goals += [{**g, "goal": f"linear: {g['shape']}"} for g in section.get("linearity", [])]
    goals += [{**d, "goal": "share of Dynamo's listing", "ok": d.get("ok", False)}
              for d in section.get("dynamo_share", [])]  # fmt: skip
    missed = sorted({g["goal"] for g in goals if not g["ok"]})
    said = (
        f"At {small:,} workers the project's full validation costs {ratios(rs)}; at "
        f"{large:,} workers {ratios(rl)}."
    )
    if goals:
        said += f" {sum(g['ok'] for g in goals)} of {len(goals)} goals are met" + (
            f" (not always: {', '.join(missed)})." if missed else "."
        )
    if js:
        said += (
            " Pure-Python `jsonschema` on the same schema costs about "
            f"{min(js):.0f}-{max(js):.0f}x more than the full validation where it was measured."
        )
    return said


def _discovery_says(report: dict[str, Any]) -> str:
    ref, dyn = _series_points(report, "reference"), _series_points(report, "dynamo")
    sizes = sorted(set(ref) & set(dyn))
    lo, hi = sizes[0], sizes[-1]
    ratio = next(r for r in report["discovery"]["ratios"] if r["engines"] == hi)
    ready_ref = [ref[n]["ready_s"]["median"] for n in sizes]
    return (
        "Dynamo 1.6.1 probes every worker on every `GET` (no cache, at most 32 at once), so its "
        f"p50 goes from {_ms(dyn[lo]['latency_s']['p50'])} ms at {lo} engine"
        f"{'' if lo == 1 else 's'} to {_ms(dyn[hi]['latency_s']['p50'])} ms at {hi} "
        f"({ratio['latency_p50']:.0f}x the reference frontend, which lists from its own state). "
        "The `DiscoveryClient`'s whole job (constructing the client, two polls, validating each "
        f"body, checking readiness) takes {_ms(min(ready_ref))}-{_ms(max(ready_ref))} ms on the "
        f"reference frontend and {_ms(dyn[hi]['ready_s']['median'])} ms against {hi} real Dynamo "
        "engines. The TLS context (the CA bundle) is built once per process and shared by the "
        "discovery client and every admin engine, so a new client no longer pays for it."
    )


def _jsonschema_over_loads(report: dict[str, Any]) -> str:
    times = [p["times_s"] for p in report["validation"]["points"]]
    ratios = [
        t["jsonschema (pure Python)"]["median"] / t["json.loads"]["median"]
        for t in times
        if t.get("jsonschema (pure Python)") and t.get("json.loads")
    ]
    return f"{min(ratios):.0f}-{max(ratios):.0f}x"


def _machine_load(report: dict[str, Any]) -> str:
    machine = report["machine"]
    return (
        f"The machine ran other work too: load average {machine['load_average'][0]:.1f} before "
        f"and {machine['load_average_after'][0]:.1f} after, on {machine['cpu_count']} cores."
    )


def _scale_points(report: dict[str, Any], frontend: str) -> list[dict[str, Any]]:
    series = (report.get("scale") or {}).get("series", {}).get(frontend, {})
    return sorted(series.get("points", []), key=lambda p: p["engines"])


def _scale_source(report: dict[str, Any]) -> str:
    command, cores, load, date = _facts(report)
    return f"{command}, {date}, {cores} shared with other jobs, {load}"


def _scale_table(report: dict[str, Any]) -> str:
    lines = [
        "| engines | engines per process | processes (incl. frontend) | ready in | listing equal "
        "to the fleet at | memory (RSS, all processes) | one listing GET, p50 / p99 |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for p in _scale_points(report, "dynamo"):
        lat = p["latency_s"]
        equal = f"{p['roundtrip_s']:.1f} s" if p.get("roundtrip_ok") else "never (see the report)"
        lines.append(
            f"| {p['engines']} | {p['engines_per_process']} | {p['processes']} "
            f"| {p['startup_s']:.1f} s | {equal} | {p['memory_bytes'] / 2**30:.2f} GiB "
            f"| {_ms(lat['p50'])} / {_ms(lat['p99'])} ms |"
        )
    return "\n\n" + "\n".join(lines) + "\n\n"


def _scale_listing(report: dict[str, Any], frontend: str) -> str:
    points = _scale_points(report, frontend)
    *head, last = [f"{_ms(p['latency_s']['p50'])} ms at {p['engines']} engines" for p in points]
    return f"{', '.join(head)} and {last}" if head else last


def _scale_run(report: dict[str, Any]) -> str:
    machine = report["machine"]
    return (
        f"{report['wall_s']:.0f} s here, {machine['cpu_count']} cores shared with other jobs, "
        f"load average {machine['load_average'][0]:.1f} before and "
        f"{machine['load_average_after'][0]:.1f} after"
    )


def _scale_bench_table(report: dict[str, Any]) -> str:
    ref = {p["engines"]: p for p in _scale_points(report, "reference")}
    ratios = {r["engines"]: r for r in report["scale"].get("ratios", [])}
    lines = [
        "| engines | reference GET p50 / p99 ms | Dynamo GET p50 / p99 ms | Dynamo / reference "
        "(p50) | Dynamo round trip (start-up) | Dynamo memory, processes |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for p in _scale_points(report, "dynamo"):
        r = ref.get(p["engines"])
        ref_cell = f"{_ms(r['latency_s']['p50'])} / {_ms(r['latency_s']['p99'])}" if r else "-"
        ratio = ratios.get(p["engines"], {}).get("latency_p50")
        trip = f"{p['roundtrip_s']:.1f} s" if p.get("roundtrip_ok") else "not equal"
        lines.append(
            f"| {p['engines']} | {ref_cell} "
            f"| {_ms(p['latency_s']['p50'])} / {_ms(p['latency_s']['p99'])} "
            f"| {f'{ratio:.1f}x' if ratio else '-'} | {trip} ({p['startup_s']:.1f} s) "
            f"| {p['memory_bytes'] / 2**30:.2f} GiB, {p['processes']} |"
        )
    return "\n\n" + "\n".join(lines) + "\n\n"


def _protocol_table(report: dict[str, Any]) -> str:
    from tools.bench.protocol import markdown

    return "\n\n" + markdown(report) + "\n"


def _protocol_says(report: dict[str, Any]) -> str:
    ref = {int(k): v for k, v in report["reference"].items()}
    dyn = {int(k): v for k, v in report["dynamo"].items() if "per_poll" in v}
    sizes = sorted(ref)
    lo, hi = sizes[0], sizes[-1]
    mid = sizes[len(sizes) // 2]

    def ratio(size: int, key: str) -> float:
        return float(ref[size]["ratios_v1_over_v2"][key])

    dynamo = " and ".join(
        f"{dyn[n]['per_poll']['v1']['server_cpu_ms_per_poll']:.0f} ms at {n:,} engines"
        for n in sorted(dyn)
    )
    per_poll = ref[mid]["per_poll"]
    not_modified = per_poll["v2_conditional"]["wire_bytes_per_poll"]
    listing = per_poll["v1"]["wire_bytes_per_poll"]
    biggest = ref[hi]["per_poll"]["v1"]["wire_bytes_per_poll"]
    lines = [
        f"- **An unchanged fleet of {mid:,} engines costs the reference server "
        f"{ratio(mid, 'server_cpu_per_poll'):.0f}x less CPU per poll under v2** "
        f"({ratio(lo, 'server_cpu_per_poll'):.0f}x at {lo:,}, "
        f"{ratio(hi, 'server_cpu_per_poll'):.0f}x at {hi:,}): a `304` compares the fleet's state "
        "with the one the last listing came from (one look per engine) instead of building, "
        "serialising and sending the listing."
        + (
            f" Dynamo 1.6.1 pays {dynamo} per poll (it probes every worker); keeping the "
            "fingerprint of its last listing and answering `304` would turn that into a "
            "comparison of its discovery store's revision."
            if dyn
            else ""
        ),
        f"- **Bytes per minute drop by {ratio(mid, 'wire_bytes_per_minute_conditional'):,.0f}x "
        f"at {mid:,} engines** with conditional polling and "
        f"{ratio(mid, 'wire_bytes_per_minute_feed'):,.0f}x with the change feed: a `304` is "
        f"{not_modified:,} bytes both ways whatever the fleet, against "
        f"{listing / 1e3:,.0f} kB for a {mid:,}-engine listing.",
        f"- **A death or a resize is seen {ratio(lo, 'detect_time'):.1f}x sooner at {lo:,} "
        f"engines and {ratio(mid, 'detect_time'):.1f}x sooner at {mid:,}**: the held GET "
        "returns as soon as the fleet changes, instead of at the next poll (on average half a "
        f"poll interval later). At {hi:,} engines the gain is {ratio(hi, 'detect_time'):.1f}x: "
        f"once the change arrives, the client still validates and compares a "
        f"{biggest / 1e6:.1f} MB listing, and that, not the wait, dominates.",
    ]
    return "\n\n" + "\n".join(lines) + "\n\n"


#: Block name -> how to render it from the report (inline blocks have no surrounding newlines).
BLOCKS: dict[str, Callable[[dict[str, Any]], str]] = {
    "run": _run_line,
    "readme-validation": lambda r: "\n\n" + _readme_validation(r) + "\n\n",
    "readme-discovery": lambda r: "\n\n" + _readme_discovery(r) + "\n\n",
    "suite-times": _suite_sentence,
    "suite-dynamo-seconds": lambda r: f"{r['suite']['series']['dynamo']['wall_s']['median']:.0f} s",
    "suite-reference-seconds": lambda r: (
        f"{r['suite']['series']['reference']['wall_s']['median']:.0f} s"
    ),
    "dynamo-counts": lambda r: _counts(r["suite"]["series"]["dynamo"]),
    "reference-counts": lambda r: _counts(r["suite"]["series"]["reference"]),
    "dynamo-not-passed": lambda r: _not_passed(r["suite"]["series"]["dynamo"]),
    "figures": lambda r: "\n\n" + render_markdown(r) + "\n",
    "machine-load": _machine_load,
    "jsonschema-over-loads": _jsonschema_over_loads,
    "validation-says": _validation_says,
    "validation-goals": lambda r: "\n\n" + _validation_goals(r) + "\n\n",
    "discovery-says": _discovery_says,
    "client-profile": client_profile_says,
    "engines": engines_cost_says,
    "engines-console": engines_console,
}

#: Blocks rendered from the scale report (docs/bench/scale.json, or bench.json's own section).
SCALE_BLOCKS: dict[str, Callable[[dict[str, Any]], str]] = {
    "scale-source": _scale_source,
    "scale-table": _scale_table,
    "scale-dynamo-listing": lambda r: _scale_listing(r, "dynamo"),
    "scale-reference-listing": lambda r: _scale_listing(r, "reference"),
    "scale-run": _scale_run,
    "scale-bench-table": _scale_bench_table,
}

#: Blocks rendered from the protocol run (docs/bench/protocol.json).
PROTOCOL_BLOCKS: dict[str, Callable[[dict[str, Any]], str]] = {
    "protocol-table": _protocol_table,
    "protocol-says": _protocol_says,
    "protocol-minutes": lambda r: f"{r['wall_s'] / 60:.1f} minutes",
    "protocol-load": lambda r: f"{r['machine']['load_average'][0]:.1f}",
    "protocol-cpu-seconds": lambda r: f"{r['config']['cpu_seconds']:g} s",
    "protocol-feed-wait": lambda r: f"{r['feed_wait_s']:g} s",
}


def render_blocks(
    report: dict[str, Any],
    scale: dict[str, Any] | None = None,
    protocol: dict[str, Any] | None = None,
) -> dict[str, str]:
    """Every block's text for this report; the scale blocks come from ``report`` when its scale
    section ran, else from ``scale`` (default: the committed docs/bench/scale.json); the protocol
    blocks from ``protocol`` (default: the committed docs/bench/protocol.json)."""
    if (report.get("scale") or {}).get("series"):
        scale = report
    elif scale is None:
        scale = json.loads((REPO / SCALE_REPORT).read_text(encoding="utf-8"))
    if protocol is None:
        protocol = json.loads((REPO / PROTOCOL_REPORT).read_text(encoding="utf-8"))
    return {
        **{name: render(report) for name, render in BLOCKS.items()},
        **{name: render(scale) for name, render in SCALE_BLOCKS.items()},
        **{name: render(protocol) for name, render in PROTOCOL_BLOCKS.items()},
    }


def update_text(text: str, rendered: dict[str, str], *, where: str = "") -> str:
    """``text`` with every marked block replaced (KeyError for a block name nobody renders)."""

    def replace(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in rendered:
            raise KeyError(f"{where}: unknown bench block {name!r}; known: {sorted(rendered)}")
        return f"<!-- bench:{name} -->{rendered[name]}<!-- /bench:{name} -->"

    return _BLOCK.sub(replace, text)


def main(argv: Sequence[str] | None = None) -> int:
    """Rewrite the blocks (or, with --check, list the files whose blocks drifted)."""
    parser = argparse.ArgumentParser(
        prog="python -m tools.bench.docs", allow_abbrev=False, description=__doc__
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when a block is stale")
    parser.add_argument("--report", type=Path, default=REPO / REPORT, help="the bench JSON")
    parser.add_argument(
        "--scale-report", type=Path, default=REPO / SCALE_REPORT, help="the scale run's JSON"
    )
    parser.add_argument(
        "--protocol-report", type=Path, default=REPO / PROTOCOL_REPORT, help="bench --protocol"
    )
    args = parser.parse_args(argv)
    rendered = render_blocks(
        json.loads(args.report.read_text(encoding="utf-8")),
        json.loads(args.scale_report.read_text(encoding="utf-8")),
        json.loads(args.protocol_report.read_text(encoding="utf-8")),
    )
    stale = []
    for name in DOCUMENTS:
        path = REPO / name
        text = path.read_text(encoding="utf-8")
        new = update_text(text, rendered, where=name)
        if new != text:
            stale.append(name)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    if args.check and stale:
        print(
            f"stale benchmark figures in {', '.join(stale)}: run python -m tools.bench.docs",
            file=sys.stderr,
        )
        return ExitCode.FAIL
    for name in stale:
        print(f"updated {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
