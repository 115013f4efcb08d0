"""The suite's own HTTP is bounded like the client's: a body size cap and a
deadline for each whole exchange, each reported as the target's failure of HTTP-1 with the
figure. Hostile servers on 127.0.0.1; every test is bounded by pytest-timeout."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from _raw_server_support import RawServer, Writer, endless_chunks

import conformance
from conformance.results import Status

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


@pytest.fixture
def serve() -> Iterator[Callable[[Writer], RawServer]]:
    servers: list[RawServer] = []

    def start(writer: Writer) -> RawServer:
        servers.append(RawServer(writer))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def _dribble(conn: socket.socket) -> None:
    conn.sendall(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n"
    )
    for _ in range(1000):  # one byte per 0.2 s: 200 s for the whole body
        conn.sendall(b" ")
        time.sleep(0.2)


def _http1(report: conformance.Report) -> conformance.Result:
    return next(r for r in report.results if r.check == "HTTP-1::status-and-content-type")


def _run_http1(server: RawServer, **bounds: Any) -> conformance.Report:
    """Run only HTTP-1 of the frontend profile against ``server`` with the given bounds."""
    return conformance.run(
        url=server.url, profiles=["frontend"], requirements=["HTTP-1"], seed=1, **bounds
    )


def test_a_dribbled_body_fails_http_1_at_the_per_exchange_deadline(
    serve: Callable[[Writer], RawServer],
) -> None:
    server = serve(_dribble)
    report = _run_http1(server, timeout=1.0)
    result = _http1(report)
    assert result.status is Status.FAIL, result.message
    assert "per-exchange deadline of 1 s" in result.message
    assert report.exit_code == 1


def test_an_endless_chunked_body_fails_http_1_at_the_size_cap(
    serve: Callable[[Writer], RawServer],
) -> None:
    server = serve(endless_chunks)
    report = _run_http1(server, max_body_bytes=1 << 20)
    result = _http1(report)
    assert result.status is Status.FAIL, result.message
    assert "size cap of 1048576 bytes" in result.message
    assert report.exit_code == 1


def test_schemathesis_exchanges_are_bounded_too(serve: Callable[[Writer], RawServer]) -> None:
    # The first GET gets a valid listing; schemathesis' GET then gets an endless body.
    from tests._client_support import body, worker

    listing = body(worker("a", 1))
    seen = {"n": 0}

    def first_good_then_endless(conn: socket.socket) -> None:
        seen["n"] += 1
        if seen["n"] > 1:
            endless_chunks(conn)
            return
        conn.sendall(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n"
            + b"content-length: %d\r\n\r\n" % len(listing)
            + listing
        )

    server = serve(first_good_then_endless)
    report = _run_http1(server, max_body_bytes=1 << 20)
    st = next(r for r in report.results if r.check == "HTTP-1::schemathesis")
    assert st.status is Status.FAIL, st.message
    assert "size cap of 1048576 bytes" in st.message


def test_the_cap_and_the_deadline_are_options_that_refuse_nonsense() -> None:
    with pytest.raises(ValueError, match="max_body_bytes"):
        conformance.Options(max_body_bytes=0)
    with pytest.raises(ValueError, match="timeout"):
        conformance.Options(timeout=float("inf"))
