"""Hostile discovery bodies (issue 12): each refused with a clear violation, never an exception, and
judged the same way by the fast path and the exhaustive path."""

from __future__ import annotations

import json
from typing import Any

import pytest

from prime_rl_dynamo.errors import ProtocolError, Violation
from prime_rl_dynamo.validate import _exhaustive_text, _fast, check_body, validate_body


def worker(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "namespace": "dynamo",
        "component": "decode",
        "endpoint": "rl",
        "instance_id": 7,
        "transport": {"tcp": "127.0.0.1:44065/7/dynamo/decode/rl"},
        "request_plane_url": "dyn://dynamo.decode.rl",
        "admin_base_url": "http://127.0.0.1:9203/engine",
        "routes": ["pause_generation", "resume_generation"],
        "world_size": 4,
    }
    base.update(kw)
    return {k: v for k, v in base.items() if v is not ...}


def body(*workers: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return {"protocol_version": 1, "namespace": "dynamo", "workers": list(workers), **kw}


def raw(doc: Any) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode()


def ids(violations: list[Violation]) -> set[str]:
    return {v.requirement for v in violations}


def both_paths(data: bytes) -> list[Violation]:
    """check_body's verdict, after asserting that the fast path never accepts what it refuses."""
    violations = check_body(data)
    slow, _ = _exhaustive_text(data)
    assert slow == violations
    if _fast(data) is not None:
        assert violations == [], f"fast path accepted what the exhaustive path refuses: {slow}"
    with pytest.raises(ProtocolError) if violations else _no_raise():
        validate_body(data)
    return violations


class _no_raise:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return False


# --- item 15: an integral float as instance_id is WORKER-2, and LIST-1/LIST-2 are still judged ----


@pytest.mark.parametrize("written", ["1.0", "1e0", "1.0e19", "10000000000000000000.0"])
def test_float_instance_id_is_worker_2_and_order_is_still_judged(written: str) -> None:
    value = int(float(written)) if "e19" not in written else 10**19
    other = worker(instance_id=value)
    top = 2**64 - 1
    doc = raw(body(worker(instance_id=top), other, worker(instance_id=top)))
    # the middle worker's instance_id spelled as a float literal, with the same value
    data = doc.replace(f'"instance_id":{value},'.encode(), f'"instance_id":{written},'.encode())
    assert data != doc
    violations = both_paths(data)
    where = {(v.requirement, v.pointer) for v in violations}
    assert ("WORKER-2", "/workers/1/instance_id") in where
    assert ("LIST-1", "/workers/1") in where  # value < 2^64-1: out of order
    assert ("LIST-2", "/workers/2") in where  # the third repeats the first
    message = next(v.message for v in violations if v.requirement == "WORKER-2")
    assert "integer" in message and written in message


def test_float_instance_id_duplicates_an_integer_one() -> None:
    data = raw(body(worker(instance_id=5), worker(instance_id=5))).replace(
        b'"instance_id":5,', b'"instance_id":5.0,', 1
    )
    where = {(v.requirement, v.pointer) for v in both_paths(data)}
    assert where == {("WORKER-2", "/workers/0/instance_id"), ("LIST-2", "/workers/1"),
                     ("LIST-6", "/workers/1/admin_base_url")}  # fmt: skip
