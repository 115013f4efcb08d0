"""The capped reader's decoder (prime_rl_dynamo/_bounded.py): a compressed body is decoded whole
and intact or refused as one retried POLL-1 failure, as the content-encoding vectors say."""

from __future__ import annotations

import pytest
from _client_support import body, worker

from prime_rl_dynamo._bounded import BoundedDecoder
from prime_rl_dynamo.errors import TransportError

BODY = body(worker("decode", 7, admin="http://127.0.0.1:9203", model=None))


def test_deflate_follows_the_same_rule() -> None:
    import zlib

    whole = zlib.compress(BODY)
    decoder = BoundedDecoder("deflate", "http://h/")
    assert decoder.feed(whole[:7], 10**6) + decoder.feed(whole[7:], 10**6) == BODY
    decoder.finish()
    for broken in (whole[:-2], whole + b"x"):
        decoder = BoundedDecoder("deflate", "http://h/")
        with pytest.raises(TransportError, match="did not arrive intact"):
            decoder.feed(broken, 10**6)
            decoder.finish()


def test_the_content_encoding_vectors_hold() -> None:
    import base64

    from prime_rl_dynamo.resources import load_json

    cases = load_json("vectors/content-encoding.v1.json")["cases"]
    assert {c["decoded"] is None for c in cases} == {True, False}
    for case in cases:
        data = base64.b64decode(case["raw"])
        decoder = BoundedDecoder(case["content_encoding"], "http://h/")
        if case["decoded"] is None:
            with pytest.raises(TransportError) as caught:
                out = b"".join(decoder.feed(data[i : i + 5], 10**6) for i in range(0, len(data), 5))
                decoder.finish()
            assert (caught.value.requirement, caught.value.retryable) == ("POLL-1", True)
        else:
            out = b"".join(decoder.feed(data[i : i + 5], 10**6) for i in range(0, len(data), 5))
            decoder.finish()
            assert out == base64.b64decode(case["decoded"]), case["description"]
