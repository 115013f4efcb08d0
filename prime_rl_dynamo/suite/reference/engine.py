"""One reference engine's HTTP servers: the worker system server and the admin API under ``/admin``.

A single Starlette application serves every engine; the fleet's dispatcher puts the engine the
connection belongs to in the scope. The admin API's routes, query parameters and request bodies are
the admin OpenAPI document's (openapi/admin.openapi.json): a request its schemas refuse gets 400
naming the field; others succeed unless the engine's faults say otherwise.
"""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator, ValidationError
from jsonschema.exceptions import best_match
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from prime_rl_dynamo.resources import load_json
from prime_rl_dynamo.suite.reference.state import ReferenceEngine
from prime_rl_dynamo.text import clip

__all__ = ["ADMIN_PREFIX", "engine_app"]

ADMIN_PREFIX = "/admin"


class _BadRequest(Exception):
    """The request does not follow the admin API; answered 400."""


def _engine(request: Request) -> ReferenceEngine:
    engine: ReferenceEngine = request.scope["prd.engine"]
    return engine


def _ok() -> JSONResponse:
    return JSONResponse({"status": "ok"})


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"status": "error", "message": message}, status_code=status)


def _no_constant(name: str) -> Any:
    # NaN and Infinity are not JSON, though Python's parser takes them.
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400 parses as infinity: no JSON peer means that
        raise ValueError(f"number {text} is out of range")
    return value


async def _json_value(request: Request) -> Any:
    """The body as JSON (``None`` when empty); :class:`_BadRequest` when it is not JSON."""
    raw = await request.body()
    try:
        return json.loads(raw, parse_constant=_no_constant, parse_float=_finite) if raw else None
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError too
        raise _BadRequest(f"body is not JSON: {exc}") from None


async def _lenient_object(request: Request) -> dict[str, Any]:
    """The body when it is a JSON object, else ``{}``: what a fault needs to know of a call."""
    try:
        data = await _json_value(request)
    except _BadRequest:
        return {}
    return data if isinstance(data, dict) else {}


async def _json_object(request: Request) -> dict[str, Any]:
    data = await _json_value(request)
    if not isinstance(data, dict):
        raise _BadRequest(f"body must be a JSON object, found {type(data).__name__}")
    return data


# --- the admin API's request rules: the admin OpenAPI document's own schemas ------------------------

_ADMIN_DOCUMENT = "openapi/admin.openapi.json"
# The document's local refs ("#/components/schemas/...") resolve inside this resource.
_DOCUMENT_URI = "urn:prime-rl-dynamo:admin.openapi.json"
_QUERY_WORDS: dict[str, dict[str, Any]] = {"boolean": {"true": True, "false": False}}
# jsonschema quotes the offending value whole; a refusal quotes at most this much of it.
_QUOTE_LIMIT = 200


@dataclass(frozen=True, slots=True)
class _Operation:
    """One admin operation as the document declares it: its method, query and request body."""

    method: str
    query: dict[str, tuple[dict[str, Any], Draft202012Validator]]
    body: tuple[str, Draft202012Validator] | None  # (schema name, validator)


def _validator(schema: dict[str, Any], registry: Registry[Any]) -> Draft202012Validator:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#"):
        schema = {**schema, "$ref": _DOCUMENT_URI + ref}
    return Draft202012Validator(schema, registry=registry)


@cache
def _operations() -> dict[str, _Operation]:
    """Every admin operation by its path's name (``/pause`` -> ``pause``), read from the document."""
    document = load_json(_ADMIN_DOCUMENT)
    registry: Registry[Any] = Registry().with_resource(
        _DOCUMENT_URI, Resource.from_contents(document, default_specification=DRAFT202012)
    )
    operations = {}
    for path, item in document["paths"].items():
        ((method, operation),) = item.items()
        query = {
            p["name"]: (p["schema"], _validator(p["schema"], registry))
            for p in operation.get("parameters", [])
            if p["in"] == "query"
        }
        body = None
        if "requestBody" in operation:
            schema = operation["requestBody"]["content"]["application/json"]["schema"]
            body = (schema["$ref"].rsplit("/", 1)[-1], _validator(schema, registry))
        operations[path.strip("/")] = _Operation(method.upper(), query, body)
    return operations


def _said(error: ValidationError) -> str:
    message = error.message
    return clip(message, _QUOTE_LIMIT)


def _refusal(error: ValidationError) -> str:
    """One schema error as a sentence naming the field: what was expected and what came."""
    required, instance = error.validator_value, error.instance
    if error.validator == "required" and isinstance(required, list) and isinstance(instance, dict):
        missing = [name for name in required if name not in instance]
        if missing:
            return f"field {missing[0]!r} is required"
    where = "/".join(str(part) for part in error.absolute_path)
    return f"field {where!r}: {_said(error)}" if where else _said(error)


def _check_query(request: Request, operation: _Operation) -> None:
    for name, (schema, validator) in operation.query.items():
        raw = request.query_params.get(name)
        if raw is None:
            continue
        value = _QUERY_WORDS.get(str(schema.get("type")), {}).get(raw, raw)
        error = best_match(validator.iter_errors(value))
        if error is not None:
            raise _BadRequest(f"query {name}: {_said(error)}")


async def _check_body(request: Request, operation: _Operation) -> dict[str, Any]:
    if operation.body is None:
        return {}
    name, validator = operation.body
    data = await _json_object(request)
    error = best_match(validator.iter_errors(data))
    if error is not None:
        raise _BadRequest(f"{_refusal(error)} (schema {name})")
    return data


_INIT_OPERATIONS = ("init_broadcaster", "collective_rpc")
_INIT_METHODS = ("init_broadcaster", "init_weight_transfer_engine")


def _redirect(request: Request, host: str | None = None, moved: str | None = None) -> Response:
    """307 to the same URL under another host name, or under ``moved`` on the same origin (the
    admin prefix kept: ``/admin/pause`` -> ``/admin/moved/pause``)."""
    url = request.url.replace(hostname=host) if host is not None else request.url
    if moved is not None:
        url = url.replace(path=ADMIN_PREFIX + moved + url.path.removeprefix(ADMIN_PREFIX))
    return JSONResponse(
        {"status": "error", "message": f"moved to {url}"},
        status_code=307,
        headers={"location": str(url)},
    )


def _is_init(operation: str, data: dict[str, Any]) -> bool:
    return operation == "init_broadcaster" or (
        operation == "collective_rpc" and data.get("method") in _INIT_METHODS
    )


def _after_init(engine: ReferenceEngine) -> None:
    if engine.resize_after_init is not None:
        engine.world_size, engine.resize_after_init = engine.resize_after_init, None


async def _admin(request: Request, operation: str) -> Response:
    engine = _engine(request)
    faults = engine.spec.faults
    redirect = engine.admin_redirect_host
    if redirect is not None and request.url.hostname != redirect:
        return _redirect(request, redirect)
    if engine.admin_redirect_path is not None:  # the moved path has no route: a follower gets 404
        return _redirect(request, moved=engine.admin_redirect_path)
    if faults.admin_latency_ms:
        await asyncio.sleep(faults.admin_latency_ms / 1000.0)
    # A scripted fault comes before any validation of the body: a client whose body this engine
    # would refuse is presented the fault all the same (ADMIN-3, TOPO-1 judge what it does then).
    if operation in faults.admin_fail:
        return _error(500, f"injected failure of {operation} on engine {engine.key}")
    # The worker processes that answer this call: a resize scripted after the init shows in the
    # listing, not in the reply of the init that triggered it.
    processes = engine.world_size
    if operation in _INIT_OPERATIONS and _is_init(operation, await _lenient_object(request)):
        if engine.admin_error_in_200:
            # Dynamo's engine routes answer errors in a 200 body: the fault makes admin do so too.
            return JSONResponse(
                {"status": "error", "message": f"injected init failure on engine {engine.key}"}
            )
        _after_init(engine)
    try:
        declared = _operations()[operation]
        _check_query(request, declared)
        data = await _check_body(request, declared)
    except _BadRequest as exc:
        return _error(400, f"{operation}: {exc}")

    if operation == "pause":
        engine.paused = True
    elif operation == "resume":
        engine.paused = False
    elif operation == "init_broadcaster":
        engine.broadcaster = data
    elif operation == "update_weights":
        engine.weight_dirs.append(data.get("weight_dir"))
    elif operation == "collective_rpc":
        if data["method"] in ("init_weight_transfer_engine", "init_broadcaster"):
            engine.broadcaster = {"args": data.get("args", []), **(data.get("kwargs") or {})}
        # One result per worker process of the engine, as vLLM's collective_rpc returns.
        return JSONResponse({"results": [None] * processes})
    return _ok()


def _admin_route(operation: str, method: str) -> Route:
    async def endpoint(request: Request) -> Response:
        return await _admin(request, operation)

    return Route(f"{ADMIN_PREFIX}/{operation}", endpoint, methods=[method])


async def _system_health(request: Request) -> Response:
    engine = _engine(request)
    return JSONResponse({"status": "ready", "endpoints": {engine.spec.endpoint: "ready"}})


async def _engine_route(request: Request) -> Response:
    engine = _engine(request)
    route = request.path_params["route"]
    if route not in engine.spec.routes:
        return JSONResponse(
            {"status": "error", "message": f"no engine route {route!r} on {engine.key}"},
            status_code=404,
        )
    try:
        # An empty body counts as {} (the route takes no arguments then).
        data = await _json_value(request) if await request.body() else {}
    except _BadRequest as exc:
        return _error(400, f"engine route {route}: {exc}")
    if not isinstance(data, dict):
        # As Dynamo's system server: any JSON reaches the route, which answers in a 200 body.
        found = "null" if data is None else type(data).__name__
        return JSONResponse(
            {
                "status": "error",
                "message": f"engine route {route}: arguments must be a JSON object, found {found}",
            }
        )
    done: dict[str, Any] = {"status": "ok", "message": f"{route} done", "arguments": data}
    name = route.rsplit("/", 1)[-1]  # "control/pause_generation" acts as "pause_generation"
    if name == "pause_generation":
        engine.paused = True
    elif name == "resume_generation":
        engine.paused = False
    elif name == "is_paused":
        done["is_paused"] = engine.paused
    elif name == "get_weight_version":
        done["weight_version"] = engine.weight_version
    elif name == "update_weight_version":
        engine.weight_version = str(data.get("new_version"))
    elif name == "update_weights":
        engine.weight_dirs.append(json.dumps(data.get("update_info")))
    elif name == "init_weight_transfer_engine":
        if engine.admin_error_in_200:
            # Dynamo's engine routes answer errors in a 200 body.
            return JSONResponse(
                {"status": "error", "message": f"injected init failure on engine {engine.key}"}
            )
        engine.broadcaster = data.get("init_info") if isinstance(data, dict) else None
        _after_init(engine)
    return JSONResponse(done)


async def _http_error(request: Request, exc: Exception) -> Response:
    # Unknown paths and methods answer with the error object both OpenAPI documents describe.
    assert isinstance(exc, HTTPException)
    return JSONResponse(
        {"status": "error", "message": f"{exc.detail}: {request.method} {request.url.path}"},
        status_code=exc.status_code,
        headers=exc.headers,
    )


def engine_app() -> Starlette:
    """The Starlette application shared by every engine of a fleet."""
    routes = [
        Route("/health", _system_health, methods=["GET"]),
        Route("/engine/{route:path}", _engine_route, methods=["POST"]),
        *(_admin_route(name, op.method) for name, op in _operations().items()),
    ]
    return Starlette(routes=routes, exception_handlers={HTTPException: _http_error})
