"""A rank bug kept as a client the suite must fail: offsets split evenly.

``offset_i = i * (W // n)`` ignores each engine's own world size, so on heterogeneous fleets ranks
collide and others are owned by nobody (world sizes [2, 4, 1] give [0, 2, 4], not [0, 2, 6]). It is
the spec client (spec_client.py) with this one bug, so the suite's failures name the rank
requirements alone (RANK-3/4/5 and RANK-6); it follows the calling contract of
conformance/client_runs.py.
"""

from __future__ import annotations

from conformance.examples._contract import command_main
from conformance.examples.spec_client import zoo_client

run = zoo_client("even-split")


def main() -> int:
    """``python -m conformance.examples.even_split_client`` for --client-cmd (CONFORMANCE_* env)."""
    return command_main(run)


if __name__ == "__main__":
    raise SystemExit(main())
