"""validate_body / check_body / detect_dialect: the typed snapshot, exact u64 instance_ids, and
errors that list every violation with requirement ID, JSON pointer, worker label and message."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import _body_support
import msgspec
import pytest
from _body_support import body

from prime_rl_dynamo.errors import DialectError, ProtocolError
from prime_rl_dynamo.validate import (
    Snapshot,
    Worker,
    check_body,
    check_body_exhaustive,
    detect_dialect,
    json_pointer,
    validate_body,
)

SAMPLES = Path(__file__).resolve().parent / "data" / "samples"
PD = (SAMPLES / "dynamo-1.6.1-pd-fleet.json").read_bytes()


def worker(**kw: Any) -> dict[str, Any]:
    return _body_support.worker(**{"instance_id": 10431879732901135543, **kw})


@pytest.mark.parametrize("path", sorted(SAMPLES.glob("*.json")), ids=lambda p: p.name)
def test_every_real_sample_validates(path: Path) -> None:
    snapshot = validate_body(path.read_bytes())
    assert isinstance(snapshot, Snapshot)
    assert len(snapshot.workers) == len(json.loads(path.read_bytes())["workers"])


def test_snapshot_is_typed_frozen_and_exact_above_2_53() -> None:
    snapshot = validate_body(PD)
    first = snapshot.workers[0]
    assert isinstance(first, Worker)
    assert first.instance_id == 10431879732901135543  # > 2^53: a float would round it
    assert first.identity == ("dynamo", "decode", "rl", 10431879732901135543)
    assert first.label == "dynamo.decode.rl#10431879732901135543"
    assert first.transport.tcp is not None and first.transport.http is None
    assert first.routes == ("pause_generation", "resume_generation")
    assert first.system_url is None and first.model is None and first.error is None
    assert (first.admin_base_url, first.world_size) == ("http://127.0.0.1:9203/engine", 4)
    with pytest.raises(AttributeError):
        first.world_size = 8  # type: ignore[misc]
    assert isinstance(snapshot.workers, tuple)
    assert hash(snapshot) == hash(validate_body(PD))


def test_input_forms_agree() -> None:
    as_dict = json.loads(PD)
    assert validate_body(PD) == validate_body(PD.decode()) == validate_body(as_dict)
    assert validate_body(bytearray(PD)) == validate_body(memoryview(PD))


def test_fast_and_exhaustive_paths_build_the_same_snapshot() -> None:
    # A null in an unknown field is allowed: the fast path still takes the body (null probe)...
    doc = json.loads(PD)
    doc["workers"][0]["hint"] = None
    raw = json.dumps(doc).encode()
    assert check_body(raw) == []
    # ...as the exhaustive path does, and the snapshot is the body's without the unknown member.
    assert check_body_exhaustive(raw) == []
    assert validate_body(raw) == validate_body(PD) == validate_body(doc)


def test_null_in_a_known_optional_field_leaves_the_fast_path() -> None:
    doc = json.loads(PD)
    doc["workers"][1]["model"] = None
    assert check_body(json.dumps(doc).encode()) == check_body_exhaustive(json.dumps(doc))
    # A null optional is also the null-optionals variant of v1, named first (VERSION-1).
    assert [v.requirement for v in check_body(doc)] == ["VERSION-1", "WORKER-6"]


def test_optional_fields_encode_back_to_the_wire_form() -> None:
    snapshot = validate_body(PD)
    assert json.loads(msgspec.json.encode(snapshot)) == json.loads(PD)


def test_not_json_is_body_1() -> None:
    with pytest.raises(ProtocolError) as info:
        validate_body(b'{"protocol_version": 1,')
    (v,) = info.value.violations
    assert v.requirement == "BODY-1" and v.pointer == ""
    assert "expected a JSON document" in v.message
    assert info.value.body == b'{"protocol_version": 1,'
    assert [v.requirement for v in check_body(b"NaN")] == ["BODY-1"]
    assert [v.requirement for v in check_body(b"\xff\xfe")] == ["BODY-1"]


@pytest.mark.parametrize("data", [None, 5, [], "", "[]", set(), b"", {"workers": object()}])
def test_check_body_never_raises_for_content(data: Any) -> None:
    violations = check_body(data)
    assert violations and all(v.requirement.startswith(("BODY-", "DIALECT-")) for v in violations)


def test_every_violation_is_listed_with_pointer_worker_and_message() -> None:
    doc = body(
        worker(component="a", request_plane_url="dyn://dynamo.a.rl", admin_base_url=None),
        worker(routes=["resume_generation", "pause_generation"], admin_base_url="http://h/a"),
        worker(component="z", request_plane_url="dyn://dynamo.zz.rl", world_size=0,
               admin_base_url="http://h/b"),
    )  # fmt: skip
    with pytest.raises(ProtocolError) as info:
        validate_body(json.dumps(doc).encode())
    got = [(v.requirement, v.pointer, v.worker) for v in info.value.violations]
    label = "dynamo.{}.rl#10431879732901135543"
    assert got == [
        ("VERSION-1", "", None),
        ("WORKER-6", "/workers/0/admin_base_url", label.format("a")),
        ("LIST-4", "/workers/1/routes/1", label.format("decode")),
        ("LIST-3", "/workers/2/request_plane_url", label.format("z")),
        ("WORKER-9", "/workers/2/world_size", label.format("z")),
    ]
    messages = [v.message for v in info.value.violations][1:]
    assert "null-optionals" in info.value.violations[0].message
    assert "found null" in messages[0]
    assert "'dyn://dynamo.z.rl'" in messages[2] and "'dyn://dynamo.zz.rl'" in messages[2]
    assert messages[3] == "expected an integer in 1..2^32-1, found 0"
    assert info.value.requirements == ["VERSION-1", "WORKER-6", "LIST-4", "LIST-3", "WORKER-9"]
    assert str(info.value).startswith(
        "discovery body breaks VERSION-1, WORKER-6, LIST-4, LIST-3, WORKER-9: VERSION-1 at /: "
        "this listing says protocol_version 1 but sends null"
    )


def test_smg_shape_is_one_dialect_violation() -> None:
    smg = {
        "protocol_version": 1,
        "workers": [{"id": "5b0c6a4e", "engine": "vllm", "control_url": None, "health": "ready"}],
        "total": 1,
    }
    assert detect_dialect(smg) == "smg"
    with pytest.raises(DialectError) as info:
        validate_body(json.dumps(smg))
    assert [v.requirement for v in info.value.violations] == ["DIALECT-1", "VERSION-1"]
    assert "variant smg" in info.value.violations[1].message
    assert "SMG" in info.value.violations[1].message


@pytest.mark.parametrize(
    ("parsed", "dialect"),
    [
        (json.loads(PD), "dynamo-v1"),
        ({"protocol_version": 1, "namespace": "x", "workers": [], "total": 0}, "dynamo-v1"),
        ({"workers": [{"component": "a"}]}, "dynamo-v1"),
        ({"protocol_version": 1, "workers": [], "total": 0}, "smg"),
        ({"protocol_version": 1, "workers": [{"capabilities": {}}]}, "smg"),
        ({"protocol_version": 1, "workers": []}, "unknown"),
        ([], "unknown"),
        ("text", "unknown"),
    ],
)
def test_detect_dialect(parsed: object, dialect: str) -> None:
    assert detect_dialect(parsed) == dialect


def test_instance_id_order_is_numeric_even_above_2_63() -> None:
    big = 2**63
    ok = body(worker(instance_id=big - 1), worker(instance_id=big, admin_base_url="http://h/2"))
    assert check_body(ok) == []
    bad = body(worker(instance_id=big + 1), worker(instance_id=big, admin_base_url="http://h/2"))
    assert [v.requirement for v in check_body(bad)] == ["LIST-1"]


def test_integral_numbers_are_integers_as_json_schema_says() -> None:
    text = json.dumps(body(worker())).replace('"world_size": 4', '"world_size": 4.0')
    snapshot = validate_body(text)
    assert snapshot.workers[0].world_size == 4 and type(snapshot.workers[0].world_size) is int
    # ...except instance_id: a u64 written as a float is what WORKER-2 forbids
    text = text.replace("10431879732901135543", "10431879732901135543.0")
    assert [(v.requirement, v.pointer) for v in check_body(text)] == [
        ("WORKER-2", "/workers/0/instance_id")
    ]


def test_a_null_inside_a_string_is_not_a_null_value() -> None:
    doc = body(worker(model="null-model", admin_base_url="http://h/null"))
    assert validate_body(json.dumps(doc)).workers[0].model == "null-model"


def test_json_pointer_escapes_per_rfc_6901() -> None:
    assert json_pointer(["workers", 0, "a/b", "m~n"]) == "/workers/0/a~1b/m~0n"
    assert json_pointer([]) == ""


def test_namespace_scope_exact_and_prefix() -> None:
    prefix = body(worker(namespace="dynamo-a", request_plane_url="dyn://dynamo-a.decode.rl"))
    assert check_body({**prefix, "namespace": "dynamo-"}) == []
    assert [v.requirement for v in check_body(prefix)] == []  # "dynamo-a" starts with "dynamo"
    other = body(worker(namespace="other", request_plane_url="dyn://other.decode.rl"))
    (v,) = check_body(other)
    assert (v.requirement, v.pointer) == ("LIST-5", "/workers/0/namespace")
