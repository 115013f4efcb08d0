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

from prime_rl_dynamo.suite.recording import RecordedRequest

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
    #: Why the call binds to no Prime-RL worker's init_broadcaster of its family (a TypeError, or
    #: a non-boolean quantize_in_weight_transfer); None: it binds (RANK-3, RANK-5).
    binding_problem: str | None = None

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


def _binding(
    worker: str, args: list[Any], kwargs: dict[str, Any]
) -> tuple[dict[str, Any], str | None]:
    """Bind an ``init_broadcaster`` call to the ``worker`` (``"nccl"`` or ``"nixl"``) of every
    Prime-RL generation: (what bound, None) at the first one it fits, with a boolean
    ``quantize_in_weight_transfer``; else (what bound to the first, why it fits none)."""
    from conformance.prime_rl_engines import GENERATIONS, bind

    first: dict[str, Any] | None = None
    why: list[str] = []
    for generation in GENERATIONS.values():
        parameters = generation.worker_init(worker)
        if parameters is None:
            continue
        bound, error = bind(parameters, args, kwargs)
        quantize = bound.get("quantize_in_weight_transfer", False)
        if error is None and not isinstance(quantize, bool):
            error = f"quantize_in_weight_transfer bound to {quantize!r}, not a boolean"
        if error is None:
            return bound, None
        first = bound if first is None else first
        why.append(f"{generation.name}: {error}")
    return first or {}, f"fits no Prime-RL {worker} worker's init_broadcaster ({'; '.join(why)})"


def _rpc_init(
    r: RecordedRequest, args: list[Any], kwargs: dict[str, Any], timeout: Any, worker: str
) -> InitRecord:
    """``collective_rpc`` ``init_broadcaster``, positional or keywords, read as the target worker
    binds it (a sixth positional argument of the NCCL worker is quantize_in_weight_transfer)."""
    bound, problem = _binding(worker, args, kwargs)
    if args:
        layout = "NIXL" if worker == "nixl" else "NCCL"
        form = f"collective_rpc init_broadcaster, positional ({layout})"
    else:
        form = "collective_rpc init_broadcaster, keywords"
    fields = {field: bound.get(key) for field, key in _WIRE_KEYS["prime"].items()}
    if fields["timeout"] is None:
        fields["timeout"] = timeout
    return InitRecord(
        engine=r.engine,
        form=form,
        family="prime",
        status=r.status,
        binding_problem=problem,
        **fields,
    )


def init_record(r: RecordedRequest, worker: str = "nccl") -> InitRecord:
    """The one record of a broadcast init (``is_init(r)`` must hold); Uninterpretable otherwise.
    ``worker``: the Prime worker a ``collective_rpc`` init reaches (``"nccl"``, or ``"nixl"``
    under the nixl convention), whose signature binds its arguments."""
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
        return _rpc_init(r, args, {}, body.get("timeout"), worker)
    if "rank_offset" not in kwargs:
        raise Uninterpretable(
            f"{describe_call(r)}: init_broadcaster with neither positional args nor a "
            "rank_offset keyword"
        )
    return _rpc_init(r, [], kwargs, body.get("timeout"), worker)
