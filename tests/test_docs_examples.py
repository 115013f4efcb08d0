"""The conformance examples in docs/conformance.md come from real runs (tools/conformance_examples):
the screenshot shows the committed failing report, the caption and the `report diff` example are
what the commands print for the committed reports, and both reports hold every check the suite has
today. Regenerate with `python -m tools.conformance_examples`."""

from __future__ import annotations

import json

from conformance.registry import all_checks
from tools.conformance_examples import (
    DOC,
    FAIL_JSON,
    FAIL_PNG,
    PASS_JSON,
    PROFILES,
    SOURCE_KEY,
    blocks,
    png_text,
    sha256,
    update_text,
)

HOW = "regenerate with python -m tools.conformance_examples"


def test_the_docs_blocks_are_what_the_commands_print_for_the_committed_reports() -> None:
    text = DOC.read_text(encoding="utf-8")
    rendered = blocks()
    assert set(rendered) == {"report-fail-caption", "report-diff"}
    assert update_text(text, rendered) == text, HOW
    assert (
        "GATE: closed: 1 newly failing check; B is not ok: LIST-6 (exit 1)"
        in rendered["report-diff"]
    )


def test_a_changed_example_is_detected() -> None:
    text = DOC.read_text(encoding="utf-8")
    stale = text.replace("38 pass", "33 pass") if "38 pass" in text else text + "x"
    assert update_text(stale, blocks()) != stale


def test_the_screenshot_shows_the_committed_failing_report() -> None:
    assert png_text(FAIL_PNG).get(SOURCE_KEY) == sha256(FAIL_JSON), HOW


def test_the_reports_hold_every_check_the_suite_has_today() -> None:
    today = {c.id for c in all_checks(PROFILES)}
    for path in (PASS_JSON, FAIL_JSON):
        report = json.loads(path.read_text(encoding="utf-8"))
        assert {r["check"] for r in report["results"]} == today, f"{path.name}: {HOW}"
        assert "--load 8x4" in report["reproduce"] and "--seed 1" in report["reproduce"]
    assert json.loads(FAIL_JSON.read_text())["failed_requirements"] == ["LIST-6"]
    assert json.loads(PASS_JSON.read_text())["ok"] is True
