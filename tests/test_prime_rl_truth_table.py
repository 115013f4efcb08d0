"""The truth table of Prime-RL main's admin planes: the verdicts their call order and call forms
(conformance/examples/prime_rl_main.py, written from main's code) earn from the client profile.

* ``AdminPlane`` with a static list: the even split fails RANK-3 and RANK-6, no sum check fails
  RANK-2, swallowed init errors fail ADMIN-3, admin clients that follow the proxy environment fail
  POLL-4 with the proxy's requests as evidence; its credentials are right (no false alarm on
  CRED-2), and so are BODY-5 and READY-5.
* ``DynamoAdminPlane`` refuses every fleet but one engine of world size 1: one root-cause failure
  (RANK-2, a valid heterogeneous fleet must be accepted), every other check not judged.

With ``PRIME_RL_CHECKOUT`` naming a Prime-RL checkout (its dependencies installed), the same
expectations run on its own ``AdminPlane`` and ``DynamoAdminPlane``; skipped otherwise.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

import conformance
from conformance.results import Status

pytestmark = pytest.mark.integration

#: Reference fleets, at the fast pace the models follow (CONFORMANCE_POLL_INTERVAL); main's planes
#: speak Prime's NCCL broadcaster only.
RUN: dict[str, Any] = dict(
    profiles=["client"], topologies=1, seed=2, client_timeout=20.0, target="reference",
    client_poll_interval=0.1, client_conventions=("prime-nccl",),
)  # fmt: skip
MAIN = "conformance.examples.prime_rl_main"


def _by_requirement(report: conformance.Report) -> dict[str, set[Status]]:
    out: dict[str, set[Status]] = {}
    for r in report.results:
        out.setdefault(r.requirement, set()).add(r.status)
    return out


def _plane(name: str, real: bool, monkeypatch: pytest.MonkeyPatch) -> str:
    if real:
        from conformance.examples.prime_rl_main import (
            CHECKOUT_ENV,
            CHECKOUT_PATHS,
            real_code_unavailable,
        )

        root = os.environ.get(CHECKOUT_ENV)
        for sub in CHECKOUT_PATHS if root else ():
            monkeypatch.syspath_prepend(os.path.join(root or "", sub))
        why = real_code_unavailable()
        if why is not None:
            pytest.skip(why)
        return f"{MAIN}:real_{name}"
    return f"{MAIN}:{name}"


CODE = pytest.mark.parametrize("real", [False, True], ids=["model", "real code"])


@CODE
def test_mains_static_admin_plane(real: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    report = conformance.run(client=_plane("static_admin_plane", real, monkeypatch), **RUN)
    failed = set(report.failed_requirements())
    assert {"RANK-3", "RANK-6", "RANK-2", "ADMIN-3", "POLL-4"} <= failed, failed
    assert not {"CRED-2", "BODY-5", "READY-5"} & failed, failed
    rank3 = next(r for r in report.results if r.check == "RANK-3::prime-nccl-offsets")
    assert "wrong-offset" in rank3.details["reasons"]
    admin3 = next(r for r in report.results if r.check == "ADMIN-3::failed-admin-call")
    assert admin3.status is Status.FAIL
    poll4 = next(r for r in report.results if r.check == "POLL-4::same-origin-only")
    assert "proxy" in poll4.message  # the evidence: what reached the proxy's origin


@CODE
def test_mains_dynamo_admin_plane_fails_one_root_cause_and_judges_nothing_else(
    real: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = conformance.run(client=_plane("dynamo_admin_plane", real, monkeypatch), **RUN)
    failed = [r for r in report.results if r.status is Status.FAIL]
    assert [r.check for r in failed] == ["RANK-2::refuse-wrong-sum"]
    assert "refused-valid-fleet" in failed[0].details["reasons"]
    rest = [r for r in report.results if r.status is not Status.FAIL]
    assert rest and all(r.status is Status.SKIP and "not judged" in r.message for r in rest)


# --- the older generations' own pools (conformance/examples/prime_rl_generations.py) -------------

GENERATIONS_MODULE = "conformance.examples.prime_rl_generations"
#: generation -> (check -> (status, a reason its result must name, or None)), written from its code.
OLDER: dict[str, dict[str, tuple[Status, str | None]]] = {
    # The even split: offsets [0, 2, 4] on [2, 4, 1]; control clients with no headers at all;
    # every error status of the init ignored.
    "828ddc7da": {
        "RANK-3::prime-nccl-offsets": (Status.FAIL, "wrong-offset"),
        "RANK-6::ranks-cover-once": (Status.FAIL, "rank-collides"),
        "CRED-2::credentials-sent": (Status.FAIL, "credential-missing"),
        "ADMIN-3::failed-admin-call": (Status.FAIL, "updated-after-failure"),
    },
    # Prefix sums with engine_world_size through collective_rpc keywords, Bearer unless EMPTY; an
    # error in a 200 body is not read.
    "e9d3f8791": {
        "RANK-3::prime-nccl-offsets": (Status.PASS, None),
        "RANK-6::ranks-cover-once": (Status.PASS, None),
        "CRED-2::credentials-sent": (Status.PASS, None),
        "ADMIN-3::failed-admin-call": (Status.FAIL, "updated-after-failure"),
    },
    # Bearer EMPTY goes to the listing only (client_headers tests the key for truthiness); its
    # admin clients send no key for EMPTY: judged on that, it completes and CRED-2 passes. No
    # allow-list: credentials reach every advertised host.
    "73164c322": {
        "RANK-5::nixl-offsets": (Status.PASS, None),
        "RANK-6::ranks-cover-once": (Status.PASS, None),
        "CRED-2::credentials-sent": (Status.PASS, None),
        "CRED-3::credentials-allow-list": (Status.FAIL, "credential-leaked"),
    },
}


@pytest.mark.parametrize("generation", sorted(OLDER))
def test_older_generations_earn_what_their_code_does(generation: str) -> None:
    from conformance.examples.prime_rl_generations import GENERATIONS

    run = {**RUN, "client_conventions": (GENERATIONS[generation].convention,)}
    report = conformance.run(client=f"{GENERATIONS_MODULE}:g{generation}", **run)
    by_check = {r.check: r for r in report.results}
    for check, (status, reason) in OLDER[generation].items():
        result = by_check[check]
        assert result.status is status, (check, result.status, result.message)
        if reason is not None:
            assert reason in result.details["reasons"], (check, result.details)
