"""One reference engine's HTTP servers: the worker system server and the admin API under ``/admin``.

A single Starlette application serves every engine; the fleet's dispatcher puts the engine the
connection belongs to in the scope. Admin calls succeed unless the engine's faults say otherwise.
"""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from prime_rl_dynamo.reference.state import ReferenceEngine

__all__ = ["ADMIN_PREFIX", "engine_app"]

ADMIN_PREFIX = "/admin"

_PAUSE_MODES = ("abort", "wait", "keep")
_BOOLEAN_WORDS = ("true", "false")


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


async def _json_object(request: Request) -> dict[str, Any]:
    raw = await request.body()
    try:
        data = json.loads(raw, parse_constant=_no_constant) if raw else None
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError too
        raise _BadRequest(f"body is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise _BadRequest(f"body must be a JSON object, found {type(data).__name__}")
    return data


_U32 = 4294967295


@dataclass(frozen=True, slots=True)
class _Rule:
    """What one body field of the admin API may hold (as the admin OpenAPI document says)."""

    kinds: tuple[type, ...]
    required: bool = True
    minimum: float | None = None
    maximum: float | None = None
    positive: bool = False  # exclusive minimum 0
    min_length: int | None = None


_BODIES: dict[str, dict[str, _Rule]] = {
    "init_broadcaster": {
        "host": _Rule((str,), min_length=1),
        "port": _Rule((int,), minimum=1, maximum=65535),
        "rank_offset": _Rule((int,), minimum=0, maximum=_U32),
        "inference_world_size": _Rule((int,), minimum=1, maximum=_U32),
        "engine_world_size": _Rule((int,), minimum=1, maximum=_U32),
        "timeout": _Rule((int, float), positive=True),
        "quantize_in_weight_transfer": _Rule((bool,)),
        "session_id": _Rule((str,), required=False, min_length=1),
    },
    "update_weights": {"weight_dir": _Rule((str, type(None)), min_length=1)},
    "collective_rpc": {
        "method": _Rule((str,), min_length=1),
        # vLLM's handler defaults both (args [] and kwargs {}); so does the admin API.
        "args": _Rule((list,), required=False),
        "kwargs": _Rule((dict,), required=False),
        "timeout": _Rule((int, float), required=False, positive=True),
    },
}


def _kind_names(kinds: tuple[type, ...]) -> str:
    names = {
        str: "a string",
        int: "an integer",
        float: "a number",
        bool: "a boolean",
        list: "an array",
        dict: "an object",
        type(None): "null",
    }
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _check_field(data: dict[str, Any], name: str, rule: _Rule) -> None:
    if name not in data:
        if rule.required:
            raise _BadRequest(f"field {name!r} is required")
        return
    value = data[name]
    kinds = _kind_names(rule.kinds)
    # bool is an int in Python, but JSON true is never an integer or a number.
    if isinstance(value, bool) and bool not in rule.kinds:
        raise _BadRequest(f"field {name!r} must be {kinds}, found a boolean")
    # JSON Schema counts 2.0 as an integer; so does the admin API.
    integral = int in rule.kinds and isinstance(value, float) and value.is_integer()
    if not isinstance(value, rule.kinds) and not integral:
        raise _BadRequest(f"field {name!r} must be {kinds}, found {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):
        raise _BadRequest(f"field {name!r} must be finite, found {value}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if rule.minimum is not None and value < rule.minimum:
            raise _BadRequest(f"field {name!r} must be >= {rule.minimum}, found {value}")
        if rule.maximum is not None and value > rule.maximum:
            raise _BadRequest(f"field {name!r} must be <= {rule.maximum}, found {value}")
        if rule.positive and value <= 0:
            raise _BadRequest(f"field {name!r} must be > 0, found {value}")
    if isinstance(value, str) and rule.min_length is not None and len(value) < rule.min_length:
        raise _BadRequest(f"field {name!r} must be a non-empty string")


_INIT_OPERATIONS = ("init_broadcaster", "collective_rpc")
_INIT_METHODS = ("init_broadcaster", "init_weight_transfer_engine")


def _redirect(request: Request, host: str) -> Response:
    url = request.url.replace(hostname=host)
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
    if faults.admin_latency_ms:
        await asyncio.sleep(faults.admin_latency_ms / 1000.0)
    try:
        if operation == "pause":
            mode = request.query_params.get("mode", "keep")
            clear = request.query_params.get("clear_cache", "false")
            if mode not in _PAUSE_MODES:
                raise _BadRequest(f"query mode must be one of {list(_PAUSE_MODES)}, found {mode!r}")
            if clear not in _BOOLEAN_WORDS:
                raise _BadRequest(f"query clear_cache must be true or false, found {clear!r}")
        elif operation in _BODIES:
            data = await _json_object(request)
            for name, rule in _BODIES[operation].items():
                _check_field(data, name, rule)
    except _BadRequest as exc:
        return _error(400, f"{operation}: {exc}")

    if operation in faults.admin_fail:
        return _error(500, f"injected failure of {operation} on engine {engine.key}")
    if operation in _INIT_OPERATIONS and _is_init(operation, data):
        if engine.admin_error_in_200:
            # Dynamo's engine routes answer errors in a 200 body (FACTS.md §7).
            return JSONResponse(
                {"status": "error", "message": f"injected init failure on engine {engine.key}"}
            )
        _after_init(engine)

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
        return JSONResponse({"results": [None] * engine.world_size})
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
        data = await _json_object(request) if await request.body() else {}
    except _BadRequest as exc:
        return _error(400, f"engine route {route}: {exc}")
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
            # Dynamo's engine routes answer errors in a 200 body (FACTS.md §7).
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
        _admin_route("health", "GET"),
        _admin_route("pause", "POST"),
        _admin_route("resume", "POST"),
        _admin_route("init_broadcaster", "POST"),
        _admin_route("update_weights", "POST"),
        _admin_route("collective_rpc", "POST"),
    ]
    return Starlette(routes=routes, exception_handlers={HTTPException: _http_error})
