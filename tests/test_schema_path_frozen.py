"""`schema path NAME` names the working contract, not its frozen v1 copy (schema/frozen/v1, kept
for `spec diff`): a short or file name that both have resolves to the working file; the frozen
copy is reached by its relative name (issue 15's frozen v1 with issue 13's `schema path`)."""

from __future__ import annotations

from prime_rl_dynamo._resources import schema_dir
from prime_rl_dynamo.cli.schema import resolve


def test_short_and_file_names_resolve_to_the_working_contract() -> None:
    root = schema_dir()
    for name in ("rl-frontend", "rl-frontend.openapi.json", "rl-workers", "admin"):
        path = resolve(name)
        assert "frozen" not in path.relative_to(root).parts, (name, path)
    assert resolve("rl-frontend") == root / "openapi" / "rl-frontend.openapi.json"
    assert resolve("rl-workers") == root / "rl-workers.v1.schema.json"


def test_the_frozen_copy_is_reached_by_its_relative_name() -> None:
    name = "frozen/v1/openapi/rl-frontend.openapi.json"
    assert resolve(name) == schema_dir() / name
