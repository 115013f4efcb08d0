"""The reproduce line of a run against real Dynamo fleets keeps the options that chose those
fleets (--request-plane, --namespace-scope, --discovery, --topologies), so rerunning it runs the
same fleets; defaults are left out."""

from __future__ import annotations

import shlex
from dataclasses import asdict

from conformance.reporting import reproduce_command
from conformance.results import Report
from conformance.runner import Options


def _line(**options: object) -> str:
    opts = {k: v for k, v in asdict(Options(**options)).items() if k != "seed"}  # type: ignore[arg-type]
    return reproduce_command(Report(target={}, options=opts, seed=1, versions={}))


def test_fleet_options_are_kept_when_not_the_default() -> None:
    line = _line(
        profiles=("roundtrip",),
        request_plane="nats",
        namespace_scope="prefix",
        discovery="etcd",
        topologies=1,
    )
    argv = shlex.split(line)
    for flag, value in (
        ("--request-plane", "nats"),
        ("--namespace-scope", "prefix"),
        ("--discovery", "etcd"),
        ("--topologies", "1"),
    ):
        assert argv[argv.index(flag) + 1] == value, line


def test_defaults_are_left_out() -> None:
    line = _line(profiles=("roundtrip",))
    for flag in ("--request-plane", "--namespace-scope", "--discovery", "--topologies"):
        assert flag not in line, line
