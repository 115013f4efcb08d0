"""Hostile discovery bodies: each refused with a clear violation, never an exception, and
judged the same way by the fast path and the exhaustive path."""

from __future__ import annotations

import json
from typing import Any

import pytest
from _body_support import body, worker

from prime_rl_dynamo.errors import ProtocolError
from prime_rl_dynamo.validate import check_body, check_body_exhaustive, validate_body
from prime_rl_dynamo.violation import Violation


def raw(doc: Any) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode()


def ids(violations: list[Violation]) -> set[str]:
    return {v.requirement for v in violations}


def both_paths(data: bytes) -> list[Violation]:
    """check_body's verdict, after asserting that the fast path never accepts what it refuses."""
    violations = check_body(data)
    assert check_body_exhaustive(data) == violations
    if violations:
        with pytest.raises(ProtocolError):
            validate_body(data)
    else:
        validate_body(data)
    return violations


# --- an integral float as instance_id is WORKER-2, and LIST-1/LIST-2 are still judged -------------


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


# --- deep nesting is a BODY-1 violation on both paths, never a RecursionError ---------------------


@pytest.mark.parametrize("depth", [129, 985, 1000, 5000])
@pytest.mark.parametrize("where", ["unknown", "known"])
def test_deep_nesting_is_body_1(depth: int, where: str) -> None:
    nest = b"[" * depth + b"]" * depth
    if where == "unknown":
        data = raw(body(worker())).replace(b'"workers"', b'"x":' + nest + b',"workers"')
    else:
        data = raw(body(worker())).replace(b'["pause_generation","resume_generation"]', nest)
    violations = both_paths(data)
    assert [v.requirement for v in violations] == ["BODY-1"]
    assert "nesting deeper than 128" in violations[0].message


def test_nesting_up_to_the_limit_is_judged_as_usual() -> None:
    nest = b"[" * 125 + b"]" * 125  # + the body, workers and the worker: 128 levels
    data = raw(body(worker())).replace(b'"routes"', b'"x":' + nest + b',"routes"')
    assert both_paths(data) == []
    deeper = raw(body(worker())).replace(b'"routes"', b'"x":[' + nest + b'],"routes"')
    assert ids(both_paths(deeper)) == {"BODY-1"}


# --- UTF-8 only; no lone surrogate, encoded or escaped --------------------------------------------


@pytest.mark.parametrize(
    ("data", "offset"),
    [
        (
            raw(body(worker(model="m"))).replace(b'"m"', b'"\xed\xa0\x80"'),
            None,
        ),  # encoded surrogate
        (raw(body(worker(), x="m")).replace(b'"m"', b'"\xff"'), None),  # unknown member, not UTF-8
        (raw(body(worker(model="m"))).replace(b'"m"', b'"\\ud800"'), None),  # escaped lone high
        (raw(body(worker(), x="m")).replace(b'"m"', b'"a\\udc00"'), None),  # escaped lone low
        (
            raw(body(worker(), x="m")).replace(b'"m"', b'"\\ud800\\u0041"'),
            None,
        ),  # high, then no low
    ],
)
def test_lone_surrogates_and_bad_utf8_are_body_1_with_the_offset(data: bytes, offset: None) -> None:
    violations = both_paths(data)
    assert [v.requirement for v in violations] == ["BODY-1"]
    assert "offset" in violations[0].message
    str(violations[0]).encode("utf-8")  # printable anywhere: no surrogate in the message


def test_a_surrogate_pair_escape_is_fine() -> None:
    data = raw(body(worker(model="m"), x="m")).replace(b'"m"', b'"\\ud83d\\ude00"')
    assert both_paths(data) == []


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-8-sig"])
def test_other_encodings_are_body_1(codec: str) -> None:
    data = json.dumps(body(worker())).encode(codec)
    violations = both_paths(data)
    assert [v.requirement for v in violations] == ["BODY-1"]
    assert "UTF-8" in violations[0].message


def test_a_lone_surrogate_in_text_or_a_mapping_is_body_1() -> None:
    assert ids(check_body(json.dumps(body(worker(model="\ud800")), ensure_ascii=False))) == {
        "BODY-1"
    }
    assert ids(check_body(body(worker(), x="\udfff"))) == {"BODY-1"}
    assert ids(check_body(body(worker(model="\ud800")))) == {"BODY-1"}


# --- a member this document defines, repeated in one object, is BODY-6 ----------------------------


@pytest.mark.parametrize(
    ("data", "pointer", "name"),
    [
        (b'{"protocol_version":2,' + raw(body())[1:], "", "protocol_version"),
        (raw(body(worker())).replace(b'"workers":', b'"workers":[],"workers":'), "", "workers"),
        (raw(body(worker())).replace(b'"instance_id":7', b'"instance_id":8,"instance_id":7'),
         "/workers/0", "instance_id"),
        (raw(body(worker())).replace(b'"world_size":4', b'"world_size":0,"world_size":4'),
         "/workers/0", "world_size"),
        (raw(body(worker())).replace(b'"admin_base_url":', b'"admin_base_url":"http://u:p@h/","admin_base_url":'),
         "/workers/0", "admin_base_url"),
        (raw(body(worker())).replace(b'{"tcp":', b'{"tcp":"a","tcp":'), "/workers/0/transport", "tcp"),
    ],
)  # fmt: skip
def test_repeated_member_names_are_body_6(data: bytes, pointer: str, name: str) -> None:
    violations = both_paths(data)
    assert ("BODY-6", pointer) in {(v.requirement, v.pointer) for v in violations}
    assert name in next(v.message for v in violations if v.requirement == "BODY-6")


def test_repeated_names_inside_unknown_members_are_ignored_like_serde() -> None:
    data = raw(body(worker(), x={"a": 1})).replace(b'{"a":1}', b'{"a":1,"a":2}')
    assert both_paths(data) == []
    unknown = raw(body(worker(x=1))).replace(b'"x":1', b'"x":1,"x":2')
    assert both_paths(unknown) == []


def test_an_escaped_name_is_the_same_name() -> None:
    data = raw(body(worker())).replace(b'"instance_id":7', b'"instance_id":8,"instance\\u005fid":7')
    assert "BODY-6" in ids(both_paths(data))


# --- integers beyond Python's 4,300-digit limit are judged like any other -------------------------


def test_a_huge_integer_in_an_unknown_member_is_ignored_on_both_paths() -> None:
    data = raw(body(worker(), x=1)).replace(b'"x":1', b'"x":' + b"9" * 5000)
    assert both_paths(data) == []


def test_a_huge_integer_does_not_hide_a_real_violation() -> None:
    data = raw(body(worker(world_size=0), x=1)).replace(b'"x":1', b'"x":' + b"9" * 5000)
    assert ids(both_paths(data)) == {"WORKER-9"}
    big = raw(body(worker())).replace(b'"instance_id":7', b'"instance_id":' + b"9" * 5000)
    violations = both_paths(big)
    assert ids(violations) == {"WORKER-2"}
    assert all(len(v.message) < 400 for v in violations)


@pytest.mark.parametrize(
    "argv",
    [["validate"], ["validate", "--json"], ["plan", "-W", "4"], ["plan", "-W", "4", "--json"]],
)
def test_cli_refuses_a_lone_surrogate_without_crashing(
    argv: list[str], tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from prime_rl_dynamo.cli import main

    path = tmp_path / "body.json"
    path.write_bytes(raw(body(worker(model="m"))).replace(b'"m"', b'"\\udc80"'))
    code = main([*argv, str(path)])
    out, err = capsys.readouterr()
    assert code == 1
    assert "BODY-1" in out + err
    (out + err).encode("utf-8")


# --- hostile routes cost linear time, and every message stays short -------------------------------


@pytest.mark.parametrize(
    "routes",
    [
        [{"a": i % 1000} for i in range(4000)],  # unhashable and unsortable: pairwise in jsonschema
        [[i % 500, {"b": None}] for i in range(4000)],
        ["x" * 50] * 3000,  # one long string repeated
    ],
    ids=["objects", "arrays", "strings"],
)
def test_hostile_routes_give_short_messages(routes: list[Any]) -> None:
    violations = both_paths(raw(body(worker(routes=routes))))
    assert "WORKER-5" in ids(violations)
    assert all(len(v.message) <= 500 for v in violations), max(len(v.message) for v in violations)
    unique = [v for v in violations if "repeated" in v.message]
    assert len(unique) == 1 and unique[0].pointer == "/workers/0/routes"


def test_repeated_routes_are_named_with_json_equality() -> None:
    violations = check_body(body(worker(routes=[{"a": 1}, {"a": 1.0}, {"a": True}, [1], [True]])))
    unique = next(v for v in violations if "repeated" in v.message)
    assert '{"a": 1}' in unique.message  # 1 and 1.0 are equal JSON numbers
    assert "true" not in unique.message.split("repeated")[1]  # true is not 1


# --- WORKER-8 means a URL the pool can use; LIST-6 compares what the pool calls -------------------

UNUSABLE_ADMIN_URLS = [
    "http://h:abc/", "http://h:8000:9000/", "http://[::1/", "http://999.1.1.1/", "http://1.2/",
    "http://h:0/", "http://h:65536/", "http://h:08000/", "http://[zz::1]/", "http://[:::::]/", "http://a..b/",
    "http://xn--/", "http://xn--a/", "http://xn--zz-/", "http://ok.xn--/", "HTTP://XN--/",
]  # fmt: skip
USABLE_ADMIN_URLS = [
    "http://h", "https://h:1/", "http://10.0.0.5:8000/admin", "http://[::1]:9000",
    "http://[2001:db8::1]/x", "http://h.example./",
    "http://xn--bcher-kva.example:8000/", "http://my_host-1:65535/a/b", "HTTP://H.EXAMPLE",
]  # fmt: skip


@pytest.mark.parametrize("url", UNUSABLE_ADMIN_URLS)
def test_unusable_admin_urls_break_worker_8(url: str) -> None:
    violations = both_paths(raw(body(worker(admin_base_url=url))))
    assert [(v.requirement, v.pointer) for v in violations] == [
        ("WORKER-8", "/workers/0/admin_base_url")
    ]


@pytest.mark.parametrize("url", USABLE_ADMIN_URLS)
def test_usable_admin_urls_are_accepted_and_the_pool_takes_them(url: str) -> None:
    from prime_rl_dynamo.admin import AdminPool

    assert both_paths(raw(body(worker(admin_base_url=url)))) == []
    AdminPool.check_url(url)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("http://h:8000/a", "http://H:8000/a"),
        ("http://h/a", "http://h:80/a"),
        ("https://h/a", "https://h:443/a/"),
        ("http://h:8000/a", "http://h:8000/%61"),
        ("http://h:8000/", "http://h:8000"),
        ("http://h:8000/a", "HTTP://h:8000/a//"),
        ("http://[::1]:1/", "http://[0:0::1]:1"),
        ("http://h.:1", "http://h:1"),
    ],
)
def test_list_6_compares_the_url_the_pool_calls(first: str, second: str) -> None:
    two = body(worker(admin_base_url=first), worker(instance_id=8, admin_base_url=second))
    assert [(v.requirement, v.pointer) for v in both_paths(raw(two))] == [
        ("LIST-6", "/workers/1/admin_base_url")
    ]


def test_list_6_keeps_different_endpoints_apart() -> None:
    urls = ["http://h:8000/a", "http://h:8001/a", "https://h:8000/a", "http://h:8000/A",
            "http://h:8000/a/b", "http://g:8000/a", "http://h:8000/%2F"]  # fmt: skip
    workers = [worker(instance_id=i, admin_base_url=u) for i, u in enumerate(urls)]
    assert both_paths(raw(body(*workers))) == []


def test_an_admin_url_holding_a_newline_is_not_two_canonical_urls() -> None:
    glued = "http://10.0.0.1:1/a\nhttp://10.0.0.2:2/b"
    assert ids(both_paths(raw(body(worker(admin_base_url=glued))))) == {"WORKER-8"}
    assert ids(both_paths(raw(body(worker(admin_base_url="http://10.0.0.1:1/a\n"))))) == {
        "WORKER-8"
    }


def test_bad_route_items_are_listed_up_to_twenty_then_counted() -> None:
    violations = both_paths(raw(body(worker(routes=[{"a": i} for i in range(100)]))))
    items = [v for v in violations if v.pointer.startswith("/workers/0/routes/")]
    assert len(items) == 21
    assert items[-1].pointer == "/workers/0/routes/20"
    assert "and 79 more such items after it" in items[-1].message
    assert {v.requirement for v in violations} == {"WORKER-5"}
