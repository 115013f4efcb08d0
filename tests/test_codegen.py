"""The checked-in models are what the generator makes from the bundled schema (no drift), and the
generator notices a schema change."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from prime_rl_dynamo.resources import load_json
from tools import codegen


def test_checked_in_models_match_the_schema() -> None:
    text = codegen.render()
    assert codegen.MODELS_PATH.read_text(encoding="utf-8") == text, (
        "prime_rl_dynamo/_models.py drifted from schema/rl-workers.v1.schema.json: "
        "run python -m tools.codegen"
    )
    assert codegen.main(["--check"]) == 0


def test_generated_module_carries_the_schema_constraints() -> None:
    text = codegen.render()
    assert "instance_id: Annotated[int, msgspec.Meta(ge=0)]" in text
    assert "world_size: Annotated[int, msgspec.Meta(ge=1, le=4294967295)] | None = None" in text
    assert "protocol_version: Literal[1]" in text
    assert "routes: tuple[Annotated[str, msgspec.Meta(min_length=1)], ...]" in text
    assert "Worker.instance_id: maximum 18446744073709551615 (beyond int64)" in text
    assert '"Worker.admin_base_url": ' in text  # patterns checked in bulk by the validator


def test_a_schema_change_is_detected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    schema = copy.deepcopy(load_json(codegen.SCHEMA_NAME))
    schema["$defs"]["model"]["maxLength"] = 200
    changed = codegen.render(schema)
    assert "model: Annotated[str, msgspec.Meta(min_length=1, max_length=200)] | None" in changed
    stale = tmp_path / "_models.py"
    stale.write_text(changed, encoding="utf-8")
    monkeypatch.setattr(codegen, "MODELS_PATH", stale)
    assert codegen.main(["--check"]) == 1
    assert codegen.main([]) == 0
    assert stale.read_text(encoding="utf-8") == codegen.render()


def test_generated_code_is_importable_and_decodes() -> None:
    namespace: dict[str, object] = {}
    exec(compile(codegen.render(), "<generated>", "exec"), namespace)
    assert {"Snapshot", "Worker", "Transport", "PATTERNS"} <= namespace.keys()


def test_remote_refs_are_refused() -> None:
    gen = codegen._Generator({})
    with pytest.raises(ValueError, match="only local"):
        gen.resolve({"$ref": "https://example.invalid/other.json"})
