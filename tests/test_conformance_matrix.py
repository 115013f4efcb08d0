"""docs/conformance-matrix.md is generated from the check registry: it must not drift."""

from __future__ import annotations

from pathlib import Path

from conformance.reporting import matrix_markdown
from prime_rl_dynamo.cli import main
from prime_rl_dynamo.requirements import all_requirements, v2_requirements

MATRIX = Path(__file__).resolve().parent.parent / "docs" / "conformance-matrix.md"


def test_matrix_document_matches_the_registry() -> None:
    expected = matrix_markdown()
    assert MATRIX.read_text(encoding="utf-8") == expected, (
        "docs/conformance-matrix.md is stale; regenerate it with "
        "`prime-rl-dynamo conformance --list --markdown > docs/conformance-matrix.md`"
    )


def test_matrix_lists_every_requirement_once() -> None:
    rows = [
        line.split("|")[1].strip()
        for line in matrix_markdown().splitlines()
        if line.startswith("| ") and "---" not in line
    ]
    assert rows[1:] == [*all_requirements(), *v2_requirements()]  # rows[0] is the header


def test_cli_list_prints_the_table(capsys: object) -> None:
    assert main(["conformance", "--list", "--markdown"]) == 0
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert out == matrix_markdown()
