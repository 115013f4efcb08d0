"""The real SMG gateway (PyPI ``smg`` 1.13.0) in front of stub SGLang workers, on loopback.

SMG serves the other dialect of ``GET /v1/rl/workers`` (SPEC §7). Against the real gateway:
``validate`` and the suite refuse it as a whole (DIALECT-1 first, then its variant under
VERSION-1, no field-level violation, every body check skipped); ``discover`` refuses it after one
GET, counted by the gateway itself; the dialect is ``smg`` for the empty, data-parallel and
dead-worker listings; an RL-off 404 and a 401 come with SMG's own fix. Verdicts are read from
exit statuses, requirement IDs, check IDs and the gateway's request counters; a hint's presence
is checked where the hint is the point.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from rich.console import Console

import conformance
from conformance.reporting import print_summary
from conformance.results import Status, Verdict
from prime_rl_dynamo import DiscoveryClient, ReadinessPolicy
from prime_rl_dynamo.cli import main
from prime_rl_dynamo.errors import DialectError
from prime_rl_dynamo.resources import load_json
from prime_rl_dynamo.validate import check_body, detect_dialect
from tests._smg_support import Gateway, Sizes, sglang_workers, smg_gateway

pytestmark = [pytest.mark.integration, pytest.mark.smg]

SMALL = {"load_clients": 2, "load_requests": 2, "polls": 1, "seed": 1}
TOKEN = "smg-test-key-0451"


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """SMG in front of two SGLang workers (tp 2 and tp 1), RL routes on, health checks off."""
    directory = tmp_path_factory.mktemp("smg")
    with sglang_workers((2, 1, 1), (1, 1, 1)) as workers, smg_gateway(workers, directory) as g:
        yield g


def _listing(gateway: Gateway, **headers: str) -> Any:
    reply = httpx.get(gateway.url + "/v1/rl/workers", headers=headers, timeout=10)
    assert reply.status_code == 200, reply.text
    return reply.json()


# --- the verdicts ----------------------------------------------------------------------------


def test_validate_refuses_the_dialect_as_a_whole(
    gateway: Gateway, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli(capsys, "validate", gateway.url, "--json")
    report = json.loads(out)
    assert code == 1 and report["valid"] is False
    assert report["requirements"] == ["DIALECT-1", "VERSION-1"]
    assert [(v["requirement"], v["pointer"]) for v in report["violations"]] == [
        ("DIALECT-1", ""),
        ("VERSION-1", ""),
    ]
    version = report["violations"][1]["message"]
    assert "another protocol" in version and "breaking change that needs" not in version


def test_conformance_fails_only_the_dialect_and_judges_no_body(gateway: Gateway) -> None:
    report = conformance.run(url=gateway.url, **SMALL)
    assert report.verdict is Verdict.NOT_CONFORMANT
    assert [r.check for r in report.by_status(Status.FAIL)] == [
        "DIALECT-1::dialect",
        "VERSION-1::smg",
    ]
    assert report.by_status(Status.ERROR, Status.WARN) == []
    body = [r for r in report.results if r.check.endswith("::body")]
    assert body and {r.status for r in body} == {Status.SKIP}
    # HTTP-4 says nothing about another service's own /v1/rl/* routes (SPEC HTTP-4, §7).
    (http4,) = [r for r in report.results if r.requirement == "HTTP-4"]
    assert http4.status is Status.SKIP


def test_the_summary_shows_both_checks_of_a_requirement_when_they_differ(
    gateway: Gateway,
) -> None:
    report = conformance.run(url=gateway.url, profiles=["frontend"], **SMALL)
    http1 = {r.check: r.status for r in report.results if r.requirement == "HTTP-1"}
    assert http1 == {
        "HTTP-1::status-and-content-type": Status.PASS,
        "HTTP-1::schemathesis": Status.SKIP,
    }
    console = Console(width=200, record=True, color_system=None)
    print_summary(report, console, verbose=True)
    (row,) = [line for line in console.export_text().splitlines() if "│ HTTP-1 " in line]
    assert "PASS+SKIP" in row


def test_discover_refuses_after_exactly_one_get(
    gateway: Gateway, capsys: pytest.CaptureFixture[str]
) -> None:
    before = gateway.requests()
    code, out, err = cli(capsys, "discover", gateway.url, "-W", "3", "--timeout", "10", "-q")
    after = gateway.requests()
    made = {key: n - before.get(key, 0) for key, n in after.items() if n != before.get(key, 0)}
    assert code == 1 and out == ""
    assert made == {("GET", "/v1/rl/workers"): 1}
    assert "breaks DIALECT-1, VERSION-1: DIALECT-1 at /" in err


def test_the_client_names_dialect_1(gateway: Gateway) -> None:
    async def go() -> None:
        async with DiscoveryClient(gateway.url, ReadinessPolicy(3)) as client:
            await client.wait_ready(timeout=10)

    with pytest.raises(DialectError) as info:
        asyncio.run(go())
    assert info.value.requirement == "DIALECT-1"
    assert info.value.requirements == ["DIALECT-1", "VERSION-1"]


@pytest.mark.parametrize(
    "sizes",
    [(), ((1, 2, 1), (2, 2, 1)), ((1, 1, 1), (1, 1, 1))],
    ids=["empty", "data-parallel", "dead-worker"],
)
def test_the_dialect_is_smg_for_every_listing(
    sizes: tuple[Sizes, ...], request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    with sglang_workers(*sizes) as workers, smg_gateway(workers, tmp_path) as g:
        if request.node.callspec.id == "dead-worker":
            workers[0].stop.close()  # the gateway keeps listing it (health checks off)
            with pytest.raises(httpx.TransportError):
                httpx.get(workers[0].url + "/health", timeout=2)
        listing = _listing(g)
    assert detect_dialect(listing) == "smg" and listing["total"] == len(sizes)
    assert [v.requirement for v in check_body(json.dumps(listing).encode())] == [
        "DIALECT-1",
        "VERSION-1",
    ]
    workers_seen = listing["workers"]
    if request.node.callspec.id == "data-parallel":
        assert [w["dp_size"] for w in workers_seen] == [2, 2]
    if request.node.callspec.id == "dead-worker":  # SPEC §7: no health of its own to read
        assert [w["health"] for w in workers_seen] == ["ready", "ready"]
    assert all("world_size" not in w for w in workers_seen)


def test_sizes_a_worker_does_not_report_are_null_and_no_world_size_is_listed(
    tmp_path: Path,
) -> None:
    # SPEC §7.1: nothing in SMG's listing gives the ranks an engine brings to a transfer group.
    with sglang_workers((None, None, None)) as workers, smg_gateway(workers, tmp_path) as g:
        (worker,) = _listing(g)["workers"]
    assert [worker[k] for k in ("tp_size", "dp_size", "pp_size")] == [None, None, None]
    assert "world_size" not in worker and worker["dp_ranks"] == 1


def test_the_empty_listing_s_dialect_1_names_no_worker_fields(tmp_path: Path) -> None:
    with smg_gateway([], tmp_path) as g:
        listing = _listing(g)
    assert listing == {"protocol_version": 1, "workers": [], "total": 0}
    first = check_body(json.dumps(listing).encode())[0]
    assert first.requirement == "DIALECT-1"
    for field in ("control_url", "capabilities", "engine", "health"):
        assert field not in first.message


# --- what the operator is told ---------------------------------------------------------------


def test_rl_off_404_gets_smg_s_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with sglang_workers((1, 1, 1)) as workers, smg_gateway(workers, tmp_path, enable_rl=False) as g:
        reply = httpx.get(g.url + "/v1/rl/workers", timeout=10)
        assert reply.status_code == 404 and "x-smg-error-code" in reply.headers
        discover = cli(capsys, "discover", g.url, "-W", "1", "--timeout", "5", "-q")
        validate = cli(capsys, "validate", g.url)
        report = conformance.run(url=g.url, **SMALL)
    assert discover[0] == 1 and "--enable-rl" in discover[2]
    assert validate[0] == 2 and "--enable-rl" in validate[2]
    assert report.verdict is Verdict.INCONCLUSIVE and "--enable-rl" in report.inconclusive
    assert "DYN_RL_PORT" in discover[2]  # the hint says what SMG is, not only how to switch it on


def test_401_gets_the_header_hint_and_the_header_gets_through(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with (
        sglang_workers((1, 1, 1)) as workers,
        smg_gateway(workers, tmp_path, api_key=TOKEN) as g,
    ):
        reply = httpx.get(g.url + "/v1/rl/workers", timeout=10)
        assert reply.status_code == 401 and reply.headers["www-authenticate"].startswith("Bearer")
        discover = cli(capsys, "discover", g.url, "-W", "1", "--timeout", "5", "-q")
        refused = cli(capsys, "validate", g.url)
        report = conformance.run(url=g.url, profiles=["frontend"], **SMALL)
        header = f"Authorization: Bearer {TOKEN}"
        through = cli(capsys, "validate", g.url, "-H", header, "--json")
    hint = "-H 'Authorization: Bearer ...'"
    assert discover[0] == 1 and hint in discover[2]
    assert refused[0] == 2 and hint in refused[2]
    failed = {r.check: r.message for r in report.by_status(Status.FAIL)}
    assert set(failed) == {"HTTP-1::status-and-content-type", "HTTP-4::unknown-paths"}
    assert all(hint in message for message in failed.values())
    assert through[0] == 1 and json.loads(through[1])["requirements"] == ["DIALECT-1", "VERSION-1"]
    assert TOKEN not in discover[2] + refused[2] + "".join(failed.values()) + through[2]


# --- the captured bodies ---------------------------------------------------------------------


def _shape(body: Any) -> Any:
    return sorted(body), [sorted(w) for w in body["workers"]]


def test_the_committed_smg_vectors_have_today_s_shape(gateway: Gateway) -> None:
    captured = [
        c
        for c in load_json("vectors/variants.v1.json")["cases"]
        if c.get("source", "").startswith("captured from smg 1.13.0")
    ]
    assert len(captured) >= 2
    listing = _listing(gateway)
    for case in captured:
        if case["body"]["workers"]:
            assert _shape(case["body"]) == _shape(listing), case["description"]
        assert case["requirements"] == ["DIALECT-1", "VERSION-1"] and case["variant"] == "smg"
