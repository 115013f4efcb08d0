"""docs/compat.md is generated from the committed matrix cells (docs/compat/*.json).

The page is regenerated from the cells and compared: a hand edit or a new cell without a new
page fails here. The cells are real runs (``nox -s matrix``); their reports must be valid reports
of the suite, each naming the release it judged.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from tools.compat import CELLS, MATRIX, PAGE, load_cells, render_page

ROOT = Path(__file__).resolve().parents[1]


def test_the_page_matches_the_committed_cells() -> None:
    assert (ROOT / PAGE).read_text(encoding="utf-8") == render_page(ROOT), (
        f"{PAGE} drifted from {CELLS}/; run python -m tools.compat docs"
    )


def test_a_changed_cell_changes_the_page(tmp_path: Path) -> None:
    """The counterpart: the page really depends on the cells (a changed verdict shows)."""
    shutil.copytree(ROOT / CELLS, tmp_path / CELLS)
    cell = next(c for c in load_cells(ROOT) if c["_report"] is not None)
    name = cell["suite"]["report"]
    report = json.loads((tmp_path / CELLS / name).read_text(encoding="utf-8"))
    report["verdict"], report["failed_requirements"] = "not-conformant", ["LIST-1"]
    (tmp_path / CELLS / name).write_text(json.dumps(report), encoding="utf-8")
    changed = render_page(tmp_path)
    assert changed != render_page(ROOT)
    assert f"| {cell['release']} | NOT CONFORMANT: LIST-1 |" in changed


def test_every_release_of_the_matrix_has_a_cell() -> None:
    releases = [c["release"] for c in load_cells(ROOT)]
    assert releases == list(MATRIX)


@pytest.mark.parametrize("release", MATRIX)
def test_each_cell_is_a_verdict_or_a_one_line_refusal(release: str) -> None:
    cell = next(c for c in load_cells(ROOT) if c["release"] == release)
    suite = cell["suite"]
    if suite["report"] is None:
        assert suite["exit_code"] == 2
        assert "\n" not in suite["cannot_host"] and release in suite["cannot_host"]
        return
    report = cell["_report"]
    schema = json.loads(
        (ROOT / "schema/conformance-report.v1.schema.json").read_text(encoding="utf-8")
    )
    jsonschema.validate(report, schema)
    assert report["verdict"] in ("conformant", "not-conformant"), report.get("inconclusive")
    assert report["exit_code"] == suite["exit_code"]
    assert report["target"]["kind"] == "dynamo"
    assert report["target"]["dynamo_release"] == release
    assert report["versions"]["ai-dynamo-runtime"] == release


def test_ci_runs_the_roundtrip_on_the_oldest_release() -> None:
    """`make test` (its ci-conformance step) runs the nox session that pins CI_RELEASE."""
    from tools.compat import CI_RELEASE, RELEASES

    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    ci = makefile[makefile.index("\nci-conformance:") :].split("\n\n", 1)[0]
    assert "$(BIN)/nox -s ci-oldest" in ci
    assert f"reports/conformance-dynamo-{CI_RELEASE}-roundtrip.xml" in ci
    noxfile = (ROOT / "noxfile.py").read_text(encoding="utf-8")
    assert '@nox.session(name="ci-oldest")' in noxfile and "CI_RELEASE" in noxfile
    # The oldest release with the listener, the first of the sessions after 1.2.1.
    assert RELEASES[1] == CI_RELEASE


def test_ci_waives_exactly_what_the_matrix_found_before_1_5() -> None:
    """CI's waiver file is the verdict the matrix found on 1.3.1 and 1.4.2 (the same minor
    lines as CI's release): nothing more is waived, nothing found is left out."""
    from conformance.waivers import load_waivers
    from tools.compat import CI_WAIVERS

    waived = {w.requirement for w in load_waivers(CI_WAIVERS)}
    for cell in load_cells(ROOT):
        if cell["release"] in ("1.3.1", "1.4.2"):
            assert set(cell["_report"]["failed_requirements"]) == waived, cell["release"]


def test_the_page_says_how_long_the_committed_matrix_run_took(tmp_path: Path) -> None:
    """docs/compat/matrix.json (written by `nox -s matrix`) is on the page; the counterpart: a
    different run gives a different page."""
    from tools.compat import MATRIX_RUN

    run = json.loads((ROOT / MATRIX_RUN).read_text(encoding="utf-8"))
    assert {"began", "finished", "seconds", "uv_cache", "load_before", "load_after"} <= set(run)
    page = render_page(ROOT)
    assert f"took **{run['seconds'] / 60:.1f} min**" in page and run["uv_cache"] in page
    shutil.copytree(ROOT / CELLS, tmp_path / CELLS)
    (tmp_path / MATRIX_RUN).write_text(json.dumps({**run, "seconds": run["seconds"] + 600}))
    assert f"took **{(run['seconds'] + 600) / 60:.1f} min**" in render_page(tmp_path)


def test_matrix_run_records_its_begin_and_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tools import compat
    from tools.compat import MATRIX_RUN, matrix_run

    monkeypatch.setattr(compat, "_uv_cache", lambda: "cold")  # `uv cache dir` starts a process
    begun = matrix_run("begin", tmp_path)
    assert "seconds" not in begun and begun["uv_cache"] == "cold"
    ended = matrix_run("end", tmp_path)
    assert ended["began"] == begun["began"] and ended["seconds"] >= 0
    assert len(ended["load_after"]) == 3
    assert json.loads((tmp_path / MATRIX_RUN).read_text(encoding="utf-8")) == ended
    noxfile = (ROOT / "noxfile.py").read_text(encoding="utf-8")
    assert '"matrix", "begin"' in noxfile and 'session.notify("matrix-end")' in noxfile
