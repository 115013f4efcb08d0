"""The hints of a refused status, decided from structured data (the status and the headers), never
from a message. Against the real SMG gateway: tests/test_smg.py; the summary row of a requirement
whose checks differ: tests/test_conformance_units.py."""

from __future__ import annotations

import pytest

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
