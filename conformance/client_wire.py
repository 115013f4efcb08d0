"""Every wire form real trainers use to call engines, read into one record before judging.

They are: Prime's ``/init_broadcaster`` (direct), ``collective_rpc`` with method
``init_broadcaster`` (keywords, or positional ``args`` in the NIXL and the older NCCL layout),
vLLM's ``collective_rpc`` ``init_weight_transfer_engine``, and Dynamo's engine routes
``{system_url}/engine/update/*``. The client profile judges rank offsets and group coordinates on
the :class:`InitRecord` of each call, whatever form it came in. A call that looks like an init but
cannot be read raises :class:`Uninterpretable` naming the call: the suite then reports an error of
its own reading, never a "found None" failure of the client.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prime_rl_dynamo.recording import RecordedRequest

__all__ = [
    "InitRecord",
    "Uninterpretable",
    "describe_call",
    "init_record",
    "is_init",
    "is_update",
]

_ENGINE_ROUTE = "/engine/"
_NATIVE_ROUTE = "update/init_weight_transfer_engine"
_INIT_METHODS = ("init_broadcaster", "init_weight_transfer_engine")
_UPDATE_METHODS = ("update_weights_from_path", "reload_weights", "update_weights")


class Uninterpretable(ValueError):
    """An admin call that looks like a broadcast init but none of the known forms reads it."""


@dataclass(frozen=True, slots=True)
class InitRecord:
    """One broadcast init, whatever its wire form: what a rank or coordinate check judges.

    ``family`` is ``"prime"`` (Prime's broadcaster: offsets from 0, ``inference_world_size`` W)
    or ``"vllm-native"`` (offsets from 1, ``group_world_size`` 1 + W). Fields the form does not
    carry are None (positional forms send no ``engine_world_size``).
    """

    engine: str
    form: str
    family: str
    rank_offset: Any
    host: Any
    port: Any
    inference_world_size: Any = None
    engine_world_size: Any = None
    group_world_size: Any = None
    timeout: Any = None
    session_id: Any = None
    status: int = 0

    @property
    def accepted(self) -> bool:
        """Whether the engine answered the call with a 2xx status."""
        return 200 <= self.status < 300


def describe_call(r: RecordedRequest) -> str:
    """``POST /collective_rpc (method init_broadcaster) to dynamo.prefill#0``: for messages."""
    body = r.json if isinstance(r.json, dict) else {}
    method = f" (method {body['method']})" if isinstance(body.get("method"), str) else ""
    where = "system server" if r.server == "system" else "admin API"
    return f"{r.method} {r.path}{method} to {r.engine} ({where})"


def _route(r: RecordedRequest) -> str | None:
    if r.server == "system" and r.path.startswith(_ENGINE_ROUTE):
        return r.path[len(_ENGINE_ROUTE) :]
    return None


def _is_call(
    r: RecordedRequest, routes: tuple[str, ...], endpoint: str, methods: tuple[str, ...]
) -> bool:
    """Whether ``r`` is a POST of one of these engine ``routes``, of the admin ``endpoint``, or of
    ``collective_rpc`` with one of these ``methods``."""
    if r.method != "POST":
        return False
    route = _route(r)
    if route is not None:
        return route in routes
    if r.server != "admin":
        return False
    if r.path.endswith(endpoint):
        return True
    body = r.json if isinstance(r.json, dict) else {}
    return r.path.endswith("/collective_rpc") and body.get("method") in methods


def is_init(r: RecordedRequest) -> bool:
    """Whether ``r`` is a broadcast init in any known form (judged by its path and method)."""
    return _is_call(r, (_NATIVE_ROUTE,), "/init_broadcaster", _INIT_METHODS)


def is_update(r: RecordedRequest) -> bool:
    """Whether ``r`` is a weight update in any known form (a direct, ``collective_rpc`` or
    engine-route update)."""
    routes = ("update/update_weights", "update/start_weight_update")
    return _is_call(r, routes, "/update_weights", _UPDATE_METHODS)


def _object(value: Any, what: str, r: RecordedRequest) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise Uninterpretable(
            f"{describe_call(r)}: expected {what} to be a JSON object, found {type(value).__name__}"
        )
    return value


#: Where each family's wire form carries an InitRecord's fields: field -> key of the call.
_WIRE_KEYS = {
    "vllm-native": {
        "rank_offset": "rank_offset",
        "host": "master_address",
        "port": "master_port",
        "group_world_size": "world_size",
    },
    "prime": {
        "rank_offset": "rank_offset",
        "host": "host",
        "port": "port",
        "inference_world_size": "inference_world_size",
        "engine_world_size": "engine_world_size",
        "timeout": "timeout",
        "session_id": "session_id",
    },
}


def _record(r: RecordedRequest, family: str, values: dict[str, Any], form: str) -> InitRecord:
    """The InitRecord of one init call of ``family`` whose arguments are ``values``."""
    fields = {field: values.get(key) for field, key in _WIRE_KEYS[family].items()}
    return InitRecord(engine=r.engine, form=form, family=family, status=r.status, **fields)


def _positional(r: RecordedRequest, args: list[Any], timeout: Any) -> InitRecord:
    """The two positional layouts of ``init_broadcaster``: NIXL (6 args) and NCCL (7 args)."""
    names = ["host", "port", "rank_offset", "inference_world_size", "timeout"]
    if len(args) == 6 and (args[5] is None or isinstance(args[5], str)):
        form, names = "collective_rpc init_broadcaster, positional (NIXL)", [*names, "session_id"]
    elif len(args) == 7:
        form = "collective_rpc init_broadcaster, positional (NCCL)"
        names = [*names, "quantize_in_weight_transfer", "backend"]
    else:
        raise Uninterpretable(
            f"{describe_call(r)}: positional args of length {len(args)} match neither layout "
            "of init_broadcaster (6: host, port, rank_offset, inference_world_size, timeout, "
            "session_id; 7: ..., timeout, quantize_in_weight_transfer, backend)"
        )
    fields = dict(zip(names, args, strict=True))
    fields.setdefault("timeout", timeout)
    return _record(r, "prime", fields, form)


def init_record(r: RecordedRequest) -> InitRecord:
    """The one record of a broadcast init (``is_init(r)`` must hold); Uninterpretable otherwise."""
    route = _route(r)
    if route is not None:
        body = _object(r.json if r.json is not None else {}, "the body", r)
        info = _object(body.get("init_info"), "init_info", r)
        return _record(r, "vllm-native", info, "engine route update/init_weight_transfer_engine")
    body = _object(r.json, "the body", r)
    if r.path.endswith("/init_broadcaster"):
        return _record(r, "prime", body, "init_broadcaster")
    method = body.get("method")
    args = body.get("args", [])
    kwargs = body.get("kwargs", {})
    if not isinstance(args, list):
        raise Uninterpretable(f"{describe_call(r)}: args must be an array, found {args!r}")
    kwargs = _object(kwargs, "kwargs", r)
    if method == "init_weight_transfer_engine":
        if "init_info" in kwargs:
            info = _object(kwargs["init_info"], "kwargs.init_info", r)
        elif len(args) == 1:
            info = _object(args[0], "args[0] (init_info)", r)
        else:
            raise Uninterpretable(
                f"{describe_call(r)}: init_weight_transfer_engine carries no init_info "
                "(expected kwargs.init_info or one positional argument)"
            )
        return _record(r, "vllm-native", info, "collective_rpc init_weight_transfer_engine")
    if args and kwargs:
        raise Uninterpretable(
            f"{describe_call(r)}: init_broadcaster with both args and kwargs is no known form"
        )
    if args:
        return _positional(r, args, body.get("timeout"))
    if "rank_offset" not in kwargs:
        raise Uninterpretable(
            f"{describe_call(r)}: init_broadcaster with neither positional args nor a "
            "rank_offset keyword"
        )
    return _record(r, "prime", kwargs, "collective_rpc init_broadcaster, keywords")
