"""The roundtrip profile observes the request plane it claims to run on: a listing whose
transports are not the plane's kind makes the run inconclusive instead of a pass, and the pass
message names the kind seen."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.roundtrip import plane_problem, transport_kinds


def _body(*transports: dict[str, str]) -> dict[str, Any]:
    return {"workers": [{"transport": t} for t in transports] + [{"error": "x"}]}


def test_the_planes_transport_kind_is_what_the_listing_must_show() -> None:
    nats = _body({"nats_tcp": "dynamo_prefill.rl-1"}, {"nats_tcp": "dynamo_decode.rl-2"})
    tcp = _body({"tcp": "127.0.0.1:1/x"})
    assert transport_kinds(nats) == ["nats_tcp"]
    assert plane_problem(nats, "nats") is None and plane_problem(tcp, "tcp") is None
    problem = plane_problem(tcp, "nats")
    assert problem is not None
    assert "asked for the nats request plane" in problem and "transport tcp" in problem
    mixed = _body({"tcp": "a"}, {"nats_tcp": "b"})
    assert plane_problem(mixed, "tcp") is not None
    assert plane_problem({"workers": []}, "nats") is None  # nothing listed: nothing to judge


@pytest.mark.integration
@pytest.mark.dynamo
@pytest.mark.nats
def test_a_nats_roundtrip_says_it_saw_nats_transports() -> None:
    import shutil

    import conformance
    from conformance.results import Status
    from conformance.runner import dynamo_available

    if not dynamo_available() or shutil.which("nats-server") is None:
        pytest.skip("needs the dynamo extra and nats-server")
    report = conformance.run(profiles=["roundtrip"], request_plane="nats", topologies=1, seed=1)
    membership = next(r for r in report.results if r.requirement == "LIST-7")
    assert membership.status is Status.PASS, membership.message
    assert "registered (transport nats_tcp)" in membership.message
