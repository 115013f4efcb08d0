"""``prime-rl-dynamo plan FILE -W W [--convention C] [--json]``: rank plan from a saved GET /v1/rl/workers body.

Validates a saved discovery body, checks it is ready for the given inference world size (the
readiness rules READY-1..6) and prints each engine's rank_offset and ranks. Exit 0 planned, 1 not
ready or refused, 2 usage or unreadable input.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from prime_rl_dynamo.cli._groups import add_command
from prime_rl_dynamo.cli.output import complain
from prime_rl_dynamo.cli.validate import input_name, positive_int, read_input
from prime_rl_dynamo.errors import PrimeRLDynamoError
from prime_rl_dynamo.exitcodes import ExitCode
from prime_rl_dynamo.plan import WEIGHT_BROADCAST_TYPES
from prime_rl_dynamo.text import plural

#: The configuration's weight_broadcast spellings that have a rank plan (``nccl`` is
#: ``prime-nccl``). ``filesystem`` has none: it is not offered, and refused with that reason.
CONVENTIONS = tuple(name for name, convention in WEIGHT_BROADCAST_TYPES.items() if convention)


def convention_name(value: str) -> str:
    """``--convention``'s type: a name of CONVENTIONS; a usage error that says why otherwise."""
    if value in CONVENTIONS:
        return value
    if value in WEIGHT_BROADCAST_TYPES:  # filesystem: a real weight_broadcast, no ranks
        raise argparse.ArgumentTypeError(
            f"{value!r} weight transfers have no rank plan (the trainer writes files, no rank "
            f"takes part); plan one of {', '.join(CONVENTIONS)}"
        )
    raise argparse.ArgumentTypeError(
        f"unknown convention {value!r}; expected one of {', '.join(CONVENTIONS)}"
    )


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments shared by ``plan`` and ``discover``."""
    parser.add_argument(
        "--inference-world-size",
        "-W",
        type=positive_int,
        required=True,
        metavar="W",
        help="the sum of engine world sizes the run expects (required: never derived)",
    )
    parser.add_argument("--model", help="only workers serving this model (others are ignored)")
    parser.add_argument(
        "--components", help="comma-separated component names to keep (default: all)"
    )
    parser.add_argument(
        "--convention",
        type=convention_name,
        metavar="{" + ",".join(CONVENTIONS) + "}",
        default="prime-nccl",
        help="rank numbering of the weight broadcast, spelled as weight_broadcast in the "
        "configuration (default: prime-nccl; nccl is the same)",
    )
    parser.add_argument(
        "--trainer-world-size",
        type=positive_int,
        default=1,
        metavar="N",
        help="trainer processes (vllm-native-nccl admits only 1)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def add_parser(subparsers: Any) -> None:
    """Register the ``plan`` subcommand."""
    parser = add_command(subparsers, "plan", __doc__, run)
    parser.set_defaults(refusal=refusal)
    parser.add_argument("file", metavar="FILE", help="the saved body; - reads stdin")
    add_common_arguments(parser)


def refusal(args: argparse.Namespace, exc: PrimeRLDynamoError) -> list[str]:
    """What ``plan`` says of a refusal other than a ``ConfigError``: the input's name, the error."""
    return [f"{input_name(args.file)}: {exc}"]


def components_of(args: argparse.Namespace) -> frozenset[str] | None:
    """The --components filter as a set (None: all components)."""
    if not args.components:
        return None
    return frozenset(c.strip() for c in args.components.split(",") if c.strip())


def render(plan: Any, *, as_json: bool, extra: dict[str, Any] | None = None) -> str:
    """The plan as a table (or JSON): engines in canonical order, offsets, rank ranges."""
    data = plan.to_dict()
    if extra:
        data = {**extra, **data}
    if as_json:
        return json.dumps(data, indent=2)
    # "ranks" are inference ranks (0-based in every convention); in a collective group the
    # trainer is rank 0, so an engine's group ranks are its inference ranks + 1. rank_offset is
    # what the engine is sent: the first inference rank, or the first group rank (vLLM native).
    trainer = data["trainer_rank"]
    rows = [
        ("engine", "admin_base_url", "world_size", "rank_offset", "inference ranks", "group ranks")
    ]
    for e in data["engines"]:
        start, stop = e["ranks"]
        rows.append(
            (
                e["label"],
                e["admin_base_url"] or "-",
                str(e["world_size"]),
                str(e["rank_offset"]),
                f"[{start}, {stop})",
                f"[{start + 1}, {stop + 1})" if trainer is not None else "- (no group)",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    tail = f"trainer group rank {trainer}" if trainer is not None else "no collective group"
    lines.append(
        f"{plural(len(data['engines']), 'engine')}, inference_world_size {data['inference_world_size']}, "
        f"group_world_size {data['group_world_size']} ({data['convention']}, {tail})"
    )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Read, validate, assess, plan; returns the exit code."""
    from prime_rl_dynamo.client import assess_snapshot
    from prime_rl_dynamo.plan import plan_broadcast
    from prime_rl_dynamo.validate import validate_body

    name = input_name(args.file)
    data = read_input(args.file, "plan")
    if data is None:
        return ExitCode.USAGE
    snapshot = validate_body(data)
    matching, reasons = assess_snapshot(
        snapshot,
        inference_world_size=args.inference_world_size,
        model=args.model,
        components=components_of(args),
    )
    if reasons:
        complain("plan", f"{name} is not ready:")
        for reason in reasons:
            print(f"  {reason}", file=sys.stderr)
        return ExitCode.FAIL
    plan = plan_broadcast(
        matching,
        args.inference_world_size,
        args.convention,
        trainer_world_size=args.trainer_world_size,
    )
    print(render(plan, as_json=args.json, extra={"file": name}))
    return ExitCode.OK
