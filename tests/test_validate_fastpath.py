"""The fast path (msgspec + a few lines) must agree with the exhaustive path (jsonschema on the
bundled schema + semantic checks): it may hand a body over, but never accept what the schema
refuses, and it must accept the valid bodies Dynamo sends so that validation stays cheap."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from _validate_support import mutated_bodies, text, valid_bodies
from hypothesis import example, given, settings

from prime_rl_dynamo.validate import PATTERNS, check_body, check_body_exhaustive, validate_body


def _agree(doc: Any) -> None:
    raw = json.dumps(doc).encode()
    slow_violations = check_body_exhaustive(raw)
    assert check_body(raw) == slow_violations
    assert (check_body(doc) == []) == (slow_violations == [])
    if not slow_violations:  # the accept path and the reference build the same snapshot
        assert validate_body(raw) == validate_body(doc)


def _bare(instance_id: int, transport: dict[str, str]) -> dict[str, Any]:
    """A body of one worker with no URL, no routes and no world_size."""
    w = {"namespace": "d", "component": "c", "endpoint": "rl", "instance_id": instance_id}
    w.update(transport=transport, request_plane_url="dyn://d.c.rl", routes=[])
    return {"protocol_version": 1, "namespace": "d", "workers": [w]}


@pytest.mark.slow
@settings(max_examples=150)
@given(mutated_bodies())
@example(_bare(2**64, {"tcp": ""}))
@example(_bare(1, {"tcp": "", "http": ""}))
def test_fast_path_never_accepts_what_the_schema_refuses(doc: Any) -> None:
    _agree(doc)


@settings(max_examples=80)
@given(valid_bodies())
def test_fast_path_accepts_valid_bodies(doc: dict[str, Any]) -> None:
    raw = json.dumps(doc).encode()
    assert check_body_exhaustive(raw) == [], "the generator must make valid bodies"
    assert check_body(raw) == []
    assert validate_body(raw).namespace == doc["namespace"]


@given(text, text, text)
def test_request_plane_url_pattern_is_implied_by_the_list_3_equality(
    ns: str, comp: str, ep: str
) -> None:
    # The fast path skips this pattern because it checks request_plane_url == dyn://ns.comp.ep.
    assert re.search(PATTERNS["Worker.request_plane_url"], f"dyn://{ns}.{comp}.{ep}")
