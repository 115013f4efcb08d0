"""Known v1 variants: each named (VERSION-1, with its one-line diagnosis) before its field
failures, by the validator, by the suite's frontend profile against a reference fault, and by the
client."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _body_support import body, worker
from jsonschema import Draft202012Validator

import conformance
from conformance.results import Status
from prime_rl_dynamo import DiscoveryClient, ReadinessPolicy
from prime_rl_dynamo.errors import ConfigError, ProtocolError
from prime_rl_dynamo.resources import load_json
from prime_rl_dynamo.suite.reference import start_reference_fleet
from prime_rl_dynamo.suite.reference.faults import parse_fault
from prime_rl_dynamo.suite.reference.listing import dumps
from prime_rl_dynamo.suite.reference.variants import VARIANT_BODIES, variant_body
from prime_rl_dynamo.validate import check_body, validate_body
from prime_rl_dynamo.variants import VARIANTS, identify, may_be_variant

NAMES = [v.name for v in VARIANTS]
CASES = list(load_json("vectors/variants.v1.json")["cases"])
SMALL = {"load_clients": 2, "load_requests": 2, "polls": 1, "seed": 1}


def _base() -> dict[str, Any]:
    return body(
        worker(
            5,
            port=1,
            world_size=2,
            routes=("pause_generation",),
            admin_base_url="http://127.0.0.1:1/admin",
            system_url="http://127.0.0.1:1",
            model="m",
        )
    )


def test_every_variant_has_a_reference_body_and_a_vector() -> None:
    assert list(VARIANT_BODIES) == NAMES
    assert {c.get("variant") for c in CASES} >= set(NAMES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: str(c["description"])[:60])
def test_variant_vectors_report_exactly_their_requirements_version_first(case: Any) -> None:
    # Another protocol (SMG's) is refused as a whole: DIALECT-1 first, then its variant's name.
    violations = check_body(case["body"])
    first = "DIALECT-1" if "DIALECT-1" in case["requirements"] else "VERSION-1"
    assert [v.requirement for v in violations[:1]] == ([first] if violations else [])
    assert list(dict.fromkeys(v.requirement for v in violations)) == case["requirements"]
    named = [variant.name for variant, _ in identify(case["body"])]
    if "variant" in case:
        version = next(v for v in violations if v.requirement == "VERSION-1")
        assert named[0] == case["variant"]
        assert f"variant {case['variant']}" in version.message
    else:
        assert named == [] and case["valid"]


def test_variant_vectors_match_plain_jsonschema_on_the_schema_part() -> None:
    validator = Draft202012Validator(load_json("rl-workers.v1.schema.json"))
    schema_ids = {"WORKER-5", "WORKER-6", "BODY-1"}
    for case in CASES:
        if "DIALECT-1" in case["requirements"]:
            continue
        found = {e.schema["x-requirement"] for e in validator.iter_errors(case["body"])}
        assert found == set(case["requirements"]) & schema_ids, case["description"]


@pytest.mark.parametrize("name", [n for n in NAMES if n != "smg"])
def test_each_reference_variant_body_is_identified_by_name(name: str) -> None:
    body = variant_body(name, _base())
    assert [v.name for v, _ in identify(body)][:1] == [name]
    first = check_body(dumps(body))[0]
    assert first.requirement == "VERSION-1" and first.pointer == ""
    assert first.message.startswith("this listing says protocol_version 1 but ")
    assert "a breaking change that needs a new protocol_version" in first.message
    assert "\n" not in first.message
    assert identify(_base()) == [] and check_body(dumps(_base())) == []


def test_smg_is_refused_as_another_protocol_dialect_first_not_as_a_breaking_change() -> None:
    body = variant_body("smg", _base())
    assert [v.name for v, _ in identify(body)] == ["smg"]
    violations = check_body(dumps(body))
    assert [(v.requirement, v.pointer) for v in violations] == [
        ("DIALECT-1", ""),
        ("VERSION-1", ""),
    ]
    version = violations[1].message
    assert "another protocol at its own protocol_version 1" in version and "\n" not in version
    assert "a breaking change that needs a new protocol_version" not in version


def test_the_fork_is_valid_field_by_field_so_the_fast_path_defers() -> None:
    raw = dumps(variant_body("weight-transfer-backend", _base()))
    assert may_be_variant(raw)
    with pytest.raises(ProtocolError) as info:
        validate_body(raw)
    assert info.value.requirements == ["VERSION-1"]
    assert "replaces admin_base_url with weight_transfer_backend" in str(info.value)


def test_system_routes_diagnosis_is_the_issue_sentence() -> None:
    (v, *rest) = check_body(variant_body("system-routes", _base()))
    assert v.message.startswith(
        "this listing says protocol_version 1 but renames routes to system_routes"
    )
    assert {r.requirement for r in rest} == {"WORKER-5"}


def test_another_version_is_not_a_variant_of_v1() -> None:
    body = variant_body("system-routes", _base())
    body["protocol_version"] = 2
    assert identify(body) == []
    assert "VERSION-1" not in {v.requirement for v in check_body(body)}


def test_variant_fault_names_are_checked() -> None:
    assert parse_fault("variant=smg").value == "smg"
    with pytest.raises(ConfigError, match="no known v1 variant 'routes'"):
        parse_fault("variant=routes")


@pytest.mark.integration
@pytest.mark.parametrize("name", NAMES)
def test_suite_fails_exactly_that_variant_check_first(name: str) -> None:
    with start_reference_fleet(faults=[f"variant={name}"]) as fleet:
        report = conformance.run(url=fleet.frontend_url, profiles=["frontend"], **SMALL)
    version = [r for r in report.results if r.requirement == "VERSION-1"]
    assert {r.check for r in version} == {f"VERSION-1::{n}" for n in NAMES}
    failed = [r.check for r in version if r.status is Status.FAIL]
    assert failed == [f"VERSION-1::{name}"]
    (result,) = [r for r in version if r.status is Status.FAIL]
    framing = "another protocol at its own" if name == "smg" else "says protocol_version 1 but"
    assert framing in result.message
    assert "\n" not in result.message
    # Reported before the field checks; the field failures follow as usual.
    checks = [r.check for r in report.results]
    assert checks.index(f"VERSION-1::{name}") < min(
        i for i, c in enumerate(checks) if c.endswith("::body")
    )
    body_failures = {r.requirement for r in report.by_status(Status.FAIL)} - {"VERSION-1"}
    expected = {"system-routes": {"WORKER-5"}, "null-optionals": {"WORKER-6"}}
    if name == "smg":
        assert body_failures == {"DIALECT-1"}
    else:
        assert body_failures == expected.get(name, set())


@pytest.mark.integration
def test_client_refuses_a_variant_with_the_one_line_diagnosis() -> None:
    with start_reference_fleet(faults=["variant=system-routes"]) as fleet:

        async def go() -> None:
            async with DiscoveryClient(fleet.frontend_url, ReadinessPolicy(16)) as client:
                await client.wait_ready(timeout=5)

        with pytest.raises(ProtocolError) as info:
            asyncio.run(go())
    assert info.value.requirements[0] == "VERSION-1"
    assert "renames routes to system_routes" in str(info.value).splitlines()[0]


@pytest.mark.parametrize("value", [None, 1, "", "  ", ["nccl"]])
def test_a_non_string_or_blank_weight_transfer_backend_is_not_the_fork(value: Any) -> None:
    body = _base()
    del body["workers"][0]["admin_base_url"]
    body["workers"][0]["weight_transfer_backend"] = value
    assert identify(body) == []
    body["workers"][0]["weight_transfer_backend"] = "nccl"
    assert [v.name for v, _ in identify(body)] == ["weight-transfer-backend"]
