"""``prime-rl-dynamo report diff A.json B.json`` on reports of real runs: newly failing (exit 1),
newly passing, waived (exit 0), and a file that is not a report (exit 2)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

import conformance
from conformance.reporting import write_json
from prime_rl_dynamo.cli import main
from prime_rl_dynamo.suite.reference import start_reference_fleet

pytestmark = pytest.mark.integration

SMALL = {"profiles": ["frontend"], "load_clients": 2, "load_requests": 2, "polls": 2, "seed": 1}


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("reports")
    waivers = out / "w.yaml"
    waivers.write_text("waivers:\n  - requirement: LIST-6\n    reason: known\n")
    with start_reference_fleet() as clean:
        good = conformance.run(url=clean.frontend_url, **SMALL)
    with start_reference_fleet(faults=["break=LIST-6"]) as broken:
        bad = conformance.run(url=broken.frontend_url, **SMALL)
        waived = conformance.run(url=broken.frontend_url, waivers=str(waivers), **SMALL)
    return {
        name: write_json(report, out / f"{name}.json")
        for name, report in (("good", good), ("bad", bad), ("waived", waived))
    }


Diff = Callable[..., tuple[int, str, str]]


@pytest.fixture
def diff(capsys: pytest.CaptureFixture[str]) -> Diff:
    """``prime-rl-dynamo report diff ARGS``: its exit code, stdout and stderr."""

    def run(*args: str) -> tuple[int, str, str]:
        code = main(["report", "diff", *args])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


def test_a_newly_failing_check_fails_the_gate(reports: dict[str, Path], diff: Diff) -> None:
    code, out, _ = diff(str(reports["good"]), str(reports["bad"]))
    assert code == 1
    assert "newly failing (1):\n  LIST-6::body: pass -> fail  LIST-6 at /workers/" in out
    assert "B is not ok (not-conformant); A was ok:\n  LIST-6: LIST-6::body fails\n" in out
    assert "GATE: closed: 1 newly failing check; B is not ok: LIST-6 (exit 1)" in out


def test_newly_passing_and_waived_pass_the_gate(reports: dict[str, Path], diff: Diff) -> None:
    code, out, _ = diff(str(reports["bad"]), str(reports["good"]))
    assert code == 0
    assert "newly passing (1):\n  LIST-6::body: fail -> pass" in out
    code, out, _ = diff(str(reports["good"]), str(reports["waived"]), "--json")
    assert code == 0
    data = json.loads(out)
    assert [c["check"] for c in data["waived"]] == ["LIST-6::body"]
    assert data["newly_failing"] == [] and data["exit_code"] == 0


def test_same_run_twice_changes_nothing(reports: dict[str, Path], diff: Diff) -> None:
    code, out, _ = diff(str(reports["bad"]), str(reports["bad"]), "--json")
    data = json.loads(out)
    assert code == 0 and data["newly_failing"] == [] and data["newly_passing"] == []
    assert [c["check"] for c in data["still_failing"]] == ["LIST-6::body"]


@pytest.mark.parametrize("content", ["not json", '{"results": []}', "[]"])
def test_a_file_that_is_not_a_report_is_a_usage_error(
    reports: dict[str, Path], content: str, tmp_path: Path, diff: Diff
) -> None:
    other = tmp_path / "other.json"
    other.write_text(content)
    code, _, err = diff(str(reports["good"]), str(other))
    assert code == 2 and str(other) in err and "Traceback" not in err
    code, _, err = diff(str(reports["good"]), str(tmp_path / "missing.json"))
    assert code == 2 and "No such file" in err
