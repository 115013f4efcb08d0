"""One reference engine's HTTP servers: the worker system server and the admin API under ``/admin``.

A single Starlette application serves every engine; the fleet's dispatcher puts the engine the
connection belongs to in the scope. Admin calls succeed unless the engine's faults say otherwise.
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from prime_rl_dynamo.reference.state import ReferenceEngine

__all__ = ["ADMIN_OPERATIONS", "ADMIN_PREFIX", "engine_app"]

ADMIN_PREFIX = "/admin"

#: Admin operations, as named in a topology's ``faults.admin_fail``.
ADMIN_OPERATIONS = (
    "health",
    "pause",
    "resume",
    "init_broadcaster",
    "update_weights",
    "collective_rpc",
)

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


async def _json_object(request: Request) -> dict[str, Any]:
    raw = await request.body()
    try:
        data = json.loads(raw) if raw else None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _BadRequest(f"body is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise _BadRequest(f"body must be a JSON object, found {type(data).__name__}")
    return data


def _field(data: dict[str, Any], name: str, kinds: tuple[type, ...], *, required: bool) -> Any:
    if name not in data:
        if required:
            raise _BadRequest(f"field {name!r} is required")
        return None
    value = data[name]
    # bool is an int in Python; JSON true is never an integer here.
    if isinstance(value, bool) and bool not in kinds:
        raise _BadRequest(f"field {name!r} must be {_kind_names(kinds)}, found a boolean")
    if not isinstance(value, kinds):
        raise _BadRequest(
            f"field {name!r} must be {_kind_names(kinds)}, found {type(value).__name__}"
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise _BadRequest(f"field {name!r} must be finite")
    return value


def _kind_names(kinds: tuple[type, ...]) -> str:
    names = {
        str: "a string",
        int: "an integer",
        float: "a number",
        bool: "a boolean",
        list: "an array",
        dict: "an object",
    }
    return " or ".join(names.get(k, k.__name__) for k in kinds)


async def _admin(request: Request, operation: str) -> Response:
    engine = _engine(request)
    faults = engine.spec.faults
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
        elif operation == "init_broadcaster":
            data = await _json_object(request)
            for name in ("port", "rank_offset", "inference_world_size", "engine_world_size"):
                _field(data, name, (int,), required=True)
            _field(data, "host", (str,), required=True)
            _field(data, "timeout", (int, float), required=False)
            _field(data, "quantize_in_weight_transfer", (bool,), required=False)
            _field(data, "session_id", (str,), required=False)
            if data["port"] < 0 or data["port"] > 65535:
                raise _BadRequest(f"field 'port' must be in 0..65535, found {data['port']}")
            for name in ("rank_offset",):
                if data[name] < 0:
                    raise _BadRequest(f"field {name!r} must be >= 0, found {data[name]}")
            for name in ("inference_world_size", "engine_world_size"):
                if data[name] < 1:
                    raise _BadRequest(f"field {name!r} must be >= 1, found {data[name]}")
        elif operation == "update_weights":
            data = await _json_object(request)
            _field(data, "weight_dir", (str, type(None)), required=False)
        elif operation == "collective_rpc":
            data = await _json_object(request)
            _field(data, "method", (str,), required=True)
            _field(data, "args", (list,), required=False)
            _field(data, "kwargs", (dict,), required=False)
            _field(data, "timeout", (int, float), required=False)
    except _BadRequest as exc:
        return _error(400, f"{operation}: {exc}")

    if operation in faults.admin_fail:
        return _error(500, f"injected failure of {operation} on engine {engine.key}")

    if operation == "pause":
        engine.paused = True
    elif operation == "resume":
        engine.paused = False
    elif operation == "init_broadcaster":
        engine.broadcaster = data
    elif operation == "update_weights":
        engine.weight_dirs.append(data.get("weight_dir"))
    elif operation == "collective_rpc":
        if data["method"] == "init_weight_transfer_engine":
            engine.broadcaster = data.get("kwargs") or {}
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
        data = await _json_object(request)
    except _BadRequest as exc:
        return _error(400, f"engine route {route}: {exc}")
    if route == "pause_generation":
        engine.paused = True
    elif route == "resume_generation":
        engine.paused = False
    return JSONResponse({"status": "ok", "route": route, "request": data})


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
    return Starlette(routes=routes)
