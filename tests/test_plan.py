"""Rank plans: canonical order, offsets per convention, refusals, and the even-split regression."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from prime_rl_dynamo.errors import ConfigError, TopologyError
from prime_rl_dynamo.plan import (
    BroadcastPlan,
    Convention,
    EnginePlan,
    Rendezvous,
    canonical_order,
    check_rendezvous,
    plan_broadcast,
    worker_rank,
)
from prime_rl_dynamo.wire import WorkerId


@dataclass(frozen=True)
class W:
    """A minimal worker: what plan_broadcast reads."""

    component: str
    instance_id: int
    world_size: int | None
    namespace: str = "dynamo"
    endpoint: str = "rl"
    admin_base_url: str | None = None


def fleet(sizes: list[int]) -> list[W]:
    # Components named so that list order is canonical order.
    return [
        W(f"c{i:03d}", 10 + i, s, admin_base_url=f"http://127.0.0.1:{9000 + i}")
        for i, s in enumerate(sizes)
    ]


def even_split(n: int, world: int) -> list[int]:
    """The even split i * (W // n): offsets that ignore per-engine world sizes."""
    return [i * (world // n) for i in range(n)]


def test_even_split_regression_2_4_1() -> None:
    """World sizes [2, 4, 1] need offsets [0, 2, 6], not the even split's [0, 2, 4]."""
    workers = fleet([2, 4, 1])
    plan = plan_broadcast(workers, 7, Convention.PRIME_NCCL)
    assert plan.rank_offsets == [0, 2, 6]
    assert even_split(3, 7) == [0, 2, 4]
    assert plan.rank_offsets != even_split(3, 7)
    assert [list(e.ranks) for e in plan.engines] == [[0, 1], [2, 3, 4, 5], [6]]
    assert plan.group_world_size == 8
    # The even split cannot even be built as a plan: rank 4 twice, rank 6 by nobody.
    with pytest.raises(TopologyError) as info:
        BroadcastPlan(
            convention=Convention.PRIME_NCCL,
            inference_world_size=7,
            engines=tuple(
                EnginePlan(e.identity, e.admin_base_url, e.world_size, off, off)
                for e, off in zip(plan.engines, even_split(3, 7), strict=True)
            ),
        )
    assert info.value.requirement == "RANK-6"
    assert "[4]" in str(info.value) and "[6]" in str(info.value)


def test_native_nccl_offsets_start_at_one() -> None:
    plan = plan_broadcast(fleet([2, 4, 1]), 7, "vllm-native-nccl")
    assert plan.rank_offsets == [1, 3, 7]
    assert plan.group_world_size == 8
    assert plan.trainer_rank == 0
    assert [list(e.ranks) for e in plan.engines] == [[0, 1], [2, 3, 4, 5], [6]]


def test_nixl_offsets_from_zero() -> None:
    plan = plan_broadcast(fleet([2, 4, 1]), 7, "nixl")
    assert plan.rank_offsets == [0, 2, 6]
    assert plan.trainer_rank is None
    assert plan.group_world_size == 7


def test_canonical_order_decides_offsets() -> None:
    """Example B: arrival order prefill/20, backend/10, decode/5 -> backend, decode, prefill."""
    workers = [W("prefill", 20, 2), W("backend", 10, 4), W("decode", 5, 1)]
    plan = plan_broadcast(workers, 7)
    assert [e.identity[1] for e in plan.engines] == ["backend", "decode", "prefill"]
    assert plan.rank_offsets == [0, 4, 5]


def test_instance_id_sorted_as_integer_above_2_53() -> None:
    big = 2**63 + 5
    workers = [W("decode", big, 1), W("decode", 9, 1), W("decode", 2**53 + 1, 1)]
    plan = plan_broadcast(workers, 3)
    assert [e.identity[3] for e in plan.engines] == [9, 2**53 + 1, big]
    assert plan.engines[2].label == f"dynamo.decode.rl#{big}"


def test_native_refuses_multi_process_trainer() -> None:
    with pytest.raises(TopologyError) as info:
        plan_broadcast(fleet([1, 1]), 2, Convention.VLLM_NATIVE_NCCL, trainer_world_size=2)
    assert info.value.requirement == "RANK-4"
    assert "rank 1" in str(info.value)
    # Prime's broadcaster: only the trainer master joins, so a bigger trainer is fine.
    assert plan_broadcast(
        fleet([1, 1]), 2, Convention.PRIME_NCCL, trainer_world_size=8
    ).rank_offsets == [0, 1]


@pytest.mark.parametrize(
    ("sizes", "world", "needle"),
    [
        ([2, 4], 7, "sum to 6, expected inference_world_size 7"),
        ([2, 4, 2], 7, "sum to 8"),
        ([2, 0], 2, "world_size=0"),
        ([2, -1], 1, "world_size=-1"),
    ],
)
def test_refuses_bad_sizes(sizes: list[int], world: int, needle: str) -> None:
    with pytest.raises(TopologyError) as info:
        plan_broadcast(fleet(sizes), world)
    assert info.value.requirement == "RANK-2"
    assert needle in str(info.value)
    assert f"dynamo.c{len(sizes) - 1:03d}.rl#{9 + len(sizes)}" in str(info.value)


def test_refuses_missing_world_size_and_bool() -> None:
    with pytest.raises(TopologyError, match=r"dynamo\.x\.rl#1 \(world_size=None\)"):
        plan_broadcast([W("x", 1, None), W("y", 2, 1)], 1)
    with pytest.raises(TopologyError, match="world_size=True"):
        plan_broadcast([W("x", 1, True)], 1)


@pytest.mark.parametrize("world", [0, -3, None, True, 2.0])
def test_refuses_bad_inference_world_size(world: object) -> None:
    with pytest.raises(TopologyError) as info:
        plan_broadcast(fleet([1]), world, "prime-nccl")  # type: ignore[arg-type]
    assert info.value.requirement == "RANK-2"


def test_refuses_empty_duplicates_and_shared_admin_url() -> None:
    with pytest.raises(TopologyError, match="no engines") as info:
        plan_broadcast([], 4)
    assert info.value.requirement == "RANK-2"
    with pytest.raises(TopologyError, match=r"dynamo\.a\.rl#1") as info:
        plan_broadcast([W("a", 1, 1), W("a", 1, 1)], 2)
    assert info.value.requirement == "LIST-2"
    url = "http://127.0.0.1:9000"
    with pytest.raises(TopologyError, match=r"dynamo\.b\.rl#2 -> http") as info:
        plan_broadcast([W("a", 1, 1, admin_base_url=url), W("b", 2, 1, admin_base_url=url)], 2)
    assert info.value.requirement == "LIST-6"


def test_unknown_convention_is_config_error() -> None:
    with pytest.raises(ConfigError, match="prime-nccl, vllm-native-nccl, nixl"):
        plan_broadcast(fleet([1]), 1, "gloo")


def test_init_requests_per_convention() -> None:
    prime = plan_broadcast(fleet([2, 4, 1]), 7, "prime-nccl")
    path, body = prime.init_request(
        prime.engines[1], Rendezvous(host="10.0.0.1", port=29500, timeout=60)
    )
    assert path == "/init_broadcaster"
    assert body == {
        "host": "10.0.0.1",
        "port": 29500,
        "rank_offset": 2,
        "inference_world_size": 7,
        "engine_world_size": 4,
        "timeout": 60,
        "quantize_in_weight_transfer": False,
    }
    nixl = plan_broadcast(fleet([2, 4, 1]), 7, "nixl")
    with pytest.raises(ConfigError, match="session_id"):
        nixl.init_request(nixl.engines[0], Rendezvous(host="h", port=1, timeout=1))
    _, body = nixl.init_request(
        nixl.engines[2], Rendezvous(host="h", port=1, timeout=1, session_id="s1")
    )
    assert body["session_id"] == "s1" and body["rank_offset"] == 6
    native = plan_broadcast(fleet([2, 4, 1]), 7, "vllm-native-nccl")
    path, body = native.init_request(native.engines[2], Rendezvous(host="h", port=5, timeout=9))
    assert path == "/collective_rpc"
    assert body["method"] == "init_weight_transfer_engine"
    assert body["kwargs"]["init_info"] == {
        "master_address": "h",
        "master_port": 5,
        "rank_offset": 7,
        "world_size": 8,
    }


def test_init_requests_via_vllm_rpc_carry_the_same_fields_as_keywords() -> None:
    for convention in ("prime-nccl", "nixl"):
        plan = plan_broadcast(fleet([2, 4, 1]), 7, convention)
        engine = plan.engines[1]
        _, direct = plan.init_request(
            engine, Rendezvous(host="h", port=1, timeout=3, session_id="s")
        )
        path, rpc = plan.init_request(
            engine, Rendezvous(host="h", port=1, timeout=3, session_id="s", via_rpc=True)
        )
        assert path == "/collective_rpc"
        assert rpc == {"method": "init_broadcaster", "args": [], "kwargs": direct, "timeout": 3}
    native = plan_broadcast(fleet([2, 4, 1]), 7, "vllm-native-nccl")
    assert native.init_request(
        native.engines[0], Rendezvous(host="h", port=1, timeout=3, via_rpc=True)
    ) == native.init_request(native.engines[0], Rendezvous(host="h", port=1, timeout=3))


@pytest.mark.parametrize(
    ("host", "port", "timeout", "named"),
    [
        ("", 29500, 30, "host must be"),
        (None, 29500, 30, "host must be"),
        ("h", 0, 30, "port must be"),
        ("h", 65536, 30, "port must be"),
        ("h", True, 30, "port must be"),
        ("h", 29500, 0, "timeout must be"),
        ("h", 29500, float("nan"), "timeout must be"),
        ("h", 29500, True, "timeout must be"),
    ],
)
def test_a_rendezvous_that_cannot_meet_is_refused(
    host: object, port: object, timeout: object, named: str
) -> None:
    with pytest.raises(ConfigError, match=named):
        Rendezvous(host, port, timeout)  # type: ignore[arg-type]
    Rendezvous("h", 29500, 30)  # the counterpart: usable coordinates are kept


def test_a_rendezvous_is_refused_in_the_callers_words() -> None:
    names = ("master_address", "master_port")
    with pytest.raises(ConfigError, match=r"^master_address must be"):
        check_rendezvous("", 1, names=names)
    with pytest.raises(ConfigError, match=r"^master_port must be"):
        check_rendezvous("h", 0, names=names)
    check_rendezvous("h", 1, names=names)


def test_to_dict_lists_rank_ranges() -> None:
    data = plan_broadcast(fleet([2, 4, 1]), 7).to_dict()
    assert data["group_world_size"] == 8
    assert [e["ranks"] for e in data["engines"]] == [[0, 2], [2, 6], [6, 7]]
    assert data["engines"][0]["label"] == "dynamo.c000.rl#10"


# --- worker_rank (RANK-7) ---------------------------------------------------------------------


def test_worker_rank_example_tp2_dp2() -> None:
    """E1 of example A: offset 2, ws 4, TP=2, DP=2 -> ranks {2, 3, 4, 5}."""
    ranks = {
        worker_rank(
            rank_offset=2,
            engine_world_size=4,
            inference_world_size=7,
            local_rank=lr,
            dp_index=dp,
            tp=2,
        )
        for dp in range(2)
        for lr in range(2)
    }
    assert ranks == {2, 3, 4, 5}


def test_worker_rank_native_numbering() -> None:
    # Native: the last engine's offset is 7 = W; its only rank is NCCL rank 7.
    assert (
        worker_rank(
            rank_offset=7,
            engine_world_size=1,
            inference_world_size=7,
            local_rank=0,
            convention="vllm-native-nccl",
        )
        == 7
    )
    with pytest.raises(TopologyError, match="group's"):
        worker_rank(rank_offset=7, engine_world_size=1, inference_world_size=7, local_rank=0)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"engine_world_size": 6, "tp": 4}, "not divisible"),
        ({"engine_world_size": 4, "tp": 2, "dp_index": 2}, "dp_index 2 outside [0, 2)"),
        ({"engine_world_size": 4, "tp": 2, "data_parallel_size": 3}, "data_parallel_size 3"),
        ({"engine_world_size": 4, "tp": 0}, "tp=0"),
        ({"engine_world_size": 4, "local_rank": -1}, "local_rank"),
        ({"engine_world_size": 4, "rank_offset": 5, "dp_index": 3}, "rank 8 falls outside"),
    ],
)
def test_worker_rank_refusals(kwargs: dict[str, int], needle: str) -> None:
    args = {"rank_offset": 2, "inference_world_size": 7, "local_rank": 0}
    args.update(kwargs)
    with pytest.raises(TopologyError) as info:
        worker_rank(**args)  # type: ignore[arg-type]
    assert info.value.requirement == "RANK-7"
    assert needle in str(info.value)


# --- properties ---------------------------------------------------------------------------------

sizes_st = st.lists(st.integers(min_value=1, max_value=16), min_size=1, max_size=24)


@st.composite
def workers_st(draw: st.DrawFn) -> list[W]:
    sizes = draw(sizes_st)
    ids = draw(
        st.lists(st.integers(0, 2**64 - 1), min_size=len(sizes), max_size=len(sizes), unique=True)
    )
    comps = draw(
        st.lists(
            st.sampled_from(["prefill", "decode", "backend", "Décode", "a.b"]),
            min_size=len(sizes),
            max_size=len(sizes),
        )
    )
    return [W(c, i, s) for c, i, s in zip(comps, ids, sizes, strict=True)]


@given(workers_st(), st.sampled_from(list(Convention)), st.randoms(use_true_random=False))
@example([W("a", 1, 2), W("b", 2, 4), W("c", 3, 1)], Convention.PRIME_NCCL, random.Random(0))
def test_every_plan_covers_each_rank_once_and_ignores_arrival_order(
    workers: list[W], conv: Convention, rnd: random.Random
) -> None:
    world = sum(w.world_size or 0 for w in workers)
    plan = plan_broadcast(workers, world, conv)
    owned = sorted(r for e in plan.engines for r in e.ranks)
    assert owned == list(range(world))
    assert [e.identity for e in plan.engines] == [WorkerId.of(w) for w in canonical_order(workers)]
    shuffled = list(workers)
    rnd.shuffle(shuffled)
    assert plan_broadcast(shuffled, world, conv) == plan
    assert plan.engines[0].rank_offset == conv.first_offset
    for a, b in zip(plan.engines, plan.engines[1:], strict=False):
        assert b.rank_offset == a.rank_offset + a.world_size


@given(workers_st(), st.integers(-3, 3).filter(lambda d: d != 0))
def test_any_sum_mismatch_is_refused(workers: list[W], delta: int) -> None:
    world = sum(w.world_size or 0 for w in workers) + delta
    with pytest.raises(TopologyError):
        plan_broadcast(workers, world)
