"""The protocol 2 draft's V2-* requirement IDs are first-class: --requirement, --skip-requirement,
waiver files and --list take them, and docs/conformance-matrix.md lists them with the
frontend-v2 checks that verify them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.reporting import matrix_markdown, matrix_rows
from conformance.runner import Options
from prime_rl_dynamo.cli import main
from prime_rl_dynamo.requirements import all_requirements, resolve_requirements, v2_requirements
from prime_rl_dynamo.suite.reference import start_reference_fleet


def test_v2_ids_resolve_like_v1_ids_case_insensitively() -> None:
    assert resolve_requirements(["v2-3", "LIST-6", "V2-9"]) == ("V2-3", "LIST-6", "V2-9")
    assert Options(requirements=("v2-4",), skip_requirements=("V2-5",)).requirements == ("V2-4",)
    with pytest.raises(ValueError, match="unknown requirement ID 'V2-99'; did you mean V2-"):
        resolve_requirements(["V2-99"])


def test_matrix_lists_v1_then_the_v2_draft_with_the_frontend_v2_checks() -> None:
    rows = matrix_rows()
    assert [r["requirement"] for r in rows] == [*all_requirements(), *v2_requirements()]
    by_id = {r["requirement"]: r for r in rows}
    # Every V2 requirement the suite enforces has at least one frontend-v2 check in the matrix.
    for req in v2_requirements().values():
        checks = by_id[req.id]["checks"]
        assert all(c.startswith("frontend-v2: ") for c in checks), (req.id, checks)
        if req.enforced_by == "suite" and req.level == "MUST":
            assert checks, f"{req.id} is enforced by the suite but no check names it"
    assert "| V2-3 | MUST | server | suite | `frontend-v2: V2-3::" in matrix_markdown()


def test_list_filters_by_a_v2_id(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "--list", "--requirement", "v2-4"]) == 0
    out = capsys.readouterr().out
    assert "V2-4" in out and "frontend-v2" in out and "LIST-6" not in out


@pytest.fixture(scope="module")
def fleet() -> Iterator[Any]:
    with start_reference_fleet() as running:
        yield running


@pytest.mark.integration
def test_conformance_runs_only_the_selected_v2_requirement(
    fleet: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    report = tmp_path / "r.json"
    argv = [fleet.frontend_url, "-q", "--profile", "frontend-v2", "--seed", "1"]
    code = main(["conformance", *argv, "--requirement", "v2-4", "--json-report", str(report)])
    capsys.readouterr()
    results = json.loads(report.read_text())["results"]
    assert code == 0, results
    assert results and {r["requirement"] for r in results} == {"V2-4"}
    assert all(r["status"] == "pass" for r in results)


@pytest.mark.integration
def test_a_v2_id_outside_the_selected_profiles_says_which_profile_checks_it(
    fleet: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["conformance", fleet.frontend_url, "-q", "--requirement", "V2-3"])
    err = capsys.readouterr()
    assert code == 4
    assert "V2-3 is checked only by the frontend-v2 profile" in err.out + err.err


def test_v2_ids_are_unique_and_apart_from_v1() -> None:
    from prime_rl_dynamo.resources import load_json

    ids = [r["id"] for r in load_json("requirements.v2.json")["requirements"]]
    assert len(ids) == len(set(ids))
    assert not set(ids) & set(all_requirements())


def test_spec_v2_index_and_keywords() -> None:
    """SPEC-v2.md is held to SPEC.md's rules: its index lists exactly the catalog in order (BCP 14
    keywords only inside numbered requirements: test_openapi.py checks both documents)."""
    import re

    from prime_rl_dynamo.resources import schema_dir

    spec = (schema_dir() / "SPEC-v2.md").read_text("utf-8")
    index = spec.split("## 2. Requirement index", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| (V2-\d+) \|", index, re.M)
    assert listed == list(v2_requirements())
