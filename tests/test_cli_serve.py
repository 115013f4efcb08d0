"""``serve``'s account of the fleet it started: where it listens, and a fleet that can never
become ready named as such."""

from __future__ import annotations

from pathlib import Path

import pytest

from prime_rl_dynamo.cli.serve import _lines


@pytest.mark.integration
def test_serve_says_a_fleet_with_an_erroring_group_is_never_ready(tmp_path: Path) -> None:
    from prime_rl_dynamo.suite.reference import start_reference_fleet

    topology = tmp_path / "t.yaml"
    topology.write_text(
        "namespace: dynamo\nengines:\n  - component: good\n    world_size: 4\n"
        "  - component: bad\n    world_size: 2\n    faults:\n      reply_error: dead\n"
    )
    with start_reference_fleet(str(topology)) as fleet:
        lines = _lines(fleet.describe())
        listing = fleet.listing()
    w_line = next(line for line in lines if line.startswith("W "))
    assert w_line.startswith("W             4  (never ready: dynamo.bad#0 listed with an error")
    assert "READY-1" in w_line
    assert [w.get("error") for w in listing["workers"] if w["component"] == "bad"] == ["dead"]
