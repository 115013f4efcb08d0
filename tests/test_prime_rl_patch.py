"""docs/prime-rl/73164c322.patch: well-formed, its context lines are Prime-RL's at that revision (as
recorded in docs/prime-rl/73164c322.facts.json, since CI cannot fetch Prime-RL), and what its added
lines use exists in this package."""

from __future__ import annotations

import hashlib
import os
import subprocess
from types import SimpleNamespace

import pytest
from _prime_rl_support import patch_files, pre_images, recorded_pre_images, shipped

from prime_rl_dynamo.plan import Convention
from prime_rl_dynamo.prime_rl import (
    PRIME_RL_REVISION,
    PRIME_RL_SURFACE,
    client_config_from_prime_rl,
    nccl_convention_from_prime_rl,
    trainer_config_from_prime_rl,
)

PATCH, FACTS = shipped(PRIME_RL_REVISION)


def test_the_patch_is_a_well_formed_unified_diff() -> None:
    files = patch_files(PATCH.read_text(encoding="utf-8"))
    assert files, "the patch changes no file"
    for path, f in files.items():
        assert f["hunks"], path
        previous_end = 0
        for old_start, old_n, new_n, pre, post, _ in f["hunks"]:
            # The header's line counts are the hunk's, and hunks come in order without overlap.
            assert (len(pre), len(post)) == (old_n, new_n), (path, old_start)
            assert old_start > previous_end, (path, old_start)
            previous_end = old_start + old_n - 1


def test_its_context_lines_are_prime_rls_at_the_revision() -> None:
    files = patch_files(PATCH.read_text(encoding="utf-8"))
    assert FACTS["revision"] == PRIME_RL_REVISION
    assert set(files) == set(FACTS["files"])
    for path, f in files.items():
        recorded = FACTS["files"][path]
        assert recorded["blob"].startswith(f["index"]), path
        assert pre_images(f) == recorded_pre_images(recorded)


def test_a_changed_context_line_is_caught() -> None:
    text = PATCH.read_text(encoding="utf-8").replace(
        '     """Dynamo frontend URL used to discover inference workers."""',
        '     """Dynamo frontend URL used to find inference workers."""',
        1,
    )
    files = patch_files(text)
    path = "packages/prime-rl-configs/src/prime_rl/configs/shared.py"
    pre = files[path]["hunks"][0][3]
    assert (
        hashlib.sha256("\n".join(pre).encode()).hexdigest()
        != (FACTS["files"][path]["hunks"][0]["sha256"])
    )


def test_the_surface_lines_read_the_member_they_are_listed_for() -> None:
    for name, locations in PRIME_RL_SURFACE.items():
        for location in locations:
            assert f".{name}" in FACTS["surface"][location], (name, location)


def _added(path_end: str) -> str:
    files = patch_files(PATCH.read_text(encoding="utf-8"))
    (path,) = [p for p in files if p.endswith(path_end)]
    return "\n".join(line for hunk in files[path]["hunks"] for line in hunk[5])


def test_the_orchestrator_hunk_uses_the_pool_with_prime_rls_own_data_plane() -> None:
    added = _added("utils/client.py")
    assert "from prime_rl_dynamo.prime_rl import DynamoInferencePool" in added
    assert "data_plane = InferencePool(client_config, model_name, **kwargs)" in added
    assert "data_plane=data_plane" in added


def test_the_trainer_hunk_uses_the_helper() -> None:
    added = _added("weights/dynamo_nccl.py")
    assert "from prime_rl_dynamo.native_nccl import SyncNativeNcclTrainer" in added
    assert "SyncNativeNcclTrainer.from_prime_rl(config)" in added
    assert "self.client.group.world_size" in added


def test_the_config_fields_it_adds_are_the_ones_the_pool_reads() -> None:
    added = _added("configs/shared.py")
    assert (
        'nccl_convention: Literal["prime-nccl", "vllm-native-nccl"] = "vllm-native-nccl"' in added
    )
    assert "admin_allowed_hosts: list[str] | None = None" in added
    dynamo = SimpleNamespace(
        discovery_url="http://f:8001",
        nccl_convention="prime-nccl",
        admin_allowed_hosts=["10.0.0.0/8"],
    )
    client = SimpleNamespace(dynamo=dynamo, api_key_var="K", headers={}, headers_from_env={})
    config = client_config_from_prime_rl(client, model_name="m", inference_world_size=2)
    assert config.admin_allowed_hosts == ("10.0.0.0/8",)
    assert nccl_convention_from_prime_rl(client)[0] is Convention.PRIME_NCCL
    # Unpatched (no field), the latest generation's shape means its native NCCL, never prime-nccl.
    bare = SimpleNamespace(dynamo=SimpleNamespace(discovery_url="http://f:8001"))
    assert nccl_convention_from_prime_rl(bare)[0] is Convention.VLLM_NATIVE_NCCL
    # The trainer's section (rl.py's hunk copies admin_allowed_hosts into it).
    assert '"admin_allowed_hosts": client.dynamo.admin_allowed_hosts' in _added("configs/rl.py")
    trainer = SimpleNamespace(
        host="10.1.1.1",
        port=29501,
        timeout=1200,
        inference_world_size=2,
        dynamo=SimpleNamespace(
            discovery_url="http://f:8001",
            model_name="m",
            headers={},
            headers_from_env={},
            api_key_var="K",
            admin_allowed_hosts=["10.0.0.0/8"],
        ),
    )
    tconfig, host, port = trainer_config_from_prime_rl(trainer)
    assert (host, port, tconfig.weight_broadcast, tconfig.model) == (
        "10.1.1.1",
        29501,
        "vllm-native-nccl",
        "m",
    )
    assert tconfig.admin_allowed_hosts == ("10.0.0.0/8",)


@pytest.mark.integration
@pytest.mark.skipif(
    not os.environ.get("PRIME_RL_CHECKOUT"),
    reason="set PRIME_RL_CHECKOUT to a Prime-RL checkout at 73164c322 to apply the patch to it",
)
def test_git_apply_check_on_a_prime_rl_checkout() -> None:
    checkout = os.environ["PRIME_RL_CHECKOUT"]
    done = subprocess.run(
        ["git", "apply", "--check", "-p1", str(PATCH)], cwd=checkout, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
