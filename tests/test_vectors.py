"""The test vectors are run as data: every body vector is accepted or refused with exactly its
declared requirement IDs (by the validator and, for schema rules, by plain jsonschema); every
checkable requirement has a vector; every real sample is a valid vector; rank vectors hold."""

from __future__ import annotations

import base64
import json
from itertools import pairwise
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from prime_rl_dynamo.errors import TopologyError
from prime_rl_dynamo.requirements import all_requirements
from prime_rl_dynamo.resources import load_json
from prime_rl_dynamo.validate import check_body
from prime_rl_dynamo.wire import WorkerId

SAMPLES = Path(__file__).resolve().parent / "data" / "samples"
BODY_FILES = ["discovery.v1.json", "discovery-error.v1.json", "worker-routes.v1.json"]


def cases(name: str) -> list[dict[str, Any]]:
    return list(load_json(f"vectors/{name}")["cases"])


def case_id(case: dict[str, Any]) -> str:
    return str(case["description"])[:70]


DISCOVERY = cases("discovery.v1.json")
SCHEMA_ENFORCED = {r.id for r in all_requirements().values() if r.enforced_by == "schema"}


def plain_schema_ids(schema_name: str, body: Any) -> set[str]:
    """Requirement IDs plain jsonschema finds, read from x-requirement of each failing subschema."""
    validator = Draft202012Validator(load_json(schema_name))
    return {e.schema["x-requirement"] for e in validator.iter_errors(body)}


def forms(case: dict[str, Any]) -> list[Any]:
    """The body as a parsed value, bytes and text; a raw case only as its exact bytes (and text)."""
    if "raw" in case:
        data = base64.b64decode(case["raw"], validate=True)
        try:
            return [data, data.decode("utf-8")]
        except UnicodeDecodeError:
            return [data]
    body = case["body"]
    return [body, json.dumps(body).encode(), json.dumps(body, indent=1)]


@pytest.mark.parametrize("case", DISCOVERY, ids=case_id)
def test_validator_reports_exactly_the_declared_requirements(case: dict[str, Any]) -> None:
    expected = set(case["requirements"])
    for form in forms(case):
        found = {v.requirement for v in check_body(form)}
        assert found == expected, f"{type(form).__name__}: expected {expected}, found {found}"
    assert case["valid"] == (not expected)


@pytest.mark.parametrize("case", DISCOVERY, ids=case_id)
def test_plain_jsonschema_reports_the_schema_enforced_part(case: dict[str, Any]) -> None:
    declared = set(case["requirements"])
    if "raw" in case:
        pytest.skip("a lexical case: the JSON data model given to jsonschema cannot carry it")
    if "DIALECT-1" in declared:
        pytest.skip(
            "dialect detection runs before the schema: another protocol is not field-checked"
        )
    found = plain_schema_ids("rl-workers.v1.schema.json", case["body"])
    assert found == declared & SCHEMA_ENFORCED


@pytest.mark.parametrize("name", BODY_FILES[1:])
def test_other_body_vectors_by_plain_jsonschema(name: str) -> None:
    schema_name = load_json(f"vectors/{name}")["schema"]
    for case in cases(name):
        if "body" in case:
            found = plain_schema_ids(schema_name, case["body"])
            assert found == set(case["requirements"]), case["description"]


def test_every_checkable_requirement_has_a_vector() -> None:
    """Computed from the catalog: adding a schema/validator requirement without a vector fails."""
    checkable = {
        r.id for r in all_requirements().values() if r.enforced_by in {"schema", "validator"}
    }
    broken: set[str] = set()
    exercised: set[str] = set()
    for name in BODY_FILES:
        for case in cases(name):
            broken |= set(case["requirements"])
            exercised |= set(case.get("exercises", ()))
    # A tolerance rule (unknown fields are allowed) cannot be broken by a body: it is covered by
    # valid vectors that exercise it. Every other checkable requirement needs an invalid vector.
    tolerance = {"BODY-5"}
    assert checkable - tolerance - broken == set()
    assert tolerance <= exercised
    assert broken <= set(all_requirements())


def test_every_real_sample_is_a_valid_vector() -> None:
    by_source = {c.get("source"): c for c in DISCOVERY if c.get("source")}
    samples = sorted(SAMPLES.glob("*.json"))
    assert len(samples) >= 4
    for path in samples:
        case = by_source.get(f"samples/{path.name}")
        assert case is not None, f"{path.name} is not among the vectors"
        assert case["valid"] is True
        assert case["body"] == json.loads(path.read_bytes())
        assert check_body(path.read_bytes()) == []


RANK = cases("rank-offsets.v1.json")


@pytest.mark.parametrize("case", RANK, ids=case_id)
def test_rank_vector_is_self_consistent(case: dict[str, Any]) -> None:
    engines = sorted(case["engines"], key=WorkerId.from_entry)
    if "refused" in case:
        sizes = [e["world_size"] for e in engines]
        broken = (
            not engines
            or any(not isinstance(s, int) or s <= 0 for s in sizes)
            or sum(sizes) != case["inference_world_size"]
            or (case["convention"] == "vllm-native-nccl" and case["trainer_world_size"] > 1)
        )
        assert broken, "a refused case must break RANK-2 or RANK-4"
        return
    expected = case["expected"]
    assert expected["order"] == [str(WorkerId.from_entry(e)) for e in engines]
    first = 1 if case["convention"] == "vllm-native-nccl" else 0
    offsets = expected["rank_offsets"]
    assert offsets[0] == first
    for (a, b), e in zip(pairwise(offsets), engines, strict=False):
        assert b - a == e["world_size"], "offsets are the exclusive prefix sum"
    total = sum(e["world_size"] for e in engines)
    assert total == case["inference_world_size"]
    owned = sorted(
        r for o, e in zip(offsets, engines, strict=True) for r in range(o, o + e["world_size"])
    )
    assert owned == list(range(first, first + total)), "ranks covered exactly once (RANK-6)"
    group = total if case["convention"] == "nixl" else total + 1
    assert expected["group_world_size"] == group
    if "even_split_offsets" in case:
        even = case["even_split_offsets"]
        assert even == [i * (total // len(engines)) for i in range(len(engines))]
        claimed = [
            r for o, e in zip(even, engines, strict=True) for r in range(o, o + e["world_size"])
        ]
        assert sorted(claimed) != list(range(total)), "the even split must be shown to be wrong"


@pytest.mark.parametrize("case", RANK, ids=case_id)
def test_rank_vector_against_plan_broadcast(case: dict[str, Any]) -> None:
    plan_module = pytest.importorskip("prime_rl_dynamo.plan")
    workers = [
        SimpleNamespace(admin_base_url=f"http://127.0.0.1:{9000 + i}/engine", **e)
        for i, e in enumerate(case["engines"])
    ]
    call = {
        "workers": workers,
        "inference_world_size": case["inference_world_size"],
        "convention": case["convention"],
        "trainer_world_size": case["trainer_world_size"],
    }
    if "refused" in case:
        with pytest.raises(TopologyError) as info:
            plan_module.plan_broadcast(**call)
        assert info.value.requirement == case["refused"]["requirement"]
        return
    plan = plan_module.plan_broadcast(**call)
    assert [e.label for e in plan.engines] == case["expected"]["order"]
    assert plan.rank_offsets == case["expected"]["rank_offsets"]
    assert plan.group_world_size == case["expected"]["group_world_size"]
