"""Hostile bytes thrown at check_body, validate_body and ``prime-rl-dynamo validate``.

Cases: arbitrary bytes, deep nesting, huge numbers, repeated member names and text that is not
UTF-8, each built on a valid body so that the validator gets past the first byte. The properties:
nothing raises but the documented errors, the fast path never accepts what the exhaustive path
refuses, the two entry points agree, and the CLI exits 0 or 1 with printable output. (Linear time
is shown by the benchmark, ``python -m tools.bench.validation --hostile``, not asserted here.)
Deterministic under CI=true (the conftest profile derandomizes); bounded by max_examples.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile

from _body_support import worker
from hypothesis import example, given, settings
from hypothesis import strategies as st

from prime_rl_dynamo.cli import main
from prime_rl_dynamo.errors import ProtocolError
from prime_rl_dynamo.validate import Snapshot, check_body, check_body_exhaustive, validate_body
from prime_rl_dynamo.violation import Violation

WORKER = worker(
    admin_base_url="http://127.0.0.1:9203", routes=["pause_generation"], world_size=2, model="m"
)
VALID = json.dumps(
    {"protocol_version": 1, "namespace": "dynamo", "workers": [WORKER]}, separators=(",", ":")
).encode()
NAMES = [b'"protocol_version"', b'"namespace"', b'"workers"', b'"instance_id"', b'"world_size"',
         b'"admin_base_url"', b'"tcp"', b'"routes"', b'"model"', b'"x"']  # fmt: skip

#: Bytes that are not UTF-8 and escapes of lone surrogates (the last two: a pair, and a backslash).
NOT_UTF8 = [b"\xed\xa0\x80", b"\xff", b"\xc0\xaf", b"\xf4\x90\x80\x80", b"\x80", b"\\ud800",
            b"\\udfff", b"\\ud800\\u0041", b"\\ud83d\\ude00", b"\\\\ud800"]  # fmt: skip


@st.composite
def deep(draw: st.DrawFn) -> bytes:
    """The valid body with a nested value (arrays, objects or both) in a known or unknown member."""
    depth = draw(st.integers(1, 1500))
    opener, closer = draw(st.sampled_from([(b"[", b"]"), (b'{"a":', b"}"), (b'[{"a":', b"}]")]))
    nest = opener * depth + draw(st.sampled_from([b"1", b"[]", b'"s"'])) + closer * depth
    where = draw(st.sampled_from([b'"x":', b'"routes":', b'"model":', b'"transport":']))
    if where == b'"x":':
        return VALID.replace(b'"namespace":', b'"x":' + nest + b',"namespace":', 1)
    head, _, tail = VALID.partition(where)
    if where == b'"transport":':
        end = tail.index(b"}") + 1
    else:
        end = min(i for i in (tail.find(b","), tail.find(b"}")) if i >= 0)
    return head + where + nest + tail[end:]


@st.composite
def huge_numbers(draw: st.DrawFn) -> bytes:
    """A number of thousands of digits, or a huge exponent, in place of a known or unknown value."""
    digits = draw(st.integers(4000, 6000))
    number = draw(
        st.sampled_from(
            [
                b"9" * digits,
                b"-" + b"1" * digits,
                b"1" + b"0" * digits + b".5",
                b"1e999999",
                b"-1e-999999",
                b"1." + b"0" * digits,
            ]
        )
    )
    field = draw(st.sampled_from([b'"instance_id":7', b'"world_size":2', b'"protocol_version":1']))
    if draw(st.booleans()):
        return VALID.replace(field, field.split(b":")[0] + b":" + number, 1)
    return VALID.replace(b'"namespace":', b'"x":' + number + b',"namespace":', 1)


@st.composite
def repeated_names(draw: st.DrawFn) -> bytes:
    """A member written again, before its first occurrence, with another value."""
    name = draw(st.sampled_from(NAMES))
    value = draw(st.sampled_from([b"0", b"2", b'"x"', b"null", b"[]", b"{}", b'"http://u:p@h/"']))
    data = VALID
    positions = [i for i in range(len(data)) if data.startswith(name, i)]
    if not positions:
        return data
    at = draw(st.sampled_from(positions))
    escaped = name.replace(b"_", b"\\u005f", 1) if draw(st.booleans()) else name
    return data[:at] + escaped + b":" + value + b"," + data[at:]


@st.composite
def not_utf8(draw: st.DrawFn) -> bytes:
    """Another encoding, a byte order mark, bytes that are not UTF-8, or a lone surrogate escape."""
    kind = draw(st.integers(0, 3))
    if kind == 0:
        codec = draw(st.sampled_from(["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-8-sig"]))
        return VALID.decode().encode(codec)
    junk = draw(
        st.sampled_from(
            [
                b"\xed\xa0\x80",
                b"\xff",
                b"\xc0\xaf",
                b"\xf4\x90\x80\x80",
                b"\x80",
                b"\\ud800",
                b"\\udfff",
                b"\\ud800\\u0041",
                b"\\ud83d\\ude00",
                b"\\\\ud800",
            ]
        )
    )
    at = draw(st.sampled_from([b'"m"', b'"dynamo"', b'"rl"']))
    if kind == 1:
        return VALID.replace(at, at[:-1] + junk + b'"', 1)
    if kind == 2:
        return VALID.replace(b'"namespace":', b'"x":"' + junk + b'","namespace":', 1)
    return VALID.replace(b'"namespace":', b'"' + junk + b'":1,"namespace":', 1)


@st.composite
def spliced(draw: st.DrawFn) -> bytes:
    """Arbitrary bytes written over, inserted into or cut out of the valid body."""
    data = bytearray(VALID)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        blob = draw(st.binary(max_size=12))
        if draw(st.booleans()):
            data[at : at + len(blob)] = blob
        else:
            data[at:at] = blob
    return bytes(data)


hostile = st.one_of(st.binary(max_size=200), deep(), huge_numbers(), repeated_names(),
                    not_utf8(), spliced())  # fmt: skip


def _judge(data: bytes) -> list[Violation]:
    """The properties every body must have; returns check_body's verdict."""
    violations = check_body(data)
    assert isinstance(violations, list) and all(isinstance(v, Violation) for v in violations)
    slow = check_body_exhaustive(data)
    assert slow == violations, "check_body must give the exhaustive path's verdict"
    try:
        accepted = validate_body(data)
    except ProtocolError as exc:  # DialectError is a ProtocolError
        assert violations, "validate_body refused a body check_body accepts"
        assert exc.violations == violations
        str(exc).encode("utf-8")
    else:
        assert violations == [] and isinstance(accepted, Snapshot)
    for v in violations:
        str(v).encode("utf-8")  # printable on any terminal: no surrogate
        assert len(v.message) <= 1000
    return violations


@settings(max_examples=300)
@given(hostile)
@example(VALID)
@example(b"[" * 100_000)
@example(b'{"a":' * 50_000)
@example(VALID + b" \r\n\t")  # trailing whitespace is JSON
@example(b"\xff\xfe" + VALID)
@example(VALID.replace(b'"namespace":', b'"x":' + b"9" * 5000 + b',"namespace":', 1))
def test_hostile_bytes_raise_nothing_undocumented_and_both_paths_agree(data: bytes) -> None:
    _judge(data)


@settings(max_examples=40)
@given(hostile)
@example(b"\xed\xa0\x80")
@example(VALID.replace(b'"m"', b'"\\udc80"', 1))
def test_cli_validate_exits_0_or_1_with_printable_output(data: bytes) -> None:
    expected = 0 if not check_body(data) else 1
    fd, path = tempfile.mkstemp(suffix=".json")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        for argv in (["validate", path], ["validate", "--json", path]):
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(argv)
            assert code == expected, (argv, out.getvalue(), err.getvalue())
            (out.getvalue() + err.getvalue()).encode("utf-8")
            if "--json" in argv:
                json.loads(out.getvalue())
    finally:
        os.unlink(path)
