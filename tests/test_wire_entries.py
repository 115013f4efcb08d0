"""The wire module's helpers for listed workers: labels of broken entries, entries of views."""

from __future__ import annotations

from dataclasses import dataclass

from prime_rl_dynamo.wire import WORKER_FIELDS, WorkerId, entry_label, listed_entry


def test_a_broken_entry_is_named_as_far_as_it_can_be() -> None:
    complete = {"namespace": "dynamo", "component": "decode", "endpoint": "rl", "instance_id": 7}
    assert entry_label(complete) == "dynamo.decode.rl#7" == str(WorkerId.from_entry(complete))
    assert entry_label({"namespace": "dynamo", "instance_id": True}) == "dynamo.?.?#?"
    assert entry_label({"component": ["x"], "endpoint": "rl", "instance_id": 2**64}) == (
        f"?.?.rl#{2**64}"
    )
    assert entry_label([complete]) is None


@dataclass(frozen=True)
class _View:
    namespace: str = "dynamo"
    component: str = "prefill"
    endpoint: str = "rl"
    instance_id: int = 2**63 + 5
    routes: tuple[str, ...] = ("resume_generation", "pause_generation")
    system_url: str | None = "http://127.0.0.1:9001"
    admin_base_url: str | None = "http://127.0.0.1:9001/admin"
    model: str | None = "m"
    world_size: int | None = 2
    error: str | None = None


def test_listed_entry_reads_a_view_in_dynamos_order() -> None:
    entry = listed_entry(_View(), 9000)
    assert list(entry) == [k for k in WORKER_FIELDS if k != "error"]
    assert entry["transport"] == {"tcp": f"127.0.0.1:9000/{2**63 + 5:016x}/dynamo/prefill/rl"}
    assert entry["request_plane_url"] == "dyn://dynamo.prefill.rl"
    assert entry["routes"] == ["pause_generation", "resume_generation"]


def test_listed_entry_fields_override_the_view() -> None:
    assert "world_size" not in listed_entry(_View(), 9000, world_size=None)
    errored = listed_entry(_View(), 9000, error="engine is dead")
    assert list(errored) == [*WORKER_FIELDS[:6], "routes", "error"] and errored["routes"] == []
