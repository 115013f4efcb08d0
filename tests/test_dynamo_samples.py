"""The real Dynamo 1.6.1 listings captured under docs/samples/ (scripts/capture_dynamo_samples.py):
each is a discovery vector with exactly its bytes, and says what its scenario was about."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prime_rl_dynamo.resources import load_json
from prime_rl_dynamo.validate import check_body

DOCS_SAMPLES = Path(__file__).resolve().parent.parent / "docs" / "samples"
FILES = sorted(DOCS_SAMPLES.glob("*.json"))
CASES = {c.get("source"): c for c in load_json("vectors/discovery.v1.json")["cases"]}


def _body(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DOCS_SAMPLES / f"dynamo-1.6.1-{name}.json").read_bytes())
    return data


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_docs_sample_is_a_vector_with_its_exact_bytes(path: Path) -> None:
    case = CASES.get(f"docs/samples/{path.name}")
    assert case is not None, f"{path.name} is not among the discovery vectors"
    assert case["body"] == json.loads(path.read_bytes())
    found = sorted({v.requirement for v in check_body(path.read_bytes())})
    assert found == sorted(case["requirements"])
    assert case["valid"] is (not found)
    assert path.name in (DOCS_SAMPLES / "README.md").read_text(encoding="utf-8")


def test_transport_shapes_seen_on_real_dynamo() -> None:
    nats = _body("transport-nats")["workers"]
    assert nats and all(list(w["transport"]) == ["nats_tcp"] for w in nats)
    for w in nats:
        subject = w["transport"]["nats_tcp"]
        assert subject == f"{w['namespace']}_{w['component']}.rl-{w['instance_id']:x}"
    tcp = _body("model-one")["workers"]
    assert tcp and all(list(w["transport"]) == ["tcp"] for w in tcp)


def test_scopes_seen_on_real_dynamo() -> None:
    def seen(name: str) -> tuple[str, list[str]]:
        body = _body(name)
        return body["namespace"], sorted(w["namespace"] for w in body["workers"])

    assert seen("scope-exact") == ("rl-run-7", ["rl-run-7"])
    assert seen("scope-prefix") == ("rl-run-7", ["rl-run-7", "rl-run-7-decode", "rl-run-7-prefill"])
    assert seen("scope-prefix-strict") == ("rl-run-7", ["rl-run-7"])
    assert seen("scope-worker-suffix") == ("rl-run-7-prefill", ["rl-run-7-prefill"])
    assert seen("scope-prefix-dynamo") == ("dynamo", ["dynamo", "prod"])


def test_models_seen_on_real_dynamo() -> None:
    def models(name: str) -> dict[str, str | None]:
        return {w["component"]: w.get("model") for w in _body(name)["workers"]}

    assert models("model-one") == {"prefill": "Qwen/Qwen3-0.6B"}
    assert models("model-two") == {"prefill": "Qwen/Qwen3-0.6B", "judge": "other/Model-7B"}
    assert models("model-one-worker-two") == {"prefill": "Qwen/Qwen3-0.6B", "multi": None}
    assert models("model-same-twice") == {"prefill": "Qwen/Qwen3-0.6B"}
