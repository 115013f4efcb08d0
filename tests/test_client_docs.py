"""The example in docs/client.md runs as written, against the reference fleet."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parent.parent / "docs" / "client.md"


@pytest.mark.integration
def test_docs_example_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    example = next(b for b in blocks if b.startswith("# docs-example"))
    script = tmp_path / "example.py"
    script.write_text(example, encoding="utf-8")
    runpy.run_path(str(script), run_name="__main__")
    out = capsys.readouterr().out
    assert "group of 17: offsets [0, 4, 8, 10, 12, 14]" in out
