"""Prime-RL main's seam as recorded (docs/prime-rl/main-<revision>.facts.json, since CI cannot read
Prime-RL): the plane's surface is main's AdminPlane exactly, the patch's pre-image is main's
clients.py as read, the init's positional args bind to main's worker method, and main's config
shape (``ClientConfig`` with ``dynamo = {enabled = true}`` only) is read as main reads it."""

from __future__ import annotations

import ast
import asyncio
import hashlib
import inspect
import logging
import os
import subprocess
from dataclasses import fields
from typing import Any

import pytest
from _prime_rl_support import (
    DOCS,
    ClientConfig,
    DynamoConfig,
    patch_files,
    pre_images,
    recorded_pre_images,
    shipped,
)

from prime_rl_dynamo.errors import ConfigError
from prime_rl_dynamo.plan import Convention, Rendezvous, plan_broadcast
from prime_rl_dynamo.prime_rl_config import (
    PRIME_RL_MAIN_WAIT_FOR_READY_TIMEOUT,
    admin_settings_from_prime_rl,
    discovery_url_from_prime_rl,
    nccl_convention_from_prime_rl,
)
from prime_rl_dynamo.prime_rl_main import (
    ADMIN_PLANE_SURFACE,
    MAIN_RECEIVERS,
    PRIME_RL_MAIN_FILES,
    PRIME_RL_MAIN_REVISION,
    REQUIRED,
    WORKER_INIT_BROADCASTER,
    DynamoAdminPlane,
    Member,
)
from prime_rl_dynamo.validate import validate_body
from tests._client_support import body, worker

PATCH, FACTS = shipped(f"main-{PRIME_RL_MAIN_REVISION}")


def test_the_config_classes_are_mains_as_recorded() -> None:
    for cls in (DynamoConfig, ClientConfig):
        recorded = FACTS["config"][cls.__name__]
        defaults = {
            f.name: f.default_factory() if callable(f.default_factory) else f.default
            for f in fields(cls)
        }
        assert list(defaults) == list(recorded), cls.__name__
        assert defaults == {name: value for name, (_, value) in recorded.items()}, cls.__name__


# --- the surface ---------------------------------------------------------------------------------


def _params(member: Member, text: str) -> list[tuple[str, str, Any]]:
    """(name, kind, default) after ``self`` of a recorded ``def`` line."""
    node = ast.parse(text.strip() + "\n    ...").body[0]
    assert isinstance(node, ast.AsyncFunctionDef | ast.FunctionDef)
    args = node.args
    positional = [a.arg for a in args.args if a.arg != "self"]
    pos_defaults = [REQUIRED] * (len(positional) - len(args.defaults)) + [
        ast.literal_eval(d) for d in args.defaults
    ]
    kw = [
        (a.arg, "keyword", REQUIRED if d is None else ast.literal_eval(d))
        for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
    ]
    return [(n, "positional", d) for n, d in zip(positional, pos_defaults, strict=True)] + kw


#: What each member's recorded source line says (the member, or where main sets or reads it).
_SAID = {
    "__init__": "DynamoAdminPlane(client_config, model_name)",
    "clients": "self.clients =",
    "wait_for_ready": "def wait_for_ready(",
    "initialize_nccl": "def initialize_nccl(",
    "update_weights": "def update_weights(",
    "aclose": "def aclose(",
    "initialize_nixl": "def init_nixl_broadcast(",
}


def test_the_surface_is_mains_recorded_signatures() -> None:
    assert FACTS["revision"] == PRIME_RL_MAIN_REVISION
    for name, member in ADMIN_PLANE_SURFACE.items():
        line = FACTS["surface"][member.source]
        assert _SAID[name] in line, name
        text = FACTS["signatures"].get(member.source)
        if text is None or member.params is None:
            continue
        recorded = _params(member, text)
        if name == "initialize_nixl":  # main's module function: (admin_plane, ...) by position
            recorded = [(n, "keyword", d) for n, _, d in recorded[1:]]
        assert recorded == list(member.params), name


def test_a_changed_recorded_signature_is_caught() -> None:
    member = ADMIN_PLANE_SURFACE["update_weights"]
    text = FACTS["signatures"][member.source].replace("step: int = 0", "step: int = 1")
    assert _params(member, text) != list(member.params or ())


def _kind(param: inspect.Parameter) -> str:
    return "keyword" if param.kind is inspect.Parameter.KEYWORD_ONLY else "positional"


def test_the_plane_has_mains_surface_exactly() -> None:
    for name, member in ADMIN_PLANE_SURFACE.items():
        if member.params is None:  # an attribute: set by __init__, read by main's functions
            assert "self.clients" in inspect.getsource(DynamoAdminPlane.__init__)
            continue
        signature = inspect.signature(getattr(DynamoAdminPlane, name))
        got = [
            (p.name, _kind(p), REQUIRED if p.default is inspect.Parameter.empty else p.default)
            for p in list(signature.parameters.values())[1:]
        ]
        assert got[: len(member.params)] == list(member.params), name
        extras = got[len(member.params) :]
        # Only the constructor has more: the package's own, keyword-only, all defaulted.
        assert not extras or (name == "__init__" and all(k == "keyword" for _, k, _ in extras))
        assert all(d is not REQUIRED for _, _, d in extras), name
        is_async = inspect.iscoroutinefunction(getattr(DynamoAdminPlane, name))
        assert is_async == (name != "__init__"), name


def test_the_recorded_receivers_are_the_planes_transports() -> None:
    assert FACTS["receivers"] == {
        t: {
            "initialize": r.initialize,
            "receive": list(r.receive),
            "on_paused": r.on_paused,
            "weight_dir": r.weight_dir,
            "source": r.source,
        }
        for t, r in MAIN_RECEIVERS.items()
    }
    assert set(MAIN_RECEIVERS) == {"filesystem", "nccl", "nixl"}
    assert FACTS["sources"] == {
        p: {"index_id": i, "commit": c} for p, (i, c) in PRIME_RL_MAIN_FILES.items()
    }


# --- main's worker ---------------------------------------------------------------------------------


def _worker_signature() -> inspect.Signature:
    empty = inspect.Parameter.empty
    return inspect.Signature(
        [
            inspect.Parameter(
                n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=empty if d == REQUIRED else d
            )
            for n, d in WORKER_INIT_BROADCASTER
        ]
    )


def test_the_worker_signature_is_mains_and_takes_no_engine_world_size() -> None:
    assert [list(p) for p in WORKER_INIT_BROADCASTER] == FACTS["worker"]["init_broadcaster"]
    names = {n for n, _ in WORKER_INIT_BROADCASTER}
    assert names == set(FACTS["worker"]["init_broadcaster_route_fields"])
    signature = _worker_signature()
    signature.bind("h", 1, 0, 7, 60, False)
    with pytest.raises(TypeError):  # what the 73164c322 path's rpc body adds
        signature.bind("h", 1, 0, 7, 60, False, engine_world_size=2)


@pytest.mark.parametrize(("nixl", "count"), [(False, 6), (True, 7)])
def test_the_rpc_init_binds_to_mains_worker(nixl: bool, count: int) -> None:
    plane = DynamoAdminPlane(
        ClientConfig(dynamo=DynamoConfig(discovery_url="http://f:8001")), "m", environ={}
    )
    listing = validate_body(
        body(*(worker(c, i, ws) for i, (c, ws) in enumerate([("a", 2), ("b", 4), ("c", 1)])))
    )
    workers = listing.workers
    convention = Convention.NIXL if nixl else Convention.PRIME_NCCL
    plan = plan_broadcast(workers, 7, convention)
    meet = Rendezvous("h", 1, 60, "s" if nixl else None)
    bodies = [plane._init_request(e, plan, meet) for e in plan.engines]
    for path, rpc in bodies:
        assert path == "/collective_rpc" and rpc["kwargs"] == {}
        assert len(rpc["args"]) == count
        bound = _worker_signature().bind(*rpc["args"]).arguments
        assert bound["inference_world_size"] == 7
    assert [b["args"][2] for _, b in bodies] == [0, 2, 6]
    plane.admin_api = "prime"
    path, named = plane._init_request(plan.engines[1], plan, Rendezvous("h", 1, 60))
    assert path == "/init_broadcaster" and "engine_world_size" not in named
    assert set(named) <= set(FACTS["worker"]["init_broadcaster_route_fields"])
    asyncio.run(plane.aclose())


# --- the patch -------------------------------------------------------------------------------------


def test_the_patch_pre_image_is_mains_clients_py_as_read() -> None:
    files = patch_files(PATCH.read_text(encoding="utf-8"))
    assert set(files) == set(FACTS["files"])
    for path, f in files.items():
        recorded = FACTS["files"][path]
        assert recorded["commit"].startswith(PRIME_RL_MAIN_REVISION)
        assert f["index"] is None  # no blob line: the index gives file ids, not blob ids
        for _start, old_n, new_n, pre, post, _ in f["hunks"]:
            assert (len(pre), len(post)) == (old_n, new_n)
        assert pre_images(f) == recorded_pre_images(recorded)


def test_a_changed_pre_image_line_is_caught() -> None:
    text = PATCH.read_text(encoding="utf-8").replace(
        "    if dynamo is not None and dynamo.enabled:", "    if dynamo is not None:", 1
    )
    (f,) = patch_files(text).values()
    pre = f["hunks"][0][3]
    recorded = next(iter(FACTS["files"].values()))["hunks"][0]["sha256"]
    assert hashlib.sha256("\n".join(pre).encode()).hexdigest() != recorded


def test_the_patch_adds_only_the_planes_import_and_the_nixl_delegation() -> None:
    (f,) = patch_files(PATCH.read_text(encoding="utf-8")).values()
    added = [line.strip() for hunk in f["hunks"] for line in hunk[5]]
    assert added[0] == "from prime_rl_dynamo.prime_rl_main import DynamoAdminPlane"
    assert 'if hasattr(admin_plane, "initialize_nixl"):' in added[1]
    call = " ".join(added[2:])
    keywords = [p[0] for p in ADMIN_PLANE_SURFACE["initialize_nixl"].params or ()]
    assert all(f"{k}={k}" in call for k in keywords)
    removed = [line for hunk in f["hunks"] for line in hunk[3] if line not in hunk[4]]
    assert removed == ["        from prime_rl.inference.dynamo import DynamoAdminPlane"]


def test_the_docs_show_the_patch_as_shipped() -> None:
    doc = (DOCS.parent / "prime-rl.md").read_text(encoding="utf-8")
    shown = doc.split("```diff\n", 1)[1].split("```", 1)[0]
    shipped = PATCH.read_text(encoding="utf-8")
    assert shown == shipped[shipped.index("@@") :]


@pytest.mark.integration
@pytest.mark.skipif(
    not os.environ.get("PRIME_RL_MAIN_CHECKOUT"),
    reason="set PRIME_RL_MAIN_CHECKOUT to a Prime-RL checkout whose clients.py is 009c03036's",
)
def test_git_apply_check_on_a_prime_rl_main_checkout() -> None:
    done = subprocess.run(
        ["git", "apply", "--check", "-p1", str(PATCH)],
        cwd=os.environ["PRIME_RL_MAIN_CHECKOUT"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr


# --- main's config, read -------------------------------------------------------------------------


def test_enabled_alone_derives_the_discovery_url_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = ClientConfig(base_url="http://user:pw@frontend:8000/v1", dynamo=DynamoConfig())
    with caplog.at_level(logging.WARNING, logger="prime_rl_dynamo.prime_rl_config"):
        assert discovery_url_from_prime_rl(config) == "http://frontend:8001"
    (record,) = caplog.records
    assert "port + 1" in record.getMessage() and "pw" not in record.getMessage()
    given = ClientConfig(dynamo=DynamoConfig(discovery_url="http://rl:9001"))
    assert discovery_url_from_prime_rl(given) == "http://rl:9001"


@pytest.mark.parametrize(
    ("config", "said"),
    [
        (ClientConfig(dynamo=DynamoConfig(enabled=False)), "enabled is False"),
        (ClientConfig(base_url="http://frontend/v1", dynamo=DynamoConfig()), "no port"),
        (ClientConfig(base_url="http://frontend:65535", dynamo=DynamoConfig()), "no port"),
        (ClientConfig(base_url="not a url", dynamo=DynamoConfig()), r"not an http\(s\) URL"),
    ],
)
def test_an_underivable_or_disabled_config_is_refused(config: ClientConfig, said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        discovery_url_from_prime_rl(config)


def test_mains_shape_means_primes_broadcaster_and_its_timeout() -> None:
    main = ClientConfig(dynamo=DynamoConfig())
    assert nccl_convention_from_prime_rl(main)[0] is Convention.PRIME_NCCL
    assert nccl_convention_from_prime_rl({"dynamo": {"enabled": True}})[0] is Convention.PRIME_NCCL
    # 73164c322's shape (no enabled) keeps its own: vLLM's native engine.
    branch = {"dynamo": {"discovery_url": "http://f:8001"}}
    assert nccl_convention_from_prime_rl(branch)[0] is Convention.VLLM_NATIVE_NCCL
    assert admin_settings_from_prime_rl({"dynamo": {"enabled": True}})["discovery_timeout"] == (
        PRIME_RL_MAIN_WAIT_FOR_READY_TIMEOUT
    )
    assert FACTS["config"]["ClientConfig"]["wait_for_ready_timeout"][1] == (
        PRIME_RL_MAIN_WAIT_FOR_READY_TIMEOUT
    )
