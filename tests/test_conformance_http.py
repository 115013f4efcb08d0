"""The suite's HTTP reader (conformance/_http.py) leaves a body's verdict to the validator: a
listing too deep for the validator is JSON text all the same, not an HTTP-1 failure."""

from __future__ import annotations

import json

import httpx
from _body_support import body, worker

from conformance._http import request
from prime_rl_dynamo.validate import check_body


def test_the_suite_reads_a_too_deep_listing_and_leaves_it_to_body_1() -> None:
    deep = (
        json.dumps(body(worker()))
        .encode()
        .replace(b'"workers"', b'"x":' + b"[" * 1200 + b"]" * 1200 + b',"workers"')
    )
    client = httpx.Client(
        transport=httpx.MockTransport(lambda r: httpx.Response(200, content=deep))
    )
    reply = request(client, "GET", "http://127.0.0.1:1/v1/rl/workers")
    assert reply.parse_error is None  # JSON text after all: not an HTTP-1 failure
    assert {v.requirement for v in check_body(reply.content)} == {"BODY-1"}
