"""The native NCCL lifecycle judge (conformance/native_lifecycle.py): pure functions of the planned
engines and the recorded calls, each rule with a recording that breaks it."""

from __future__ import annotations

from typing import Any

from conformance.native_lifecycle import event, init_problems, lifecycle_problems, native_fleet
from prime_rl_dynamo.suite.recording import RecordedRequest

ENGINES = [
    {"key": "dynamo.a#0", "label": "dynamo.a.rl#1"},
    {"key": "dynamo.b#0", "label": "dynamo.b.rl#2"},
]
INIT = ("system", "/engine/update/init_weight_transfer_engine", {"init_info": {"rank_offset": 1}})


def _call(engine: str, server: str, path: str, body: Any = None) -> RecordedRequest:
    return RecordedRequest(engine, server, "POST", path, "", {}, body, 0.0, status=200)


def _trainer_owned(engine: str) -> list[RecordedRequest]:
    """One engine's calls in Prime-RL's latest order (the orchestrator's reads included)."""
    steps = [
        INIT,
        ("system", "/engine/control/pause_generation", {"mode": "keep", "clear_cache": False}),
        ("system", "/engine/control/is_paused", {}),
        ("system", "/engine/control/get_weight_version", {}),
        ("system", "/engine/update/start_weight_update", {}),
        ("system", "/engine/update/update_weights", {"update_info": {"names": ["w"]}}),
        ("system", "/engine/update/finish_weight_update", {"weight_version": "1"}),
        ("system", "/engine/update/update_weight_version", {"new_version": "1"}),
        ("system", "/engine/control/get_weight_version", {}),
        ("system", "/engine/control/resume_generation", {}),
    ]
    return [_call(engine, *step) for step in steps]


def _both() -> list[RecordedRequest]:
    return [*_trainer_owned("dynamo.a#0"), *_trainer_owned("dynamo.b#0")]


def test_prime_rls_latest_order_passes_both_rules() -> None:
    assert init_problems(ENGINES, _both()) == []
    assert lifecycle_problems(ENGINES, _both()) == []


def test_an_admin_update_without_a_path_is_an_update_not_a_reload() -> None:
    calls = [
        _call(key, *step)
        for key in ("dynamo.a#0", "dynamo.b#0")
        for step in (
            ("admin", "/pause", None),
            ("admin", "/update_weights", {"weight_dir": None}),
            ("admin", "/resume", None),
        )
    ]
    assert lifecycle_problems(ENGINES, calls) == []


def test_a_second_init_from_the_orchestrator_fails_native_1() -> None:
    rpc = {"method": "init_weight_transfer_engine", "kwargs": {"init_info": {"rank_offset": 1}}}
    calls = [_call("dynamo.a#0", "admin", "/collective_rpc", rpc), *_both()]
    (problem,) = init_problems(ENGINES, calls)
    assert problem.startswith("dynamo.a.rl#1 was initialised 2 times")
    assert "collective_rpc" in problem and "init_weight_transfer_engine" in problem


def test_every_path_reload_form_fails_native_2() -> None:
    for path, body in (
        ("/update_weights", {"weight_dir": "/ckpt/step_1"}),
        ("/collective_rpc", {"method": "update_weights_from_path", "args": ["/ckpt/step_1"]}),
        ("/collective_rpc", {"method": "reload_weights", "kwargs": {"weights_path": "/ckpt"}}),
    ):
        calls = [*_both(), _call("dynamo.b#0", "admin", path, body)]
        problems = lifecycle_problems(ENGINES, calls)
        assert len(problems) == 1 and "reloads weights from a path" in problems[0], (path, problems)


def test_order_and_targets_fail_native_2() -> None:
    a, b = _trainer_owned("dynamo.a#0"), _trainer_owned("dynamo.b#0")
    # An update before the pause on engine a.
    early = [a[0], a[4], *a[1:4], *a[5:], *b]
    assert any("while the engine was not paused" in p for p in lifecycle_problems(ENGINES, early))
    # The version committed before the last update call.
    late = [*a[:7], a[7], a[5], *a[8:], *b]
    assert any("after the weight version was set" in p for p in lifecycle_problems(ENGINES, late))
    # Never resumed.
    left = [*a[:-1], *b]
    assert lifecycle_problems(ENGINES, left) == [
        "dynamo.a.rl#1 was left paused (no resume after its last pause)"
    ]
    # Engine b never updated (only paused and resumed).
    skipped = [*a, b[0], b[1], b[2], b[-1]]
    assert lifecycle_problems(ENGINES, skipped) == [
        "dynamo.b.rl#2 received no update call although other engines did"
    ]


def test_reads_are_not_lifecycle_events_and_a_native_fleet_lists_the_routes() -> None:
    assert event(_call("x", "system", "/engine/control/is_paused", {})) is None
    assert event(_call("x", "system", "/engine/control/get_weight_version", {})) is None
    fleet = native_fleet({"engines": [{"component": "c", "routes": ["pause_generation"]}]})
    (group,) = fleet["engines"]
    assert group["weight_transfer_backend"] == "nccl"
    assert group["routes"] == sorted(group["routes"]) and "control/is_paused" in group["routes"]
