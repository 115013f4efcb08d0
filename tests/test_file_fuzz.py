"""Hostile bytes through every file input (issue 22): waiver files, reports given to ``report
diff``, schemas given to ``spec diff``, topology files. Only project errors come out, and the
commands exit 2 for what they cannot read (bounded for CI: derandomized, a few seconds per kind).
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from pathlib import Path
from typing import Any

from _report_support import report_of
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conformance.waivers import WaiverError, load_waivers
from prime_rl_dynamo.cli import main
from prime_rl_dynamo.errors import ConfigError
from prime_rl_dynamo.exitcodes import ExitCode
from prime_rl_dynamo.topology import load_topology

FUZZ = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
WORK = Path(tempfile.mkdtemp(prefix="prd-fuzz-"))
REPO = Path(__file__).resolve().parent.parent

_PIECES = [
    b"\\ud800",
    b"\x00",
    b"\xff",
    b"\x1b[2J",
    b"[" * 3000,
    b"&a ",
    b"*a",
    b"1e999",
    b"NaN",
    b"\t",
    b'"',
    b"{",
    b"}",
    b": ",
    b"- ",
    b"\n",
    b"null",
    b"-1",
    b'"FAIL"',
    b"2027-02-30",
    b"2030-01-01 10:00:00",
    b'{"$ref": "#"}',
]
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _paths(value: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [here]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*here, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*here, i))
    return out


def _replaced(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    copy = json.loads(json.dumps(doc))
    node = copy
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return copy


@st.composite
def hostile(draw: Any, valid: bytes) -> bytes:
    """Bytes near a valid file: raw garbage, the file with hostile pieces spliced in, or the
    document with one member replaced by any JSON value."""
    kind = draw(st.sampled_from(["binary", "splice", "member"]))
    if kind == "binary":
        return bytes(draw(st.binary(max_size=300)))
    if kind == "splice":
        at = draw(st.integers(0, len(valid)))
        cut = draw(st.integers(0, 30))
        pieces = draw(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=4))
        return valid[:at] + b"".join(pieces) + valid[at + cut :]
    doc = json.loads(valid)
    path = draw(st.sampled_from(_paths(doc)))
    return json.dumps(_replaced(doc, path, draw(_JSON))).encode()


def _run(*args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, err.getvalue()


def _is_json_object(data: bytes) -> bool:
    try:
        return isinstance(json.loads(data), dict)
    except (ValueError, RecursionError):
        return False


_REPORT = json.dumps(
    report_of(("LIST-1::body", "pass", "fine"), ("LIST-2::body", "fail", "bad"))
).encode()


@FUZZ
@given(hostile(_REPORT))
@example(b"[" * 100_000)
@example(_REPORT.replace(b'"status": "pass"', b'"status": null'))
def test_report_diff_takes_any_bytes(data: bytes) -> None:
    _diff_takes("report", _REPORT, data, "json")


def _diff_takes(command: str, valid: bytes, data: bytes, suffix: str) -> None:
    """``COMMAND diff OLD NEW`` with NEW hostile: exit 0, 1 or 2, never a traceback; 2 naming
    NEW when it is not even a JSON object."""
    old, new = WORK / f"old.{suffix}", WORK / f"new.{suffix}"
    old.write_bytes(valid)
    new.write_bytes(data)
    code, err = _run(command, "diff", str(old), str(new))
    assert code in (ExitCode.OK, ExitCode.FAIL, ExitCode.USAGE)
    assert "Traceback" not in err
    if not _is_json_object(data):
        assert code == ExitCode.USAGE and str(new) in err


_SCHEMA = (REPO / "schema" / "rl-workers.v1.schema.json").read_bytes()
_OPENAPI = (REPO / "schema" / "openapi" / "rl-frontend.openapi.json").read_bytes()


@FUZZ
@given(hostile(_SCHEMA))
@example(b'{"$ref": "#"}')
@example(b'{"type": "object", "properties": {"protocol_version": true}}')
def test_spec_diff_takes_any_bytes(data: bytes) -> None:
    _diff_takes("spec", _SCHEMA, data, "schema.json")


@FUZZ
@given(hostile(_OPENAPI))
def test_spec_diff_takes_any_openapi_bytes(data: bytes) -> None:
    _diff_takes("spec", _OPENAPI, data, "openapi.json")


_WAIVERS = json.dumps(
    {
        "waivers": [
            {
                "requirement": "LIST-6",
                "check": "LIST-6::body",
                "reason": "known",
                "expires": "2030-01-01",
            }
        ]
    }
).encode()


@FUZZ
@given(hostile(_WAIVERS))
@example(b"a: &a [x, x]\nb: &b [*a, *a]\nwaivers: []\n")
def test_a_waiver_file_of_any_bytes_is_read_or_refused_naming_it(data: bytes) -> None:
    path = WORK / "w.yaml"
    path.write_bytes(data)
    try:
        load_waivers(path)
    except WaiverError as exc:
        assert str(path) in str(exc)


@settings(FUZZ, max_examples=5)
@given(hostile(_WAIVERS))
def test_conformance_refuses_a_bad_waiver_file_with_exit_2(data: bytes) -> None:
    path = WORK / "w2.yaml"
    path.write_bytes(data)
    try:
        load_waivers(path)
        return
    except WaiverError:
        pass
    code, err = _run("conformance", "http://127.0.0.1:9", "--waivers", str(path), "-q")
    assert code == ExitCode.USAGE
    assert "Traceback" not in err


_TOPOLOGY = json.dumps(
    {
        "version": 1,
        "namespace": "dynamo",
        "seed": 0,
        "engines": [{"component": "prefill", "count": 2, "tp": 2}],
    }
).encode()


@FUZZ
@given(hostile(_TOPOLOGY))
def test_a_topology_file_of_any_bytes_is_read_or_refused(data: bytes) -> None:
    path = WORK / "t.json"
    path.write_bytes(data)
    with contextlib.suppress(ConfigError):  # a refusal is a project error, nothing else
        load_topology(path)
