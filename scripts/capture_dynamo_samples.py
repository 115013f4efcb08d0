"""Capture real Dynamo 1.6.1 listings for docs/samples/: ``python scripts/capture_dynamo_samples.py [DIR]``.

Each scenario is a fleet of the harness (real frontend, stub workers on the real runtime, every
socket on loopback); the file holds exactly the bytes the RL listener sent once the listing
showed the expected number of workers. Needs the dynamo extra (and nats-server for the nats one).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import httpx

from prime_rl_dynamo.suite.harness import DynamoFleet
from prime_rl_dynamo.topology import topology_from_dict

Q = "Qwen/Qwen3-0.6B"
OTHER = "other/Model-7B"


def _groups(*namespaces: str) -> list[dict[str, Any]]:
    return [{"component": f"w{i}", "namespace": ns} for i, ns in enumerate(namespaces)]


# name -> (topology, fleet arguments, how many workers the listing should show)
SCENARIOS: dict[str, tuple[dict[str, Any], dict[str, Any], int]] = {
    "transport-nats": (
        {"model": Q, "engines": [{"component": "prefill", "count": 2, "tp": 2}]},
        {"request_plane": "nats"},
        2,
    ),
    "scope-exact": (
        {"namespace": "rl-run-7", "model": None, "engines": _groups("rl-run-7", "rl-run-8")},
        {},
        1,
    ),
    "scope-prefix": (
        {
            "namespace": "rl-run-7",
            "model": None,
            "engines": _groups(
                "rl-run-7", "rl-run-7-prefill", "rl-run-7-decode", "rl-run-70", "other-rl-run-7"
            ),
        },
        {"namespace_prefix": "rl-run-7"},
        3,
    ),
    "scope-prefix-strict": (
        {
            "namespace": "rl-run-7",
            "model": None,
            "engines": _groups("rl-run-7", "rl-run-7-prefill", "rl-run-7-decode"),
        },
        {"namespace_prefix": "rl-run-7", "prefix_strict": True},
        1,
    ),
    "scope-worker-suffix": (
        {
            "namespace": "rl-run-7",
            "model": None,
            "engines": _groups("rl-run-7", "rl-run-7-prefill"),
        },
        {"worker_suffix": "prefill"},
        1,
    ),
    "scope-prefix-dynamo": (
        {"namespace": "dynamo", "model": None, "engines": _groups("dynamo", "prod")},
        {"namespace_prefix": "dynamo"},
        2,
    ),
    "model-one": (
        {"model": Q, "engines": [{"component": "prefill", "count": 2, "tp": 2}]},
        {},
        2,
    ),
    "model-two": (
        {
            "model": Q,
            "engines": [
                {"component": "prefill", "tp": 2},
                {"component": "judge", "model": OTHER},
            ],
        },
        {},
        2,
    ),
    "model-one-worker-two": (
        {"model": Q, "engines": [{"component": "prefill", "tp": 2}, {"component": "multi"}]},
        {"extra_models": {"dynamo.multi#0": [OTHER]}},
        2,
    ),
    "model-same-twice": (
        {"model": Q, "engines": [{"component": "prefill", "tp": 2}]},
        {"extra_models": {"dynamo.prefill#0": [Q]}},
        1,
    ),
}


def capture(name: str, out: Path) -> Path:
    """Start the scenario's fleet, wait for its listing, write the raw bytes; returns the file."""
    data, kwargs, expected = SCENARIOS[name]
    topology = topology_from_dict({"version": 1, **data}, source=name)
    fleet = DynamoFleet(topology, engines_per_process=8, **kwargs)
    with fleet:
        fleet.start()
        deadline = time.monotonic() + 30.0
        while True:
            raw = httpx.get(fleet.discovery_url, timeout=10.0).content
            body = httpx.Response(200, content=raw).json()
            workers = body["workers"]
            settled = len(workers) == expected and all("error" not in w for w in workers)
            if settled or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if not settled:
            raise SystemExit(f"{name}: expected {expected} workers, the listing shows {raw!r:.400}")
        time.sleep(1.0)  # model cards are watched: give a late one the chance to show
        raw = httpx.get(fleet.discovery_url, timeout=10.0).content
    path = out / f"dynamo-1.6.1-{name}.json"
    path.write_bytes(raw)
    return path


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else Path("docs/samples")
    out.mkdir(parents=True, exist_ok=True)
    names = argv[1:] or list(SCENARIOS)
    for name in names:
        path = capture(name, out)
        print(f"{path}: {len(path.read_bytes())} bytes", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
