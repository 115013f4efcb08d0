"""``spec diff`` on hostile and invalid documents (issue 22, items 12, 17 and 24): a usage error
(exit 2) with a pointer, never a traceback with exit 1 ("breaking"); linear in enum and property
counts."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from prime_rl_dynamo.cli import main
from prime_rl_dynamo.exitcodes import ExitCode

LISTING: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "protocol_version": {"const": 1},
        "workers": {"type": "array", "items": {"$ref": "#/$defs/worker"}},
    },
    "$defs": {"worker": {"type": "object", "properties": {"name": {"type": "string"}}}},
}

OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "t", "version": "1"},
    "paths": {
        "/v1/rl/workers": {
            "get": {
                "parameters": [{"$ref": "#/components/parameters/p"}],
                "responses": {
                    "200": {
                        "description": "ok",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/L"}}
                        },
                    }
                },
            }
        }
    },
    "components": {
        "parameters": {"p": {"name": "wait", "in": "query", "schema": {"type": "number"}}},
        "schemas": {
            "L": {
                "type": "object",
                "properties": {"protocol_version": {"const": 1}, "workers": {"type": "array"}},
            }
        },
    },
}


def _edit(document: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(document)
    *parents, last = path.split("/")
    node = out
    for part in parents:
        node = node[part]
    node[last] = value
    return out


SCHEMA_CASES = {
    "recursive-ref": _edit(LISTING, "$defs/worker/properties/name", {"$ref": "#"}),
    "ref-to-root": {"$ref": "#"},
    "protocol-version-true": _edit(LISTING, "properties/protocol_version", True),
    "unknown-type": _edit(LISTING, "$defs/worker/properties/name", {"type": "strung"}),
    "properties-list": _edit(LISTING, "$defs/worker/properties", ["name"]),
    "required-number": _edit(LISTING, "$defs/worker/required", 3),
    "items-number": _edit(LISTING, "properties/workers/items", 3),
    "ref-non-numeric-index": _edit(
        _edit(LISTING, "$defs/list", [{"type": "string"}]),
        "$defs/worker/properties/name",
        {"$ref": "#/$defs/list/abc"},
    ),
}
OPENAPI_CASES = {
    "paths-list": _edit(OPENAPI, "paths", ["/v1/rl/workers"]),
    "dangling-parameter-ref": _edit(OPENAPI, "components/parameters", {}),
    "schemas-list": _edit(OPENAPI, "components/schemas", [{"type": "object"}]),
}
# A path key holds "/": these two are built by hand.
OPENAPI_CASES["string-path-item"] = {**copy.deepcopy(OPENAPI), "paths": {"/v1/rl/workers": "x"}}
_responses = copy.deepcopy(OPENAPI)
_responses["paths"]["/v1/rl/workers"]["get"]["responses"] = ["200"]
OPENAPI_CASES["responses-list"] = _responses


def _spec_diff(
    tmp_path: Path, old: Any, new: Any, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    paths = []
    for name, doc in (("old.json", old), ("new.json", new)):
        path = tmp_path / name
        path.write_text(json.dumps(doc))
        paths.append(str(path))
    code = main(["spec", "diff", *paths])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, err


@pytest.mark.parametrize("case", [*SCHEMA_CASES, *OPENAPI_CASES])
@pytest.mark.parametrize("side", ["old", "new"])
def test_an_invalid_or_hostile_document_is_a_usage_error_with_a_pointer(
    case: str, side: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    valid = LISTING if case in SCHEMA_CASES else OPENAPI
    bad = {**SCHEMA_CASES, **OPENAPI_CASES}[case]
    old, new = (bad, valid) if side == "old" else (valid, bad)
    code, err = _spec_diff(tmp_path, old, new, capsys)
    if case in ("recursive-ref", "ref-to-root", "protocol-version-true") and code != ExitCode.USAGE:
        # Valid schemas, if odd ones: compared (a recursion once), not refused.
        assert code in (ExitCode.OK, ExitCode.FAIL)
        return
    assert code == ExitCode.USAGE, err
    assert f"{side}.json" in err or case == "ref-to-root"
    assert "expected" in err
    assert "invalid literal" not in err


def test_a_ref_into_an_array_names_the_index_it_expected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _spec_diff(tmp_path, LISTING, SCHEMA_CASES["ref-non-numeric-index"], capsys)
    assert code == ExitCode.USAGE
    assert "expected an index 0..0" in err and "'abc'" in err


def _enum_schema(values: list[str]) -> dict[str, Any]:
    return _edit(LISTING, "$defs/worker/properties/name", {"enum": values})


def _comparisons(n: int, monkeypatch: pytest.MonkeyPatch) -> int:
    """Value comparisons (jsonschema's ``equal`` plus set look-ups) one enum diff of size n costs."""
    import jsonschema._keywords as keywords

    from prime_rl_dynamo.suite import specdiff

    count = [0]
    original = keywords.equal  # type: ignore[attr-defined]

    def counting(a: Any, b: Any) -> bool:
        count[0] += 1
        return bool(original(a, b))

    monkeypatch.setattr(keywords, "equal", counting)
    if hasattr(specdiff, "_json_key"):
        key = specdiff._json_key

        def counting_key(value: Any) -> str:
            count[0] += 1
            return key(value)

        monkeypatch.setattr(specdiff, "_json_key", counting_key)
    old = _enum_schema([f"v{i}" for i in range(n)])
    new = _enum_schema([f"v{i}" for i in range(1, n + 1)])
    changes = specdiff.diff_documents("s.json", old, new)
    assert any("constraint" in c.kind for c in changes)
    return count[0]


def test_spec_diff_is_linear_in_an_enums_size(monkeypatch: pytest.MonkeyPatch) -> None:
    # Counted, not timed: doubling the enum must about double the work (quadratic: x4).
    small, large = _comparisons(400, monkeypatch), _comparisons(800, monkeypatch)
    assert large / small < 2.5, (small, large)


def test_a_large_enum_change_is_one_bounded_line() -> None:
    # A shifted 8,000-value enum differs at every position: the change names the keyword once
    # and a few of the values, not every index (an 87 KB line before).
    from prime_rl_dynamo.suite import specdiff

    old = _enum_schema([f"v{i}" for i in range(8000)])
    new = _enum_schema([f"v{i}" for i in range(1, 8001)])
    (change,) = [c for c in specdiff.diff_documents("s.json", old, new) if "constraint" in c.kind]
    assert change.detail == 'enum: now accepts "v8000" and refuses "v0"'


def test_changes_in_many_keywords_are_named_a_few_at_a_time() -> None:
    from prime_rl_dynamo.suite import specdiff

    keywords = {f"x{i}": i for i in range(12)}
    old = _edit(LISTING, "$defs/worker/properties/name", {"type": "string", "minLength": 1})
    new = _edit(
        LISTING,
        "$defs/worker/properties/name",
        {"type": "string", "minLength": 2, "maxLength": 9, "pattern": "^a", **keywords},
    )
    (change,) = [c for c in specdiff.diff_documents("s.json", old, new) if "constraint" in c.kind]
    assert change.detail.startswith("maxLength, minLength, pattern, x0, x1 and 10 more: "), (
        change.detail
    )
