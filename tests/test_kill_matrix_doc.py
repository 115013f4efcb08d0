"""docs/kill-matrix.md is generated from both counterpart tables and cannot drift from them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import kill_matrix


def test_the_committed_page_is_what_the_tables_generate() -> None:
    assert kill_matrix.PAGE.read_text(encoding="utf-8") == kill_matrix.render()
    assert kill_matrix.main(["--check"]) == 0


def test_a_stale_page_is_detected(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    stale = tmp_path / "kill-matrix.md"
    stale.write_text(kill_matrix.render().replace("| zoo `even_split` |", "| zoo `x` |"))
    monkeypatch.setattr(kill_matrix, "PAGE", stale)
    assert kill_matrix.main(["--check"]) == 1
    assert kill_matrix.main([]) == 0 and kill_matrix.main(["--check"]) == 0


def test_every_client_check_is_in_the_page_with_its_counterparts() -> None:
    from conformance.examples.zoo import COUNTERPARTS

    page = kill_matrix.render()
    for cp in COUNTERPARTS:
        assert f"`{cp.check}` | zoo `{cp.name}` |" in page
