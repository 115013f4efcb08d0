"""What the operator is told, decided from structured data (status, headers, result statuses):
the hints of a refused status and the summary row of a requirement whose checks differ.
Against the real SMG gateway: tests/test_smg.py."""

from __future__ import annotations

import pytest
from rich.console import Console

from conformance.reporting import print_summary
from conformance.results import Report, Result, Status
from prime_rl_dynamo.http import status_hint


@pytest.mark.parametrize(
    ("status", "headers", "hinted"),
    [
        (404, {"x-smg-error-code": "unknown_url"}, "--enable-rl"),
        (404, {}, ""),  # a 404 from anything else: the command's own words suffice
        (401, {"www-authenticate": 'Bearer realm="data-plane"'}, "-H 'Authorization: Bearer ...'"),
        (401, {"www-authenticate": "bearer"}, "-H 'Authorization: Bearer ...'"),
        (401, {"www-authenticate": 'Basic realm="x"'}, ""),
        (401, {}, ""),
        (403, {"x-smg-error-code": "forbidden", "www-authenticate": "Bearer"}, ""),
    ],
)
def test_a_hint_comes_from_the_status_and_the_headers(
    status: int, headers: dict[str, str], hinted: str
) -> None:
    hint = status_hint(status, headers)
    assert (hinted in hint) if hinted else hint == ""


def test_the_smg_hint_quotes_its_error_code_and_no_more_than_a_short_one() -> None:
    hint = status_hint(404, {"x-smg-error-code": "unknown_url" + "x" * 500})
    assert "x-smg-error-code: unknown_url" in hint and len(hint) < 300


def _report(*statuses: Status) -> Report:
    results = [
        Result(
            check=f"HTTP-1::check-{i}",
            requirement="HTTP-1",
            level="MUST",
            profile="frontend",
            title="t",
            status=s,
            message=f"{s.value} because",
        )
        for i, s in enumerate(statuses)
    ]
    return Report(
        target={"kind": "url", "url": "http://127.0.0.1:1"},
        options={"url": "http://127.0.0.1:1", "profiles": ("frontend",), "strict": False},
        seed=42,
        versions={"python": "3"},
        results=results,
    )


def _row(*statuses: Status) -> str:
    console = Console(record=True, width=200, color_system=None)
    print_summary(_report(*statuses), console, verbose=True)
    (row,) = [line for line in console.export_text().splitlines() if "│ HTTP-1 " in line]
    return row


def test_the_summary_row_shows_each_check_s_status_when_they_differ() -> None:
    assert "│ PASS+SKIP " in _row(Status.PASS, Status.SKIP)
    assert "│ SKIP+FAIL+PASS " in _row(Status.SKIP, Status.FAIL, Status.PASS)


def test_the_summary_row_shows_one_status_when_the_checks_agree() -> None:
    assert "│ SKIP " in _row(Status.SKIP, Status.SKIP)
    assert "+" not in _row(Status.PASS, Status.PASS).split("│")[3]
