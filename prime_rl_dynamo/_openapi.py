"""The three OpenAPI 3.1 documents of schema/openapi/, generated from the bundled JSON Schemas.

``python -m prime_rl_dynamo._openapi`` rewrites them; ``--check`` exits 1 when a checked-in document
differs from what the schemas produce, so the OpenAPI view can never drift from the JSON Schemas.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from prime_rl_dynamo._resources import load_json, schema_dir

__all__ = [
    "DOCUMENTS",
    "EMBEDDED_SCHEMAS",
    "ENGINE_ROUTES",
    "build_documents",
    "embed_schema",
    "extract_schema",
    "main",
    "render",
]

JSON = dict[str, Any]
Loader = Callable[[str], Any]

OPENAPI_VERSION = "3.1.0"
_COMPONENTS = "#/components/schemas/"
_DEFS = "#/$defs/"
# Component names must match this (OpenAPI 3.1, Components Object).
_COMPONENT_NAME = re.compile(r"^[A-Za-z0-9._-]+$")

#: Component name of each bundled JSON Schema -> its file in schema/.
EMBEDDED_SCHEMAS: dict[str, str] = {
    "RlWorkers": "rl-workers.v1.schema.json",
    "RlWorkersError": "rl-workers-error.v1.schema.json",
    "RlWorkerRoutes": "rl-worker-routes.v1.schema.json",
}

#: Engine routes a Dynamo vLLM worker registers for RL on its system server (POST /engine/<route>).
ENGINE_ROUTES: tuple[str, ...] = (
    "abort_request",
    "destroy_weights_update_group",
    "flush_cache",
    "get_weight_version",
    "init_weights_update_group",
    "liveness_probe",
    "load_lora",
    "pause_generation",
    "resume_generation",
    "unload_lora",
    "update_weights_from_disk",
    "update_weights_from_distributed",
    "update_weights_from_tensor",
)

_LICENSE = {"name": "Apache-2.0", "identifier": "Apache-2.0"}
_SPEC_NOTE = "The normative text is SPEC.md next to this document; requirement IDs refer to it."


# --- embedding a JSON Schema under components/schemas ---------------------------------------------


def _rewrite_refs(node: Any, rewrite: Callable[[str], str]) -> Any:
    """A deep copy of ``node`` with every ``$ref`` string passed through ``rewrite``."""
    if isinstance(node, dict):
        return {
            key: rewrite(value)
            if key == "$ref" and isinstance(value, str)
            else _rewrite_refs(value, rewrite)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_rewrite_refs(item, rewrite) for item in node]
    return copy.deepcopy(node)


def embed_schema(schema: Mapping[str, Any], name: str, source: str) -> JSON:
    """Components for one standalone JSON Schema: ``name`` for its root, ``name.<def>`` per $defs entry.

    ``$id`` and ``$schema`` move to ``x-schema-id`` / ``x-schema-dialect`` (an embedded ``$id`` would
    change the base URI of its ``#/$defs/...`` refs, which tools handle unevenly); refs become
    ``#/components/schemas/...``. ``extract_schema`` is the exact inverse.
    """
    defs = schema.get("$defs", {})

    def to_components(ref: str) -> str:
        if ref == "#":
            return _COMPONENTS + name
        if ref.startswith(_DEFS):
            head, sep, rest = ref[len(_DEFS) :].partition("/")
            if head not in defs:
                raise ValueError(f"{source}: $ref {ref!r} names no entry of $defs")
            return f"{_COMPONENTS}{name}.{head}{sep}{rest}"
        raise ValueError(
            f"{source}: $ref {ref!r} is not supported in an embedded schema "
            "(expected '#' or '#/$defs/...'; remote refs are not allowed)"
        )

    root = {k: v for k, v in schema.items() if k not in ("$defs", "$id", "$schema")}
    out: JSON = {
        name: {
            "x-schema-file": source,
            **({"x-schema-id": schema["$id"]} if "$id" in schema else {}),
            **({"x-schema-dialect": schema["$schema"]} if "$schema" in schema else {}),
            **_rewrite_refs(root, to_components),
        }
    }
    for def_name, definition in defs.items():
        component = f"{name}.{def_name}"
        if not _COMPONENT_NAME.match(component):
            raise ValueError(
                f"{source}: $defs name {def_name!r} cannot be an OpenAPI component name"
            )
        out[component] = _rewrite_refs(definition, to_components)
    return out


def extract_schema(components: Mapping[str, Any], name: str) -> JSON:
    """The standalone JSON Schema that ``embed_schema`` turned into ``components`` under ``name``."""
    prefix = f"{name}."

    def to_defs(ref: str) -> str:
        if ref == _COMPONENTS + name:
            return "#"
        if ref.startswith(_COMPONENTS + prefix):
            return _DEFS + ref[len(_COMPONENTS + prefix) :]
        raise ValueError(f"component {name}: $ref {ref!r} leaves the embedded schema")

    root = dict(components[name])
    root.pop("x-schema-file", None)
    schema: JSON = {}
    if "x-schema-dialect" in root:
        schema["$schema"] = root.pop("x-schema-dialect")
    if "x-schema-id" in root:
        schema["$id"] = root.pop("x-schema-id")
    schema.update(_rewrite_refs(root, to_defs))
    defs = {
        key[len(prefix) :]: _rewrite_refs(value, to_defs)
        for key, value in components.items()
        if key.startswith(prefix)
    }
    if defs:
        schema["$defs"] = defs
    return schema


def _embedded(load: Loader, *names: str) -> JSON:
    components: JSON = {}
    for name in names:
        components.update(embed_schema(load(EMBEDDED_SCHEMAS[name]), name, EMBEDDED_SCHEMAS[name]))
    return components


def _ref(name: str) -> JSON:
    return {"$ref": _COMPONENTS + name}


# --- rl-frontend.openapi.json ----------------------------------------------------------------------

_EXAMPLE_LISTING: JSON = {
    "protocol_version": 1,
    "namespace": "dynamo",
    "workers": [
        {
            "namespace": "dynamo",
            "component": "decode",
            "endpoint": "rl",
            "instance_id": 10431879732901135543,
            "transport": {"tcp": "10.0.0.12:44065/90c57b58bb2b44b7/dynamo/decode/rl"},
            "request_plane_url": "dyn://dynamo.decode.rl",
            "system_url": "http://10.0.0.12:8081",
            "admin_base_url": "http://10.0.0.12:9203/engine",
            "model": "Qwen/Qwen3-0.6B",
            "routes": ["pause_generation", "resume_generation"],
            "world_size": 4,
        },
        {
            "namespace": "dynamo",
            "component": "prefill",
            "endpoint": "rl",
            "instance_id": 9240623910170889651,
            "transport": {"tcp": "10.0.0.14:41665/803d4a7cc4b78db3/dynamo/prefill/rl"},
            "request_plane_url": "dyn://dynamo.prefill.rl",
            "routes": [],
            "error": "Unavailable: TCP connection to 10.0.0.14:41665 failed",
        },
    ],
}


def _rl_frontend(load: Loader) -> JSON:
    listing = {
        "description": "The listing (HTTP-1; body: SPEC.md §4-§5). Workers that could not be probed "
        "are listed with `error`.",
        "content": {
            "application/json": {
                "schema": _ref("RlWorkers"),
                "examples": {
                    "pd-fleet": {
                        "summary": "a decode engine and a dead prefill worker",
                        "value": _EXAMPLE_LISTING,
                    }
                },
            }
        },
    }
    failed = {
        "description": "The discovery store could not be listed at all (HTTP-5).",
        "content": {
            "application/json": {
                "schema": _ref("RlWorkersError"),
                "examples": {
                    "discovery-failed": {
                        "value": {
                            "error": "discovery_failed",
                            "message": "etcd: connection refused",
                        }
                    }
                },
            }
        },
    }
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "Dynamo RL listener: worker discovery",
            "version": "1",
            "summary": "GET /v1/rl/workers on the frontend's RL listener, protocol_version 1.",
            "description": "The frontend's separate RL listener (DYN_ENABLE_RL=true, port DYN_RL_PORT, "
            "default 8001; plain HTTP, no authentication). It serves one read-only resource. "
            "Every other method on it answers 405 with `Allow: GET, HEAD` and an empty body "
            "(HTTP-3, components/responses/MethodNotAllowed); every other path answers 404 "
            "(HTTP-4). Those methods are deliberately not declared as operations: schemathesis "
            "probes undeclared methods itself (coverage phase, checks unsupported_method and "
            "allow_header_conformance) and expects exactly this. " + _SPEC_NOTE,
            "license": _LICENSE,
        },
        "servers": [
            {
                "url": "http://127.0.0.1:8001",
                "description": "a local frontend's RL listener (default port)",
            }
        ],
        "tags": [{"name": "discovery", "description": "RL worker discovery"}],
        "paths": {
            "/v1/rl/workers": {
                "summary": "The RL workers the frontend can find, with what each serves.",
                "get": {
                    "operationId": "listRlWorkers",
                    "tags": ["discovery"],
                    "summary": "List RL workers",
                    "description": "Takes no parameters and no body. Asks every RL worker in scope for "
                    "its routes on each call (HTTP-1, HTTP-6, HTTP-7).",
                    "x-requirements": ["HTTP-1", "HTTP-5", "HTTP-6", "HTTP-7"],
                    "responses": {"200": listing, "500": failed},
                },
                "head": {
                    "operationId": "headRlWorkers",
                    "tags": ["discovery"],
                    "summary": "Headers of the listing",
                    "description": "The status and headers GET would produce, `Content-Type: "
                    "application/json` included, and no body (HTTP-2).",
                    "x-requirements": ["HTTP-2"],
                    "responses": {
                        "200": {
                            "description": "As GET 200, without a body.",
                            "content": {"application/json": {}},
                        },
                        "500": {
                            "description": "As GET 500, without a body.",
                            "content": {"application/json": {}},
                        },
                    },
                },
            }
        },
        "components": {
            "schemas": _embedded(load, "RlWorkers", "RlWorkersError"),
            "headers": {
                "Allow": {
                    "description": "Exactly GET and HEAD, comma-separated, in any order (Dynamo: "
                    "`GET,HEAD`).",
                    "required": True,
                    "schema": {
                        "type": "string",
                        "pattern": "^\\s*(GET\\s*,\\s*HEAD|HEAD\\s*,\\s*GET)\\s*$",
                    },
                }
            },
            "responses": {
                "MethodNotAllowed": {
                    "description": "Any method other than GET or HEAD on /v1/rl/workers (HTTP-3). "
                    "The body is empty.",
                    "headers": {"Allow": {"$ref": "#/components/headers/Allow"}},
                },
                "NotFound": {
                    "description": "Any other path on the RL listener, /v1/rl/engine and "
                    "/v1/rl/engines included (HTTP-4). The body is empty.",
                },
            },
        },
    }


# --- worker-system.openapi.json --------------------------------------------------------------------


def _both_media_types(schema: JSON, example: JSON | None = None) -> JSON:
    media: JSON = {"schema": schema}
    if example is not None:
        media["examples"] = {"reply": {"value": example}}
    # Dynamo 1.6.1 labels these JSON bodies text/plain (SPEC.md §15, ENGINE-2): both are declared so
    # that content-type checks pass; schemathesis validates the application/json variant only.
    return {"application/json": media, "text/plain": copy.deepcopy(media)}


def _worker_system(load: Loader) -> JSON:
    engine_reply: JSON = {
        "title": "EngineReply",
        "description": "A JSON object (ENGINE-1). A route that failed says so in the object, often with "
        'HTTP 200: callers read `status` ("error" means failure) and never the HTTP status alone.',
        "x-requirement": "ENGINE-1",
        "type": "object",
        "properties": {
            "status": {"type": "string", "description": '"ok" on success, "error" on failure'},
            "message": {"type": "string"},
        },
    }
    server_error: JSON = {
        "title": "SystemServerError",
        "description": "An error object with a message. Dynamo's system server sends "
        '{"error": "Route not found" | "Invalid JSON" | "Handler error", "message": ...}; '
        'other workers may send {"status": "error", "message": ...}.',
        "type": "object",
        "required": ["message"],
        "properties": {
            "error": {"type": "string"},
            "status": {"type": "string"},
            "message": {"type": "string"},
        },
    }
    health: JSON = {
        "title": "SystemHealth",
        "description": "The worker's health (ENGINE-3).",
        "x-requirement": "ENGINE-3",
        "type": "object",
        "properties": {
            "status": {"type": "string", "description": '"ready" or "notready"'},
            "endpoints": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    }
    request_body: JSON = {
        "title": "EngineRequest",
        "description": "A JSON object: the route's arguments (an empty body counts as {}). Example "
        'for pause_generation: {"mode": "keep", "clear_cache": false}.',
        "type": "object",
    }
    # RlWorkerRoutes is not an HTTP body: it is the worker's reply on the request plane (ROUTES-1),
    # embedded so that the worker's whole contract is in one document.
    components = _embedded(load, "RlWorkerRoutes")
    components.update(
        {
            "EngineRequest": request_body,
            "EngineReply": engine_reply,
            "SystemServerError": server_error,
            "SystemHealth": health,
        }
    )
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "Dynamo worker system server: RL engine routes",
            "version": "1",
            "summary": "A worker's system server at its system_url.",
            "description": "Served at the `system_url` a worker publishes (DYN_SYSTEM_ENABLED=true, "
            "DYN_SYSTEM_PORT). Every route a worker advertises in its `routes` answers `POST "
            "/engine/<route>`. Routes containing `/` (sidecar engines: `control/...`, "
            "`update/...`) exist too but cannot be a single OpenAPI path parameter and are not "
            "listed. Replies are JSON objects; Dynamo 1.6.1 labels them `text/plain; "
            "charset=utf-8` (ENGINE-2, a SHOULD), so both media types are declared and callers "
            "parse JSON whatever the header says. components/schemas/RlWorkerRoutes is the worker's reply to "
            '{"method": "routes"} on the request plane (ROUTES-1), not an HTTP body. A route\'s own failure is usually an HTTP 200 '
            'with `"status": "error"`: callers read `status`. ' + _SPEC_NOTE,
            "license": _LICENSE,
        },
        "servers": [
            {"url": "http://127.0.0.1:8081", "description": "a local worker's system server"}
        ],
        "tags": [{"name": "engine", "description": "RL engine routes"}, {"name": "health"}],
        "paths": {
            "/health": {
                "get": {
                    "operationId": "getSystemHealth",
                    "tags": ["health"],
                    "summary": "Worker health",
                    "x-requirements": ["ENGINE-3"],
                    "responses": {
                        "200": {
                            "description": "Ready.",
                            "content": _both_media_types(_ref("SystemHealth")),
                        },
                        "503": {
                            "description": "Not ready yet.",
                            "content": _both_media_types(_ref("SystemHealth")),
                        },
                    },
                }
            },
            "/engine/{route}": {
                "post": {
                    "operationId": "callEngineRoute",
                    "tags": ["engine"],
                    "summary": "Run one RL engine route",
                    "description": "Runs the route on this worker's engine (not a fan-out). A worker "
                    "serves the routes it lists in its `routes`; others answer 404.",
                    "x-requirements": ["ENGINE-1", "ENGINE-2"],
                    "parameters": [
                        {
                            "name": "route",
                            "in": "path",
                            "required": True,
                            "description": "An RL engine route name.",
                            "schema": {"type": "string", "enum": list(ENGINE_ROUTES)},
                        }
                    ],
                    "requestBody": {
                        "required": False,
                        "content": {"application/json": {"schema": _ref("EngineRequest")}},
                    },
                    "responses": {
                        "200": {
                            "description": "The route ran; the object says how it went.",
                            "content": _both_media_types(
                                _ref("EngineReply"), {"status": "ok", "message": "Engine paused"}
                            ),
                        },
                        "400": {
                            "description": "The body is not JSON.",
                            "content": _both_media_types(_ref("SystemServerError")),
                        },
                        "404": {
                            "description": "This worker does not serve the route.",
                            "content": _both_media_types(_ref("SystemServerError")),
                        },
                        "500": {
                            "description": "The route's handler raised.",
                            "content": _both_media_types(_ref("SystemServerError")),
                        },
                    },
                }
            },
        },
        "components": {"schemas": components},
    }


# --- admin.openapi.json ----------------------------------------------------------------------------

_U32 = 4294967295


def _admin_schemas() -> JSON:
    positive_u32 = {"type": "integer", "minimum": 1, "maximum": _U32}
    return {
        "StatusOk": {
            "description": "Success.",
            "type": "object",
            "required": ["status"],
            "properties": {"status": {"const": "ok"}},
        },
        "AdminError": {
            "description": "Failure, with any non-2xx status (ADMIN-2).",
            "type": "object",
            "required": ["status", "message"],
            "properties": {"status": {"const": "error"}, "message": {"type": "string"}},
        },
        "InitBroadcaster": {
            "description": "Join the weight-broadcast group (conventions prime-nccl and nixl, SPEC.md "
            "§12). Every engine of one plan gets the same host, port, inference_world_size and "
            "timeout (RANK-8); rank_offset and engine_world_size are its own.",
            "x-requirements": ["RANK-3", "RANK-5", "RANK-8"],
            "type": "object",
            "required": [
                "host",
                "port",
                "rank_offset",
                "inference_world_size",
                "engine_world_size",
                "timeout",
                "quantize_in_weight_transfer",
            ],
            "properties": {
                "host": {"type": "string", "minLength": 1, "description": "rendezvous host"},
                "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                "rank_offset": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": _U32,
                    "description": "the engine's first inference rank (from 0)",
                },
                "inference_world_size": {**positive_u32, "description": "W"},
                "engine_world_size": {**positive_u32, "description": "this engine's world_size"},
                "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "seconds"},
                "quantize_in_weight_transfer": {"type": "boolean"},
                "session_id": {
                    "type": "string",
                    "minLength": 1,
                    "description": "NIXL only: one id shared by every engine of the plan",
                },
            },
        },
        "UpdateWeights": {
            "description": "Load new weights: from a directory, or (null) from the broadcast group.",
            "type": "object",
            "required": ["weight_dir"],
            "properties": {"weight_dir": {"type": ["string", "null"], "minLength": 1}},
        },
        "CollectiveRpc": {
            "description": "Call a method on every worker process of the engine. The vllm-native-nccl "
            "convention initialises with method init_weight_transfer_engine and kwargs "
            '{"init_info": {"master_address", "master_port", "rank_offset", '
            '"world_size"}} (RANK-4). args defaults to [] and kwargs to {}, as in vLLM.',
            "type": "object",
            "required": ["method"],
            "properties": {
                "method": {"type": "string", "minLength": 1},
                "args": {"type": "array"},
                "kwargs": {"type": "object"},
                "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "seconds"},
            },
        },
        "InitInfo": {
            "description": "kwargs.init_info of collective_rpc init_weight_transfer_engine "
            "(vllm-native-nccl): rank_offset from 1, world_size = 1 + W (RANK-4).",
            "x-requirements": ["RANK-4"],
            "type": "object",
            "required": ["master_address", "master_port", "rank_offset", "world_size"],
            "properties": {
                "master_address": {"type": "string", "minLength": 1},
                "master_port": {"type": "integer", "minimum": 1, "maximum": 65535},
                "rank_offset": {"type": "integer", "minimum": 1, "maximum": _U32},
                "world_size": {"type": "integer", "minimum": 2, "maximum": _U32},
            },
        },
        "CollectiveRpcResult": {
            "description": "One result per worker process of the engine.",
            "type": "object",
            "required": ["results"],
            "properties": {"results": {"type": "array"}},
        },
    }


def _admin_responses(ok_schema: str, ok_description: str) -> JSON:
    def error(description: str) -> JSON:
        return {
            "description": description,
            "content": {"application/json": {"schema": _ref("AdminError")}},
        }

    return {
        "200": {
            "description": ok_description,
            "content": {"application/json": {"schema": _ref(ok_schema)}},
        },
        "400": error("The request is malformed: a body or query parameter breaks the schema."),
        "409": error("Well formed, but not possible in the engine's current state."),
        "4XX": error("Refused (for example 401/403 when the deployment protects the admin API)."),
        "5XX": error("The engine failed to carry the operation out."),
    }


def _admin_post(
    operation_id: str,
    summary: str,
    description: str,
    *,
    body: str | None = None,
    ok: str = "StatusOk",
) -> JSON:
    operation: JSON = {
        "operationId": operation_id,
        "tags": ["admin"],
        "summary": summary,
        "description": description,
        "x-requirements": ["ADMIN-2"],
        "responses": _admin_responses(ok, "Done."),
    }
    if body is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": _ref(body)}},
        }
    return operation


def _admin(_load: Loader) -> JSON:
    pause = _admin_post(
        "pause",
        "Pause generation",
        "Stop scheduling new requests before a weight update.",
    )
    pause["parameters"] = [
        {
            "name": "mode",
            "in": "query",
            "required": False,
            "description": "keep: keep in-flight requests paused; wait: let them finish; abort: drop them.",
            "schema": {"type": "string", "enum": ["keep", "wait", "abort"], "default": "keep"},
        },
        {
            "name": "clear_cache",
            "in": "query",
            "required": False,
            "schema": {"type": "boolean", "default": False},
        },
    ]
    health = {
        "operationId": "health",
        "tags": ["admin"],
        "summary": "Engine health",
        "description": "2xx when the engine is ready to be driven (ADMIN-1).",
        "x-requirements": ["ADMIN-1"],
        "responses": _admin_responses("StatusOk", "Ready."),
    }
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "Engine admin API at admin_base_url",
            "version": "1",
            "summary": "What a trainer drives on each discovered engine.",
            "description": "Paths are appended to the worker's `admin_base_url`, which may carry a path "
            "prefix: set it as the server URL. Requests and replies are JSON; every failure is a "
            'non-2xx status with {"status": "error", "message": ...} (ADMIN-2). A deployment '
            "may protect the API with a bearer token: clients send the configured API key, static "
            "headers and headers from env on every call to an allowed host (CRED-2, CRED-3). "
            "A request that matches this document is accepted (2xx), or refused with 409 when the "
            "engine's state forbids it; malformed requests get 400. " + _SPEC_NOTE,
            "license": _LICENSE,
        },
        "servers": [
            {
                "url": "http://127.0.0.1:8000",
                "description": "an engine's admin_base_url (any path prefix is part of it)",
            }
        ],
        "tags": [{"name": "admin", "description": "engine administration for RL weight updates"}],
        "security": [{}, {"bearerAuth": []}],
        "paths": {
            "/health": {"get": health},
            "/pause": {"post": pause},
            "/resume": {"post": _admin_post("resume", "Resume generation", "Undo pause.")},
            "/init_broadcaster": {
                "post": _admin_post(
                    "initBroadcaster",
                    "Join the weight-broadcast group",
                    "Conventions prime-nccl and nixl (SPEC.md §12).",
                    body="InitBroadcaster",
                )
            },
            "/update_weights": {
                "post": _admin_post(
                    "updateWeights",
                    "Load new weights",
                    "Between pause and resume.",
                    body="UpdateWeights",
                )
            },
            "/collective_rpc": {
                "post": _admin_post(
                    "collectiveRpc",
                    "Call a method on every worker process",
                    "vLLM's collective RPC (used by the vllm-native-nccl convention, SPEC.md §12.3).",
                    body="CollectiveRpc",
                    ok="CollectiveRpcResult",
                )
            },
        },
        "components": {
            "schemas": _admin_schemas(),
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "Optional: the configured API key (CRED-2).",
                }
            },
        },
    }


# --- files ---------------------------------------------------------------------------------------

#: File name in schema/openapi/ -> builder.
DOCUMENTS: dict[str, Callable[[Loader], JSON]] = {
    "rl-frontend.openapi.json": _rl_frontend,
    "worker-system.openapi.json": _worker_system,
    "admin.openapi.json": _admin,
}


def build_documents(load: Loader | None = None) -> dict[str, JSON]:
    """Every OpenAPI document by file name, built from the JSON Schemas ``load`` (default: bundled)."""
    loader = load if load is not None else load_json
    return {name: build(loader) for name, build in DOCUMENTS.items()}


def render(document: Mapping[str, Any]) -> str:
    """The checked-in text of a document (stable: 2-space indent, UTF-8, trailing newline)."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _stale(directory: Path, documents: Mapping[str, JSON]) -> list[str]:
    stale = []
    for name, document in documents.items():
        path = directory / name
        if not path.is_file() or path.read_text(encoding="utf-8") != render(document):
            stale.append(name)
    return stale


def main(argv: Sequence[str] | None = None) -> int:
    """Write (or with ``--check`` verify) schema/openapi/*.openapi.json."""
    parser = argparse.ArgumentParser(
        prog="python -m prime_rl_dynamo._openapi",
        description="Generate the OpenAPI documents of schema/openapi/ from the bundled JSON Schemas.",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if a checked-in document is missing or out of date",
    )
    args = parser.parse_args(argv)
    directory = schema_dir() / "openapi"
    documents = build_documents()
    if args.check:
        stale = _stale(directory, documents)
        for name in stale:
            print(
                f"{directory / name}: out of date with the JSON Schemas; "
                "run `python -m prime_rl_dynamo._openapi`",
                file=sys.stderr,
            )
        if not stale:
            print(f"{len(documents)} OpenAPI documents in {directory} are up to date")
        return 1 if stale else 0
    directory.mkdir(parents=True, exist_ok=True)
    for name, document in documents.items():
        (directory / name).write_text(render(document), encoding="utf-8")
        print(f"wrote {directory / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
