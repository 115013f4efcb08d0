"""`spec diff` says what it means: a detail names the parties as its labels do (a request body is
written by the client), a JSON Schema against an OpenAPI document is a usage error, and a break
without --accept says that an acceptance file exists."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from prime_rl_dynamo.cli import main

ROOT = Path(__file__).resolve().parent.parent


def _api(required: list[str]) -> dict[str, Any]:
    body = {
        "type": "object",
        "required": required,
        "properties": {"rank_offset": {"type": "integer"}, "host": {"type": "string"}},
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "admin", "version": "1"},
        "paths": {
            "/init_broadcaster": {
                "post": {
                    "requestBody": {"content": {"application/json": {"schema": body}}},
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    }


def _write(tmp_path: Path, name: str, doc: Any) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def _namespace_made_optional(tmp_path: Path) -> tuple[str, str]:
    """The listing's schema, and the same with ``namespace`` optional: a response's break."""
    schema = json.loads((ROOT / "schema" / "rl-workers.v1.schema.json").read_text())
    looser = copy.deepcopy(schema)
    looser["required"] = [r for r in looser["required"] if r != "namespace"]
    return _write(tmp_path, "a.schema.json", schema), _write(tmp_path, "b.schema.json", looser)


def test_a_request_body_detail_names_the_parties_as_its_labels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # made optional in a request: old servers that read it break, clients may now omit it
    old = _write(tmp_path, "old.openapi.json", _api(["rank_offset", "host"]))
    new = _write(tmp_path, "new.openapi.json", _api(["host"]))
    main(["spec", "diff", old, new])
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if "member made optional" in x]
    assert "clients=additive servers=breaking" in line
    assert "servers that rely on it break" in line and "clients that rely" not in line


def test_a_response_detail_keeps_its_wording(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["spec", "diff", *_namespace_made_optional(tmp_path)])
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if "member made optional" in x]
    assert "clients=breaking servers=additive" in line and "clients that rely on it break" in line


def test_a_json_schema_against_an_openapi_document_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(
        ["spec", "diff", str(ROOT / "schema" / "rl-workers.v1.schema.json"),
         str(ROOT / "schema" / "openapi" / "rl-frontend.openapi.json")]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert "is a JSON Schema and" in err and "is an OpenAPI document" in err


def test_a_break_without_accept_points_at_the_acceptance_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["spec", "diff", *_namespace_made_optional(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1
    assert out.splitlines()[-1].startswith("  a breaking change no conformant peer can notice")
    assert "--accept FILE" in out.splitlines()[-1]
