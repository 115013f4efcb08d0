"""plan_broadcast against the shared rank-offset vectors (schema/vectors/rank-offsets.v1.json)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from prime_rl_dynamo.errors import TopologyError
from prime_rl_dynamo.plan import plan_broadcast
from prime_rl_dynamo.resources import load_json

CASES: list[dict[str, Any]] = load_json("vectors/rank-offsets.v1.json")["cases"]


@dataclass(frozen=True)
class _Engine:
    namespace: str
    component: str
    endpoint: str
    instance_id: int
    world_size: int | None
    admin_base_url: str | None = None


def engines(case: dict[str, Any]) -> list[_Engine]:
    return [
        _Engine(
            e["namespace"], e["component"], e["endpoint"], e["instance_id"], e.get("world_size")
        )
        for e in case["engines"]
    ]


def test_vectors_cover_every_convention_and_refusals() -> None:
    assert {c["convention"] for c in CASES} == {"prime-nccl", "vllm-native-nccl", "nixl"}
    assert any("refused" in c for c in CASES) and any("expected" in c for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=[c["description"][:60] for c in CASES])
def test_rank_offset_vector(case: dict[str, Any]) -> None:
    args = (engines(case), case["inference_world_size"], case["convention"])
    kw = {"trainer_world_size": case.get("trainer_world_size", 1)}
    if "refused" in case:
        with pytest.raises(TopologyError) as info:
            plan_broadcast(*args, **kw)
        assert info.value.requirement == case["refused"]["requirement"]
        return
    plan = plan_broadcast(*args, **kw)
    expected = case["expected"]
    assert [e.label for e in plan.engines] == expected["order"]
    assert plan.rank_offsets == expected["rank_offsets"]
    assert plan.group_world_size == expected["group_world_size"]
    if "even_split_offsets" in case:
        # The even split's offsets are never what a plan produces for these engines.
        assert plan.rank_offsets != case["even_split_offsets"]
