"""The conformance runner's own steps: one check's result at its requirement's level, a report
scrubbed of the header values a target echoed back, and the header of a run's target."""

from __future__ import annotations

import json
from typing import Any

import pytest
from _gateway_support import TOKEN_HEADER

from conformance.registry import Check, CheckError, Failed, Skipped
from conformance.results import Report, Result, Status
from conformance.runner import Options, RunContext, _redact, _run_one, _target

SECRET = "s3cr3t-gateway-token-4f9a"


def _check(requirement: str, func: Any) -> Check:
    return Check("frontend", requirement, "unit", "a unit check", func)


def _raise(exc: BaseException) -> Any:
    def func(ctx: object) -> str | None:
        raise exc

    return func


@pytest.mark.parametrize(
    ("requirement", "exc", "strict", "expected"),
    [
        ("HTTP-1", Failed("broken"), False, Status.FAIL),  # MUST
        ("HTTP-6", Failed("flaky"), False, Status.WARN),  # SHOULD warns
        ("HTTP-6", Failed("flaky"), True, Status.FAIL),  # --strict
        ("HTTP-1", Skipped("not applicable"), False, Status.SKIP),
        ("HTTP-1", CheckError("harness broke"), False, Status.ERROR),
        ("HTTP-1", ZeroDivisionError("suite bug"), False, Status.ERROR),
    ],
)
def test_result_levels(
    requirement: str, exc: BaseException, strict: bool, expected: Status
) -> None:
    result = _run_one(_check(requirement, _raise(exc)), object(), strict)
    assert result.status is expected
    assert str(exc) in result.message  # every non-pass says why
    assert result.requirement == requirement


def test_a_pass_keeps_the_checks_note() -> None:
    result = _run_one(_check("HTTP-1", lambda ctx: "200 in 3 ms"), object(), False)
    assert (result.status, result.message) == (Status.PASS, "200 in 3 ms")


def test_the_runner_scrubs_a_header_value_a_target_echoes_back() -> None:
    options = Options(url="https://gw", headers=((TOKEN_HEADER, SECRET),))
    report = Report(
        target={"url": "https://gw", "notes": [f"echoed {SECRET}"]},
        options={"headers": [[TOKEN_HEADER, SECRET]]},
        seed=1,
        versions={},
        results=[
            Result(
                check="HTTP-1::x",
                requirement="HTTP-1",
                level="MUST",
                profile="frontend",
                title="t",
                status=Status.FAIL,
                message=f"GET -> 400 body: bad token {SECRET}",
                details={"seen": [SECRET]},
            )
        ],
    )
    _redact(report, options)
    assert SECRET not in json.dumps(report.to_dict())
    assert report.results[0].message.endswith("bad token <redacted>")
    assert report.options["headers"] == [f"{TOKEN_HEADER}: <redacted>"]


def test_the_header_of_a_run_without_a_shared_target_reads_as_a_sentence() -> None:
    run = RunContext(options=Options(), seed=1)
    with _target(run, ("client",)):
        pass
    assert run.target["description"] == "the fleets each profile stands up itself"
