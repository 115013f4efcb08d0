"""Every JSON Schema of the contract passes its meta-schema, is self-contained, and maps each
assertion to exactly one requirement of the catalog (x-requirement)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from prime_rl_dynamo.requirements import all_requirements
from prime_rl_dynamo.resources import load_json, schema_dir

BODY_SCHEMAS = [
    "rl-workers.v1.schema.json",
    "rl-workers-error.v1.schema.json",
    "rl-worker-routes.v1.schema.json",
]
ALL_SCHEMAS = [
    *BODY_SCHEMAS,
    "admin-bodies.v1.schema.json",
    "requirements.schema.json",
    "vectors/vectors.schema.json",
]

# Keywords that can fail on their own (as opposed to applicators that only descend).
ASSERTIONS = {
    "type", "const", "enum", "required", "pattern", "minLength", "maxLength", "minimum",
    "maximum", "minItems", "maxItems", "uniqueItems", "oneOf", "anyOf", "not",
    "dependentRequired", "minProperties", "maxProperties",
}  # fmt: skip


def subschemas(node: Any, where: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema object below ``node`` (properties, $defs, items, applicators), with its path."""
    if not isinstance(node, dict):
        return
    yield where, node
    for key in ("properties", "$defs", "dependentSchemas"):
        for name, child in node.get(key, {}).items():
            yield from subschemas(child, f"{where}/{key}/{name}")
    for key in ("items", "additionalProperties", "not", "if", "then", "else"):
        if isinstance(node.get(key), dict):
            yield from subschemas(node[key], f"{where}/{key}")
    for key in ("allOf", "anyOf", "oneOf"):
        for i, child in enumerate(node.get(key, [])):
            yield from subschemas(child, f"{where}/{key}/{i}")


@pytest.mark.parametrize("name", ALL_SCHEMAS)
def test_schema_passes_its_meta_schema(name: str) -> None:
    schema = load_json(name)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)
    assert schema.get("$id", "").endswith(name.split("/")[-1]), f"{name} needs a $id naming it"


@pytest.mark.parametrize("name", ALL_SCHEMAS)
def test_schema_is_self_contained(name: str) -> None:
    # OpenAPI documents embed these schemas: only local references may appear.
    remote = [
        (where, sub["$ref"])
        for where, sub in subschemas(load_json(name))
        if "$ref" in sub and not sub["$ref"].startswith("#/")
    ]
    assert remote == [], f"{name}: remote $ref {remote}"


@pytest.mark.parametrize("name", BODY_SCHEMAS)
def test_every_subschema_names_one_catalog_requirement(name: str) -> None:
    catalog = all_requirements()
    missing = []
    for where, sub in subschemas(load_json(name)):
        req = sub.get("x-requirement")
        if req is None:
            missing.append(where)
        else:
            assert req in catalog, f"{name} {where}: x-requirement {req!r} not in the catalog"
    assert not missing, f"{name}: subschemas without x-requirement: {missing}"


@pytest.mark.parametrize("name", BODY_SCHEMAS)
def test_a_reference_names_the_requirement_of_its_target(name: str) -> None:
    schema = load_json(name)
    for where, sub in subschemas(schema):
        if "$ref" in sub:
            target = schema
            for part in sub["$ref"][2:].split("/"):
                target = target[part]
            assert sub["x-requirement"] == target["x-requirement"], where


def test_schema_enforced_requirements_appear_in_the_schemas() -> None:
    used = set()
    for name in BODY_SCHEMAS:
        used |= {s["x-requirement"] for _, s in subschemas(load_json(name)) if "x-requirement" in s}
    schema_ids = {r.id for r in all_requirements().values() if r.enforced_by == "schema"}
    assert schema_ids - used == set(), (
        f"catalog says schema-enforced but no schema names {schema_ids - used}"
    )


def test_requirement_catalog_matches_its_schema() -> None:
    validator = Draft202012Validator(load_json("requirements.schema.json"))
    errors = [e.message for e in validator.iter_errors(load_json("requirements.v1.json"))]
    assert errors == []
    ids = [r["id"] for r in load_json("requirements.v1.json")["requirements"]]
    assert len(ids) == len(set(ids)), "requirement IDs must be unique"


def test_vector_files_match_the_vector_schema() -> None:
    validator = Draft202012Validator(load_json("vectors/vectors.schema.json"))
    files = sorted((schema_dir() / "vectors").glob("*.v1.json"))
    assert {f.name for f in files} >= {"discovery.v1.json", "rank-offsets.v1.json"}
    for path in files:
        errors = [e.message for e in validator.iter_errors(json.loads(path.read_text("utf-8")))]
        assert errors == [], f"{path.name}: {errors[:3]}"


def test_vector_schema_rejects_a_valid_case_that_names_requirements() -> None:
    validator = Draft202012Validator(load_json("vectors/vectors.schema.json"))
    bad = {
        "description": "x",
        "schema": "rl-workers.v1.schema.json",
        "cases": [{"description": "y", "body": {}, "valid": True, "requirements": ["BODY-1"]}],
    }
    assert not validator.is_valid(bad)
