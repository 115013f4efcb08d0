"""docs/prime-rl.md holds: its example runs as written against the reference fleet, and every
row of its before/after table names a requirement of the catalog."""

from __future__ import annotations

import json
import re
import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "prime-rl.md").read_text(encoding="utf-8")


@pytest.mark.integration
def test_docs_example_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VLLM_API_KEY", raising=False)  # the example sets it; restored after
    blocks = re.findall(r"```python\n(.*?)```", DOC, flags=re.S)
    example = next(b for b in blocks if b.startswith("# docs-example"))
    script = tmp_path / "example.py"
    script.write_text(example, encoding="utf-8")
    runpy.run_path(str(script), run_name="__main__")
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "offsets [0, 2, 6] of 8"
    sent = sorted(line.split() for line in out[1:])
    assert [(engine.split("#")[0], offset) for engine, offset, *_ in sent] == [
        ("dynamo.engine-a", "0"),
        ("dynamo.engine-b", "2"),
        ("dynamo.engine-c", "6"),
    ]
    assert {" ".join(rest) for _, _, *rest in sent} == {"Bearer sk-example"}


def test_every_before_after_row_names_a_catalog_requirement() -> None:
    catalog = json.loads((ROOT / "schema" / "requirements.v1.json").read_text(encoding="utf-8"))
    known = {r["id"] for r in catalog["requirements"]}
    table = DOC.split("## Before and after", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    body = rows[1:]  # the header row first
    assert len(body) >= 15
    for row in body:
        ids = re.findall(r"\b[A-Z]+-\d+\b", row.rstrip(" |").rsplit("|", 1)[1])
        assert ids, f"row without a requirement ID: {row}"
        assert set(ids) <= known, f"unknown IDs in {row}"
