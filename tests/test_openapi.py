"""The OpenAPI documents of schema/openapi/ and SPEC.md against the requirement catalog.

Unit tests: the documents validate, load in schemathesis 4, embed the bundled JSON Schemas exactly and
are up to date with them. Integration tests run ``schemathesis run`` against real loopback servers.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from _schemathesis_support import run_schemathesis

from prime_rl_dynamo.requirements import all_requirements
from prime_rl_dynamo.resources import load_json, schema_dir, schema_path
from tools import openapi
from tools.openapi import (
    build_documents,
    embed_schema,
    extract_schema,
    render,
)

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = (
    "rl-frontend.openapi.json",
    "worker-system.openapi.json",
    "admin.openapi.json",
    "rl-frontend.v2.openapi.json",
)

EXPECTED_OPERATIONS = {
    "rl-frontend.openapi.json": {("GET", "/v1/rl/workers"), ("HEAD", "/v1/rl/workers")},
    "worker-system.openapi.json": {("GET", "/health"), ("POST", "/engine/{route}")},
    "admin.openapi.json": {
        ("GET", "/health"),
        ("POST", "/pause"),
        ("POST", "/resume"),
        ("POST", "/init_broadcaster"),
        ("POST", "/update_weights"),
        ("POST", "/collective_rpc"),
    },
    "rl-frontend.v2.openapi.json": {("GET", "/v1/rl/workers")},
}

EXPECTED_EMBEDDED = {
    "rl-frontend.openapi.json": {
        "RlWorkers": "rl-workers.v1.schema.json",
        "RlWorkersError": "rl-workers-error.v1.schema.json",
    },
    "worker-system.openapi.json": {"RlWorkerRoutes": "rl-worker-routes.v1.schema.json"},
    "admin.openapi.json": {"Admin": "admin-bodies.v1.schema.json"},
    "rl-frontend.v2.openapi.json": {
        "RlWorkersV2": "rl-workers.v2.schema.json",
        "RlWorkers": "rl-workers.v1.schema.json",
        "RlWorkersError": "rl-workers-error.v1.schema.json",
    },
}


def _document(name: str) -> dict[str, Any]:
    return json.loads(schema_path(f"openapi/{name}").read_text(encoding="utf-8"))


def _walk(node: Any, pointer: str = "") -> Iterator[tuple[str, Any]]:
    yield pointer, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, f"{pointer}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _walk(value, f"{pointer}/{index}")


def _resolve(document: Any, ref: str) -> Any:
    node = document
    for part in ref.removeprefix("#/").split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


# --- the documents -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", DOCUMENTS)
def test_document_passes_openapi_spec_validator(name: str) -> None:
    from openapi_spec_validator import validate

    document = _document(name)
    assert document["openapi"].startswith("3.1.")
    validate(document)  # raises on any violation of the OpenAPI 3.1 meta-schema


@pytest.mark.parametrize("name", DOCUMENTS)
def test_document_loads_in_schemathesis_with_the_expected_operations(name: str) -> None:
    schemathesis = pytest.importorskip("schemathesis")
    schema = schemathesis.openapi.from_path(str(schema_path(f"openapi/{name}")))
    operations = set()
    for result in schema.get_all_operations():
        operation = result.ok()  # an Err here means schemathesis could not read the operation
        operations.add((operation.method.upper(), operation.path))
    assert operations == EXPECTED_OPERATIONS[name]


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_ref_is_local_and_resolves(name: str) -> None:
    document = _document(name)
    refs = [
        (pointer, node["$ref"])
        for pointer, node in _walk(document)
        if isinstance(node, dict) and "$ref" in node
    ]
    assert refs, f"{name} has no $ref at all: the walk is broken"
    for pointer, ref in refs:
        assert ref.startswith("#/"), f"{name}{pointer}: $ref {ref!r} is not local"
        try:
            _resolve(document, ref)
        except (KeyError, IndexError, ValueError):
            pytest.fail(f"{name}{pointer}: $ref {ref!r} points at nothing")


@pytest.mark.parametrize("name", DOCUMENTS)
def test_document_embeds_exactly_the_bundled_json_schemas(name: str) -> None:
    components = _document(name)["components"]["schemas"]
    embedded = {
        key: value["x-schema-file"] for key, value in components.items() if "x-schema-file" in value
    }
    assert embedded == EXPECTED_EMBEDDED[name]
    for component, source in embedded.items():
        # The inverse of the embedding must give back the schema file byte for byte (as JSON).
        assert extract_schema(components, component) == load_json(source), (
            f"{name}: components/schemas/{component} differs from {source}; "
            "run `python -m tools.openapi`"
        )


def test_checked_in_documents_are_up_to_date() -> None:
    # `python -m tools.openapi --check` itself: tests/test_tools.py.
    for name, document in build_documents().items():
        assert schema_path(f"openapi/{name}").read_text(encoding="utf-8") == render(document)


def test_check_fails_when_a_schema_and_its_document_drift(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(schema_dir() / "openapi", tmp_path / "openapi")
    monkeypatch.setattr(openapi, "SCHEMA_DIR", tmp_path)
    assert openapi.main(["--check"]) == 0
    # Someone edits the discovery schema and forgets the OpenAPI view: --check must notice.
    edited = json.loads(json.dumps(load_json("rl-workers.v1.schema.json")))
    edited["properties"]["namespace"]["minLength"] = 1

    def load(name: str) -> Any:
        return edited if name == "rl-workers.v1.schema.json" else load_json(name)

    monkeypatch.setattr(openapi, "load_schema", load)
    assert openapi.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "rl-frontend.openapi.json: out of date" in err
    assert "admin.openapi.json" not in err
    # Regenerating fixes it.
    assert openapi.main([]) == 0
    assert openapi.main(["--check"]) == 0


def test_embedding_round_trips_and_refuses_remote_refs() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:example:tree",
        "type": "object",
        "properties": {"child": {"$ref": "#"}, "leaf": {"$ref": "#/$defs/leaf/properties/v"}},
        "$defs": {"leaf": {"type": "object", "properties": {"v": {"type": "integer"}}}},
    }
    components = embed_schema(schema, "Tree", "tree.json")
    assert components["Tree"]["properties"]["child"] == {"$ref": "#/components/schemas/Tree"}
    assert components["Tree"]["properties"]["leaf"] == {
        "$ref": "#/components/schemas/Tree.leaf/properties/v"
    }
    assert "$id" not in components["Tree"] and "$defs" not in components["Tree"]
    assert extract_schema(components, "Tree") == schema
    with pytest.raises(ValueError, match="remote refs are not allowed"):
        embed_schema({"$ref": "https://example.com/other.json"}, "Remote", "remote.json")
    with pytest.raises(ValueError, match="names no entry of \\$defs"):
        embed_schema({"$ref": "#/$defs/missing"}, "Missing", "missing.json")


def test_frontend_examples_satisfy_the_schemas_and_the_validator() -> None:
    from prime_rl_dynamo.validate import check_body

    document = _document("rl-frontend.openapi.json")
    get = document["paths"]["/v1/rl/workers"]["get"]["responses"]
    listing = get["200"]["content"]["application/json"]["examples"]["pd-fleet"]["value"]
    failed = get["500"]["content"]["application/json"]["examples"]["discovery-failed"]["value"]
    jsonschema.Draft202012Validator(load_json("rl-workers.v1.schema.json")).validate(listing)
    jsonschema.Draft202012Validator(load_json("rl-workers-error.v1.schema.json")).validate(failed)
    assert check_body(listing) == []


def test_frontend_declares_405_with_allow_and_no_other_methods() -> None:
    document = _document("rl-frontend.openapi.json")
    methods = {
        key
        for key in document["paths"]["/v1/rl/workers"]
        if key in {"get", "head", "post", "put", "patch", "delete", "options", "trace"}
    }
    # Declared 405 operations would break schemathesis' own 405/Allow checks (HTTP-3).
    assert methods == {"get", "head"}
    allow = document["components"]["headers"]["Allow"]["schema"]["pattern"]
    for good in ("GET,HEAD", "GET, HEAD", "HEAD,GET"):
        assert re.match(allow, good)
    for bad in ("GET", "GET,HEAD,POST", "GET,POST"):
        assert not re.match(allow, bad)
    assert "security" not in document


ADMIN_VALID = {
    "InitBroadcaster": {
        "host": "10.0.0.1",
        "port": 29500,
        "rank_offset": 2,
        "inference_world_size": 7,
        "engine_world_size": 4,
        "timeout": 1200,
        "quantize_in_weight_transfer": False,
    },
    "UpdateWeights": {"weight_dir": None},
    "CollectiveRpc": {
        "method": "init_weight_transfer_engine",
        "args": [],
        "kwargs": {
            "init_info": {
                "master_address": "10.0.0.1",
                "master_port": 29500,
                "rank_offset": 3,
                "world_size": 8,
            }
        },
    },
}

ADMIN_INVALID = [
    ("InitBroadcaster", {"port": 0}),
    ("InitBroadcaster", {"rank_offset": -1}),
    ("InitBroadcaster", {"engine_world_size": 0}),
    ("InitBroadcaster", {"timeout": "1200"}),
    ("InitBroadcaster", {"quantize_in_weight_transfer": None}),
    ("UpdateWeights", {"weight_dir": 3}),
    ("CollectiveRpc", {"method": ""}),
    ("CollectiveRpc", {"args": {}}),
]


def test_admin_request_schemas_accept_the_brief_and_refuse_malformed_bodies() -> None:
    components = _document("admin.openapi.json")["components"]["schemas"]
    schemas = {name.removeprefix("Admin."): schema for name, schema in components.items()}
    for name, body in ADMIN_VALID.items():
        jsonschema.Draft202012Validator(schemas[name]).validate(body)
    jsonschema.Draft202012Validator(schemas["InitInfo"]).validate(
        ADMIN_VALID["CollectiveRpc"]["kwargs"]["init_info"]
    )
    for name, change in ADMIN_INVALID:
        body = {**ADMIN_VALID[name], **change}
        assert not jsonschema.Draft202012Validator(schemas[name]).is_valid(body), (name, change)
    missing = dict(ADMIN_VALID["InitBroadcaster"])
    del missing["timeout"]
    assert not jsonschema.Draft202012Validator(schemas["InitBroadcaster"]).is_valid(missing)


# --- SPEC.md against the catalog -----------------------------------------------------------------

_ID_TOKEN = re.compile(r"\b[A-Z][A-Z0-9]*-\d+\b")
_NOT_IDS = {"UTF-8"}
_TABLE_ROW = re.compile(
    r"^\| ([A-Z]+-\d+) \| (MUST|SHOULD|MAY) \| (\w+) \| (\w+) \| (§\d+) \| (.+) \|$", re.M
)
_PROSE_HEAD = re.compile(r"^\*\*([A-Z]+-\d+)\*\* \((MUST|SHOULD|MAY), (\w+), (\w+)\)\.", re.M)


@pytest.fixture(scope="module")
def spec() -> str:
    return schema_path("SPEC.md").read_text(encoding="utf-8")


def test_spec_index_repeats_the_catalog_exactly(spec: str) -> None:
    catalog = all_requirements()
    rows = {m.group(1): m.groups() for m in _TABLE_ROW.finditer(spec)}
    assert list(rows) == list(catalog), "the index lists other IDs, or in another order"
    for req_id, (_, level, party, enforced, _section, title) in rows.items():
        req = catalog[req_id]
        assert (level, party, enforced) == (req.level, req.party, req.enforced_by), req_id
        assert title.replace("\\|", "|") == req.title, req_id


def test_spec_states_every_requirement_once_with_its_catalog_attributes(spec: str) -> None:
    catalog = all_requirements()
    heads = _PROSE_HEAD.findall(spec)
    assert sorted(h[0] for h in heads) == sorted(catalog), "a requirement is missing or repeated"
    for req_id, level, party, enforced in heads:
        req = catalog[req_id]
        assert (level, party, enforced) == (req.level, req.party, req.enforced_by), req_id
    # Each statement uses its own level keyword (RFC 2119/8174: capitals only).
    for match in _PROSE_HEAD.finditer(spec):
        paragraph = spec[match.end() :].split("\n\n", 1)[0]
        assert re.search(rf"\b{match.group(2)}\b", paragraph), match.group(1)


def test_spec_names_no_id_outside_the_catalog(spec: str) -> None:
    tokens = set(_ID_TOKEN.findall(spec)) - _NOT_IDS
    unknown = tokens - set(all_requirements())
    assert not unknown, f"SPEC.md names IDs the catalog does not have: {sorted(unknown)}"
    assert set(all_requirements()) <= tokens


@pytest.mark.parametrize("name", ["SPEC.md", "SPEC-v2.md"])
def test_spec_keeps_bcp14_keywords_inside_requirements(name: str) -> None:
    spec = schema_path(name).read_text(encoding="utf-8")
    body = spec.split("## 2. Requirement index", 1)[1]
    for paragraph in re.split(r"\n\s*\n", body):
        if paragraph.startswith(("**", "|", "-", "```")):
            continue  # requirement statements (with their lists), tables, code
        found = re.findall(r"\b(MUST|SHOULD|SHALL|REQUIRED|RECOMMENDED|MAY|OPTIONAL)\b", paragraph)
        assert not found, f"keyword {found} outside a numbered requirement: {paragraph[:120]!r}"


def test_spec_worked_example_matches_the_rank_math(spec: str) -> None:
    from prime_rl_dynamo.plan import Convention, plan_broadcast
    from prime_rl_dynamo.validate import validate_body

    sizes = [2, 4, 1]
    workers = [
        {
            "namespace": "dynamo",
            "component": f"c{i}",
            "endpoint": "rl",
            "instance_id": 2**60 + i,
            "transport": {"tcp": f"127.0.0.1:1/{i}"},
            "request_plane_url": f"dyn://dynamo.c{i}.rl",
            "admin_base_url": f"http://127.0.0.1:{9000 + i}",
            "routes": [],
            "world_size": ws,
        }
        for i, ws in enumerate(sizes)
    ]
    snapshot = validate_body({"protocol_version": 1, "namespace": "dynamo", "workers": workers})
    for convention, offsets, group in (
        (Convention("prime-nccl"), [0, 2, 6], 8),
        (Convention("vllm-native-nccl"), [1, 3, 7], 8),
    ):
        plan = plan_broadcast(snapshot.workers, 7, convention)
        assert [engine.rank_offset for engine in plan.engines] == offsets
        assert plan.group_world_size == group
        assert f"`[{', '.join(map(str, offsets))}]`" in spec
    assert "`[0, 2, 4]`" in spec and "Rank 4 is claimed twice" in spec


# --- schemathesis against real servers (the reference fleet's runs: test_reference_schemathesis) -

_QUICK = ("--max-examples", "10")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _Listener:
    """A loopback RL listener that behaves like Dynamo 1.6.1, or breaks HTTP-3 on request."""

    BODY = json.dumps({"protocol_version": 1, "namespace": "dynamo", "workers": []}).encode()

    def __init__(self, mode: str) -> None:
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import Response
        from starlette.routing import Route

        async def workers(request: Request) -> Response:
            if request.method in ("GET", "HEAD"):
                return Response(self.BODY, media_type="application/json")
            if mode == "post-200":
                return Response(self.BODY, media_type="application/json")
            headers = {} if mode == "no-allow" else {"allow": "GET,HEAD"}
            if mode == "allow-post":
                headers = {"allow": "GET,HEAD,POST"}
            return Response(b"", status_code=405, headers=headers)

        methods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"]
        self.app = Starlette(routes=[Route("/v1/rl/workers", workers, methods=methods)])
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> _Listener:
        import uvicorn

        config = uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="error")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test listener did not start within 10 s")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.mark.integration
@pytest.mark.parametrize(
    ("mode", "finding"),
    [
        ("dynamo", None),
        ("post-200", "ST204"),  # POST answered 200: not 405 (HTTP-3)
        ("no-allow", "ST204"),  # 405 without Allow (HTTP-3)
        ("allow-post", "ST205"),  # Allow lists a method that is not GET or HEAD (HTTP-3)
    ],
)
def test_schemathesis_checks_the_rl_listener_405_contract(mode: str, finding: str | None) -> None:
    pytest.importorskip("schemathesis")
    with _Listener(mode) as listener:
        result = run_schemathesis("rl-frontend.openapi.json", listener.url, *_QUICK)
    if finding is None:
        assert result.returncode == 0, result.stdout[-3000:]
    else:
        assert result.returncode == 1, result.stdout[-3000:]
        assert finding in result.stdout


@pytest.mark.integration
@pytest.mark.dynamo
def test_schemathesis_passes_on_real_dynamo() -> None:
    pytest.importorskip("schemathesis")
    pytest.importorskip("dynamo.runtime")
    from prime_rl_dynamo.suite.harness import start_dynamo_fleet
    from prime_rl_dynamo.topology import topology_from_dict

    # The default namespace and model; W = 2 + 4.
    engines = [
        {"component": "prefill", "count": 1, "tp": 2},
        {"component": "decode", "count": 1, "tp": 2, "dp": 2},
    ]
    with start_dynamo_fleet(topology_from_dict({"engines": engines})) as fleet:
        frontend = run_schemathesis("rl-frontend.openapi.json", fleet.frontend_url, *_QUICK)
        system = run_schemathesis(
            "worker-system.openapi.json", fleet.engines[0].system_url, *_QUICK
        )
        admin = run_schemathesis("admin.openapi.json", fleet.engines[0].admin_base_url, *_QUICK)
    # Dynamo's own RL listener and system server keep the documented contract, text/plain included.
    assert frontend.returncode == 0, frontend.stdout[-3000:]
    assert system.returncode == 0, system.stdout[-3000:]
    # The admin API is the harness's stub (Dynamo ships none); it must keep the document too.
    assert admin.returncode == 0, admin.stdout[-3000:]
