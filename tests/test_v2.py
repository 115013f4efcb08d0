"""Protocol 2 (draft, schema/SPEC-v2.md): its schema, catalog, OpenAPI document and vectors checked
like v1's; the reference serves it (ETag, 304, ?wait= fed by the churn/fleet state) and passes
frontend-v2, which fails each break-v2 fault; the client negotiates it and falls back to v1."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator

import conformance
from conformance.results import Status
from prime_rl_dynamo.admin import AdminPool
from prime_rl_dynamo.client import DiscoveryClient, PollingPolicy, ReadinessPolicy
from prime_rl_dynamo.errors import NotReadyError, ProtocolError, TopologyChangedError
from prime_rl_dynamo.requirements import all_requirements, v2_requirements
from prime_rl_dynamo.resources import load_json, schema_dir
from prime_rl_dynamo.suite.reference import start_reference_fleet
from prime_rl_dynamo.suite.reference.v2 import V2_BREAKS
from prime_rl_dynamo.v2 import PROTOCOL_HEADER, accepted_versions, check_body_v2

ASK = {PROTOCOL_HEADER: "2, 1"}
CATALOG = {**all_requirements(), **v2_requirements()}


# --- the contract files -----------------------------------------------------------------------


def _subschemas(node: Any) -> list[dict[str, Any]]:
    out = []
    if isinstance(node, dict):
        out.append(node)
        for key in ("properties", "$defs"):
            for child in node.get(key, {}).values():
                out.extend(_subschemas(child))
        for key in ("items", "additionalProperties", "not", "if", "then", "else"):
            out.extend(_subschemas(node.get(key)))
        for key in ("allOf", "anyOf", "oneOf"):
            for child in node.get(key, []):
                out.extend(_subschemas(child))
    return out


def test_v2_schema_is_valid_and_names_catalog_requirements() -> None:
    schema = load_json("rl-workers.v2.schema.json")
    Draft202012Validator.check_schema(schema)
    assert schema["$id"].endswith("rl-workers.v2.schema.json")
    for sub in _subschemas(schema):
        assert sub.get("x-requirement") in CATALOG, sub
        ref = sub.get("$ref")
        assert ref is None or ref.startswith("#/"), ref


def test_v2_catalog_matches_the_catalog_schema_and_spec() -> None:
    validator = Draft202012Validator(load_json("requirements.schema.json"))
    doc = load_json("requirements.v2.json")
    assert list(validator.iter_errors(doc)) == []
    assert doc["protocol_version"] == 2
    assert all(r["since"] == "2" and r["id"].startswith("V2-") for r in doc["requirements"])
    spec = (schema_dir() / "SPEC-v2.md").read_text("utf-8")
    for req in v2_requirements().values():
        row = f"| {req.id} | {req.level} | {req.party} | {req.enforced_by} | {req.title} |"
        assert row in spec, f"SPEC-v2.md index lacks {row}"
        assert f"**{req.id}** ({req.level}, {req.party}, {req.enforced_by})." in spec


def test_v2_openapi_document_is_valid_and_embeds_the_schema() -> None:
    from openapi_spec_validator import validate

    doc = load_json("openapi/rl-frontend.v2.openapi.json")
    validate(doc)
    op = doc["paths"]["/v1/rl/workers"]["get"]
    assert {p["name"] for p in op["parameters"]} == {"wait", "Dynamo-RL-Protocol", "If-None-Match"}
    assert {"200", "304", "500"} <= set(op["responses"])
    components = doc["components"]["schemas"]
    assert components["RlWorkersV2"]["x-schema-file"] == "rl-workers.v2.schema.json"


def test_v2_vectors_hold() -> None:
    vectors = load_json("vectors/discovery.v2.json")
    assert (
        list(Draft202012Validator(load_json("vectors/vectors.schema.json")).iter_errors(vectors))
        == []
    )
    plain = Draft202012Validator(load_json("rl-workers.v2.schema.json"))
    seen: set[str] = set()
    for case in vectors["cases"]:
        found = {v.requirement for v in check_body_v2(case["body"])}
        assert found == set(case["requirements"]), case["description"]
        schema_ids = {e.schema["x-requirement"] for e in plain.iter_errors(case["body"])}
        assert schema_ids <= found, case["description"]
        seen |= found
    assert {"V2-2", "V2-3", "V2-6", "V2-7"} <= seen


def test_negotiation_header_parsing() -> None:
    assert accepted_versions("2, 1") == {1, 2}
    assert accepted_versions(None) == set() and accepted_versions("x, 3") == {3}


# --- the reference serves v2 ------------------------------------------------------------------


@pytest.mark.integration
def test_reference_v2_etag_304_and_unchanged_v1() -> None:
    with start_reference_fleet() as fleet:
        v1 = httpx.get(fleet.discovery_url)
        v2 = httpx.get(fleet.discovery_url, headers=ASK)
        assert "etag" not in v1.headers and v1.json()["protocol_version"] == 1
        assert v2.headers[PROTOCOL_HEADER] == "2" and check_body_v2(v2.content) == []
        etag = v2.headers["etag"]
        assert etag == f'"{v2.json()["fingerprint"]}"'
        same = httpx.get(fleet.discovery_url, headers={**ASK, "If-None-Match": etag})
        assert (same.status_code, same.content) == (304, b"")
        fleet.resize(fleet.engines[0].key, fleet.engines[0].world_size * 2)
        changed = httpx.get(fleet.discovery_url, headers={**ASK, "If-None-Match": etag})
        assert changed.status_code == 200 and changed.headers["etag"] != etag


@pytest.mark.integration
def test_change_feed_answers_on_a_kill_before_the_wait_ends() -> None:
    with start_reference_fleet() as fleet:
        etag = httpx.get(fleet.discovery_url, headers=ASK).headers["etag"]
        key = fleet.engines[0].key
        timer = threading.Timer(0.2, lambda: fleet.kill(key))
        timer.start()
        started = time.monotonic()
        held = httpx.get(
            fleet.discovery_url + "?wait=20", headers={**ASK, "If-None-Match": etag}, timeout=30
        )
        elapsed = time.monotonic() - started
        timer.join()
        assert held.status_code == 200 and held.headers["etag"] != etag
        assert elapsed < 20  # answered by the change, not by the end of the wait
        errors = [w for w in held.json()["workers"] if "error" in w]
        assert errors and all(w["health"] == "unhealthy" for w in errors)


@pytest.mark.integration
def test_change_feed_follows_the_churn_fault() -> None:
    with start_reference_fleet(faults=["churn=0.5"]) as fleet:
        first = httpx.get(fleet.discovery_url, headers=ASK)
        held = httpx.get(
            fleet.discovery_url + "?wait=5",
            headers={**ASK, "If-None-Match": first.headers["etag"]},
            timeout=10,
        )
        assert held.status_code == 200 and held.json()["workers"] != first.json()["workers"]


# --- the frontend-v2 profile ------------------------------------------------------------------


@pytest.mark.integration
def test_reference_passes_frontend_v2() -> None:
    with start_reference_fleet() as fleet:
        report = conformance.run(url=fleet.frontend_url, profiles=["frontend-v2"])
    statuses = {r.check: r.status for r in report.results}
    assert set(statuses) >= {f"{req}::body" for req in ("V2-2", "V2-6", "V2-7")}
    assert all(s is Status.PASS for s in statuses.values()), report.results


@pytest.mark.integration
def test_v2_body_text_is_read_as_v1_reads_it_nan_and_repeated_members_are_refused() -> None:
    # json.loads takes NaN and keeps the last of two same-named members: V2-2 must not (issue 22
    # item 20). The bytes come from the reference, so the listing is otherwise valid.
    with start_reference_fleet() as fleet:
        body = httpx.get(fleet.frontend_url + "/v1/rl/workers", headers={PROTOCOL_HEADER: "2"})
    assert check_body_v2(body.content) == []
    nan = body.content.replace(b'{"protocol_version":2,', b'{"protocol_version":2,"x_load":NaN,')
    repeated = body.content.replace(
        b'{"protocol_version":2,', b'{"protocol_version":2,"namespace":"other",'
    )
    (refused,) = check_body_v2(nan)
    assert refused.requirement == "BODY-1" and "NaN" in refused.message
    assert [(v.requirement, v.pointer) for v in check_body_v2(repeated)] == [("BODY-6", "")]


@pytest.mark.integration
def test_a_v1_listener_is_skipped_by_frontend_v2_saying_why() -> None:
    with start_reference_fleet(faults=["v1-only"]) as fleet:
        report = conformance.run(url=fleet.frontend_url, profiles=["frontend-v2"])
    assert report.results and all(r.status is Status.SKIP for r in report.results)
    assert "does not claim protocol 2" in report.results[0].message


@pytest.mark.integration
@pytest.mark.parametrize("requirement", sorted(V2_BREAKS))
def test_each_break_v2_fault_fails_exactly_its_requirement(requirement: str) -> None:
    with start_reference_fleet(faults=[f"break-v2={requirement}"]) as fleet:
        report = conformance.run(url=fleet.frontend_url, profiles=["frontend-v2"])
    failed = {r.requirement for r in report.results if r.status is Status.FAIL}
    assert failed == {requirement}, [(r.check, r.message[:200]) for r in report.results]


# --- the client -------------------------------------------------------------------------------


def _client(fleet: Any, **kw: Any) -> DiscoveryClient:
    return DiscoveryClient(
        fleet.frontend_url,
        ReadinessPolicy(fleet.inference_world_size),
        PollingPolicy(poll_interval=0.3, timeout=20),
        **kw,
    )


@pytest.mark.integration
def test_client_uses_v2_conditional_gets_and_the_change_feed() -> None:
    with start_reference_fleet() as fleet:

        async def go() -> tuple[int | None, TopologyChangedError]:
            async with _client(fleet) as client:
                ready = await client.wait_ready()
                async with AdminPool.from_plan(ready.plan("prime-nccl"), discovery=client) as pool:
                    await pool.verify_topology(wait=0.2)  # unchanged: a held GET, then 304
                    key = fleet.engines[-1].key
                    threading.Timer(0.2, lambda: fleet.kill(key)).start()
                    with pytest.raises(TopologyChangedError) as info:
                        await pool.verify_topology(wait=20)
                return client.protocol_version, info.value

        version, changed = asyncio.run(go())
        assert version == 2 and changed.diff.removed
        gets = fleet.recorder.requests(server="frontend")
        assert all(r.headers.get("dynamo-rl-protocol") == "2, 1" for r in gets)
        # READY-4's second poll and the unchanged verify were conditional and answered 304.
        assert [r.status for r in gets].count(304) >= 2
        assert any("wait=" in r.query and "if-none-match" in r.headers for r in gets)


@pytest.mark.integration
def test_client_falls_back_to_v1_and_says_so_once(caplog: pytest.LogCaptureFixture) -> None:
    with start_reference_fleet(faults=["v1-only"]) as fleet:

        async def go() -> int | None:
            async with _client(fleet) as client:
                await client.wait_ready()
                await client.snapshot()
                await client.snapshot(wait=5)  # ignored on v1: answers at once
                return client.protocol_version

        with caplog.at_level(logging.INFO, logger="prime_rl_dynamo.client"):
            assert asyncio.run(go()) == 1
        said = [r for r in caplog.records if "falling back to protocol 1" in r.getMessage()]
        assert len(said) == 1
        gets = fleet.recorder.requests(server="frontend")
        assert all("wait=" not in r.query and "if-none-match" not in r.headers for r in gets)


@pytest.mark.integration
def test_a_held_get_ends_before_the_deadline_so_the_wait_reports_the_listing() -> None:
    # Under v2 the GETs between polls are held up to poll_interval; none may run into the
    # deadline, where it would be cut and reported as a failed poll of a healthy listener.
    with start_reference_fleet() as fleet:

        async def go() -> NotReadyError:
            async with DiscoveryClient(
                fleet.frontend_url,
                ReadinessPolicy(12),
                PollingPolicy(timeout=2.5, poll_interval=0.5),
            ) as client:
                with pytest.raises(NotReadyError) as info:
                    await client.wait_ready()
                assert client.protocol_version == 2
                return info.value

        gave_up = asyncio.run(go())
    assert gave_up.failure is None, gave_up.failure
    assert [r.requirement for r in gave_up.reasons] == ["READY-3"]
    assert "last poll failed" not in str(gave_up)
    held = [r for r in fleet.recorder.requests(server="frontend") if "wait=" in r.query]
    assert held  # the GETs were held (v2), not slept between


@pytest.mark.integration
def test_client_refuses_a_broken_v2_listing() -> None:
    with start_reference_fleet(faults=["break-v2=V2-6"]) as fleet:

        async def go() -> None:
            async with _client(fleet) as client:
                await client.wait_ready()

        with pytest.raises(ProtocolError) as info:
            asyncio.run(go())
    assert info.value.requirements == ["V2-6"]


@pytest.mark.integration
def test_protocol_v1_option_never_asks_for_v2() -> None:
    with start_reference_fleet() as fleet:

        async def go() -> int | None:
            async with _client(fleet, protocol="v1") as client:
                await client.wait_ready()
                return client.protocol_version

        assert asyncio.run(go()) == 1
        gets = fleet.recorder.requests(server="frontend")
        assert gets and all("dynamo-rl-protocol" not in r.headers for r in gets)


def test_v2_openapi_document_is_generated_from_the_schemas() -> None:
    from tools.openapi import main

    assert main(["--check"]) == 0, "run `python -m tools.openapi`"


def test_spec_diff_says_v1_to_v2_is_a_new_version() -> None:
    from prime_rl_dynamo.suite.specdiff import DiffReport, diff_documents, protocol_version_of

    old, new = load_json("rl-workers.v1.schema.json"), load_json("rl-workers.v2.schema.json")
    changes = diff_documents("rl-workers", old, new)
    report = DiffReport(protocol_version_of(old), protocol_version_of(new), changes)
    assert (report.old_version, report.new_version) == (1, 2)
    assert report.version_must_change and report.ok
    kinds = {(c.kind, c.location) for c in changes}
    assert ("required member added", "/fingerprint") in kinds
    assert ("optional member added", "/workers/*/weight_version") in kinds


def test_spec_v2_names_only_catalog_ids() -> None:
    import re

    spec = (schema_dir() / "SPEC-v2.md").read_text("utf-8")
    tokens = set(re.findall(r"\b[A-Z][A-Z0-9]*-\d+\b", spec)) - {"SHA-256"}
    assert tokens - set(CATALOG) == set()
    assert set(v2_requirements()) <= tokens


def test_v2_references_name_the_requirement_of_their_target() -> None:
    schema = load_json("rl-workers.v2.schema.json")
    for sub in _subschemas(schema):
        if "$ref" in sub:
            target = schema
            for part in sub["$ref"][2:].split("/"):
                target = target[part]
            assert sub["x-requirement"] == target["x-requirement"], sub["$ref"]
