"""Test support for the report tests: the validity of a JUnit file and a JSON report, a report
made from given results, and which files under a directory a run wrote (``fresh_reports``)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prime_rl_dynamo.resources import load_json

TESTS = Path(__file__).resolve().parent


@dataclass(frozen=True)
class CiReports:
    """What ``make test``'s conformance lane left for this session: its exit status and the
    report files it wrote since the session began."""

    lane_status: int
    files: list[Path]


def fresh_reports(directory: Path, since: float) -> list[Path]:
    """The JUnit and JSON files of ``directory`` written at or after ``since`` (a ``time.time()``):
    what a run that began then wrote, never what an earlier run left."""
    if not directory.is_dir():
        return []
    return sorted(
        path
        for path in directory.iterdir()
        if path.is_file() and path.suffix in (".xml", ".json") and path.stat().st_mtime >= since
    )


def assert_valid_junit(path: Path) -> ET.Element:
    """Validate one JUnit file against the XSD (raises with the first error) and parse it."""
    import xmlschema

    xmlschema.XMLSchema(TESTS / "junit.xsd").validate(str(path))
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    assert root.find("properties") is None  # never directly under <testsuites>
    for suite in root.iter("testsuite"):
        assert suite.get("timestamp") and suite.get("time") is not None
    return root


def assert_valid_report(path: Path) -> dict[str, Any]:
    from jsonschema import Draft202012Validator, FormatChecker

    data = json.loads(path.read_text())
    schema = load_json("conformance-report.v1.schema.json")
    Draft202012Validator.check_schema(schema)
    errors = sorted(
        Draft202012Validator(schema, format_checker=FormatChecker()).iter_errors(data),
        key=lambda e: list(e.path),
    )
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]
    return data


#: Members of a run the report is made from (the rest of ``report_of``'s fields override members).
_RUN = ("incomplete", "not_run", "inconclusive", "waivers")


def report_of(*results: tuple[str, str, str], **fields: Any) -> dict[str, Any]:
    """A schema-valid JSON report as ``--json-report`` writes it, with these (check, status,
    message) results; ``incomplete``, ``not_run``, ``inconclusive`` and ``waivers`` (records as
    ``apply_waivers`` makes them) make the run, other ``fields`` override members afterwards."""
    from conformance.registry import all_checks
    from conformance.reporting import reproduce_command
    from conformance.results import Report, Result, Status

    checks = {c.id: c for c in all_checks()}
    report = Report(
        target={"kind": "url", "url": "http://127.0.0.1:1"},
        options={},
        seed=1,
        versions={"python": "3"},
        started=1_800_000_000.0,
        finished=1_800_000_001.0,
        **{name: fields.pop(name) for name in _RUN if name in fields},
    )
    for check_id, status, message in results:
        c = checks[check_id]
        report.extend(
            [Result(c.id, c.requirement, c.level, c.profile, c.title, Status(status), message)]
        )
    data = report.to_dict()
    data["reproduce"] = reproduce_command(report)
    data.update(fields)
    return data
