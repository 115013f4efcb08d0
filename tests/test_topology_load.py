"""Topology files that would crash, hang or publish wrong data are refused at load time (issues 12, 13).

Non-UTF-8 text, deep nesting, YAML alias bombs, fleets too large to stand up, duplicate groups,
world sizes past WORKER-9's bound, layouts breaking RANK-7 and schedules naming unknown engines:
each gives one ConfigError naming the file, never a traceback or a 50 MB message.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from prime_rl_dynamo.errors import ConfigError
from prime_rl_dynamo.topology import MAX_ENGINES, load_topology, topology_from_dict


def write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def refused(path: Path) -> str:
    start = time.monotonic()
    with pytest.raises(ConfigError) as info:
        load_topology(path)
    assert time.monotonic() - start < 30.0  # did not hang
    message = str(info.value)
    assert str(path) in message
    assert len(message) < 2000
    return message


# --- unreadable files -----------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_file_that_is_not_utf8_is_refused(tmp_path: Path, suffix: str) -> None:
    path = write(tmp_path, "t" + suffix, b"engines:\n  - component: caf\xe9\n")
    message = refused(path)
    assert "not UTF-8" in message and "byte 0xe9 at offset 27" in message


@pytest.mark.parametrize(
    ("suffix", "text"),
    [
        (".json", '{"engines": [{"component": "a", "x": ' + "[" * 100_000 + "]" * 100_000 + "}]}"),
        (".yaml", "engines:\n- component: a\n  x: " + "[" * 100_000 + "]" * 100_000 + "\n"),
        (".json", '{"engines": [], "x": ' + "[" * 500 + "]" * 500 + "}"),
    ],
)
def test_deep_nesting_is_refused(tmp_path: Path, suffix: str, text: str) -> None:
    assert "nest" in refused(write(tmp_path, "t" + suffix, text))


def test_a_fleet_too_large_is_refused_at_once(tmp_path: Path) -> None:
    message = refused(write(tmp_path, "t.yaml", "engines:\n- component: a\n  count: 10000000\n"))
    assert "10000000 engines" in message and str(MAX_ENGINES) in message
    split = "engines:\n" + "".join(f"- component: c{i}\n  count: 3000\n" for i in range(2))
    assert "6000 engines" in refused(write(tmp_path, "s.yaml", split))


def test_a_file_that_is_too_big_is_refused_unread(tmp_path: Path) -> None:
    path = write(tmp_path, "t.json", '{"engines": []' + " " * (2 << 20) + "}")
    assert "larger than" in refused(path)


def test_dev_zero_is_refused_not_read_forever() -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero here")
    with pytest.raises(ConfigError, match="larger than"):
        load_topology("/dev/zero")


# --- a YAML alias bomb ----------------------------------------------------------------------------

BOMB = """\
a: &a ["x","x","x","x","x","x","x","x","x"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
engines: [{component: a, routes: *f}]
"""


def test_a_yaml_alias_bomb_is_refused_with_a_short_message(tmp_path: Path) -> None:
    assert len(BOMB) < 500
    message = refused(write(tmp_path, "bomb.yaml", BOMB))
    assert "alias" in message


def test_a_few_aliases_are_fine(tmp_path: Path) -> None:
    text = "x: &shape {tp: 2}\nengines:\n- {component: a, tp: 2}\n- {component: b, tp: 2}\n"
    with pytest.raises(ConfigError, match="x"):  # unknown top-level key, not an alias refusal
        load_topology(write(tmp_path, "ok.yaml", text))
    fine = "engines:\n- &g {component: a, tp: 2}\n- {component: b, tp: 2}\n"
    assert load_topology(write(tmp_path, "fine.yaml", fine)).groups[0].tp == 2


# --- YAML errors name the file --------------------------------------------------------------------


def test_yaml_syntax_errors_name_the_file_not_unicode_string(tmp_path: Path) -> None:
    message = refused(write(tmp_path, "broken.yaml", "engines:\n  - component: [a\n"))
    assert "<unicode string>" not in message
    assert "line 3, column 1" in message and "\n" not in message  # one line, with where


# --- the reference would publish wrong data -------------------------------------------------------


def test_two_groups_of_one_component_are_refused() -> None:
    data = {"engines": [{"component": "prefill", "count": 2}, {"component": "prefill"}]}
    with pytest.raises(ConfigError) as info:
        topology_from_dict(data, source="dup.yaml")
    message = str(info.value)
    assert "dup.yaml" in message and "dynamo.prefill" in message
    assert "/engines/0" in message and "/engines/1" in message


def test_same_component_in_two_namespaces_is_fine() -> None:
    topo = topology_from_dict(
        {"engines": [{"component": "p"}, {"component": "p", "namespace": "dynamo-b"}]}
    )
    assert len({e.key for e in topo.engines()}) == 2


@pytest.mark.parametrize(
    "group",
    [
        {"component": "a", "tp": 65536, "dp": 65536},
        {"component": "a", "tp": 2**16, "pp": 2**8, "pcp": 2**8},
    ],
)
def test_world_size_above_u32_is_refused(group: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="WORKER-9") as info:
        topology_from_dict({"engines": [group]})
    assert "4294967296" in str(info.value) and "4294967295" in str(info.value)


# --- RANK-7 at load time, schedules naming unknown engines ----------------------------------------


@pytest.mark.parametrize(
    ("group", "needle"),
    [
        ({"component": "a", "tp": 2, "world_size": 3}, "mp = tp*pp*pcp = 2 does not divide"),
        ({"component": "a", "tp": 2, "pp": 2, "world_size": 6}, "mp = tp*pp*pcp = 4"),
        ({"component": "a", "tp": 2, "dp": 2, "world_size": 6}, "tp*pp*pcp*dp = 4"),
    ],
)
def test_layouts_that_break_rank_7_are_refused(group: dict[str, Any], needle: str) -> None:
    with pytest.raises(ConfigError, match="RANK-7") as info:
        topology_from_dict({"engines": [group]}, source="t.yaml")
    assert needle in str(info.value) and "/engines/0" in str(info.value)


def test_layouts_that_keep_rank_7_load() -> None:
    topo = topology_from_dict(
        {
            "engines": [
                {"component": "a", "tp": 2, "world_size": 4},
                {"component": "b", "tp": 2, "dp": 2, "world_size": 4},
                {"component": "c", "world_size": 3},
            ]
        }
    )
    assert [g.engine_world_size for g in topo.groups] == [4, 4, 3]


def test_a_schedule_naming_an_unknown_engine_is_refused_at_load() -> None:
    data = {
        "engines": [{"component": "a", "count": 2}],
        "schedule": [{"at": 1, "action": "leave", "engine": "dynamo.a#7"}],
    }
    with pytest.raises(ConfigError) as info:
        topology_from_dict(data, source="s.yaml")
    assert "dynamo.a#7" in str(info.value) and "s.yaml" in str(info.value)
    assert "dynamo.a#0" in str(info.value)  # says which engines exist


def test_the_default_topology_still_loads() -> None:
    assert load_topology(None).inference_world_size == 16
    json.dumps([e.key for e in load_topology(None).engines()])
