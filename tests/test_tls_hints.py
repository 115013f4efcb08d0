"""What a failed TLS handshake advises (issue 22, item 24): an untrusted certificate names
--cacert in conformance as in discover; an expired one, even with --cacert, does not."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from prime_rl_dynamo.cli import main
from tests._client_support import QuietHandler, body, serving, worker
from tests._gateway_support import self_signed_cert

pytestmark = pytest.mark.integration  # hostile servers on 127.0.0.1


@contextmanager
def _https(directory: Path, *, expired: bool) -> Iterator[tuple[str, Path]]:
    cert, key = self_signed_cert(directory, expired=expired)
    payload = body(worker("backend", 1, world_size=1))

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            self.answer(200, payload)

    with serving(Handler, (cert, key)) as url:
        yield url, cert


def test_conformance_against_an_untrusted_certificate_names_cacert(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "r.json"
    with _https(tmp_path, expired=False) as (url, _):
        main(
            [
                "conformance",
                url,
                "--check",
                "HTTP-1::status-and-content-type",
                "-q",
                "--json-report",
                str(report),
            ]
        )
    capsys.readouterr()
    message = report.read_text()
    assert "--cacert FILE" in message
    assert "nothing answers" not in message


def test_discover_with_an_expired_certificate_does_not_advise_cacert(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with _https(tmp_path, expired=True) as (url, cert):
        code = main(["discover", url, "-W", "1", "--cacert", str(cert), "--timeout", "1.5", "-q"])
    err = capsys.readouterr().err
    assert code == 1
    assert "expired" in err
    assert "pass its CA bundle with --cacert" not in err
