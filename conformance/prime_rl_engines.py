"""What Prime-RL's engines take, per generation, as data: the admin routes of its vLLM server, the
fields each init route reads, and the parameters of its workers' ``init_broadcaster``.

Facts from Prime-RL's public repository (github.com/PrimeIntellect-ai/prime-rl), each with where it
was read: a commit of the fetched history (``git show COMMIT:PATH``, line numbers), or, for main
after August 2026, a file version of the search tool's index (its index id and, when known, the
commit it was stored at; character offsets where the tool gives no lines). The client profile
judges a trainer's init calls against ``TARGET``'s worker signatures: a keyword the signature lacks
is a ``TypeError`` inside the engine, and a positional argument binds to the parameter at its
position, whatever the client meant by it (RANK-3).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GENERATIONS", "TARGET", "EngineGeneration", "Source", "bind"]

_REPO = "PrimeIntellect-ai/prime-rl"
_SERVER = "src/prime_rl/inference/vllm/server.py"
_NCCL = "src/prime_rl/inference/vllm/worker/nccl.py"
_NIXL = "src/prime_rl/inference/vllm/worker/nixl.py"
#: The parameters every generation's init_broadcaster starts with (after ``self``).
_HEAD = ("host", "port", "rank_offset", "inference_world_size", "timeout")


@dataclass(frozen=True)
class Source:
    """Where a fact was read: ``repo``, ``path``, and ``at`` (commit or index id, lines)."""

    path: str
    at: str
    repo: str = _REPO


@dataclass(frozen=True)
class EngineGeneration:
    """One generation's engine side: routes and the fields its init route reads, and each
    worker's ``init_broadcaster`` parameters in order (None: that worker has none)."""

    name: str
    routes: tuple[str, ...]
    init_route_reads: tuple[str, ...]
    nccl_init: tuple[str, ...] | None
    nixl_init: tuple[str, ...] | None
    sources: tuple[Source, ...]

    def worker_init(self, worker: str) -> tuple[str, ...] | None:
        """The parameters of ``worker``'s init_broadcaster (``"nccl"`` or ``"nixl"``)."""
        return self.nccl_init if worker == "nccl" else self.nixl_init


GENERATIONS: dict[str, EngineGeneration] = {
    g.name: g
    for g in (
        EngineGeneration(
            "828ddc7da",
            ("/pause", "/resume", "/update_weights", "/load_lora_adapter", "/init_broadcaster"),
            (*_HEAD, "quantize_in_weight_transfer", "session_id"),
            (*_HEAD, "quantize_in_weight_transfer", "session_id"),
            (*_HEAD, "quantize_in_weight_transfer", "session_id"),
            (
                Source(_SERVER, "828ddc7da lines 71-147 (init_broadcaster: 134-147)"),
                Source(_NCCL, "828ddc7da lines 95-104"),
                Source(_NIXL, "828ddc7da lines 90-99"),
            ),
        ),
        EngineGeneration(
            "e9d3f8791",
            ("/pause", "/resume", "/update_weights", "/load_lora_adapter", "/init_broadcaster"),
            (*_HEAD, "engine_world_size", "quantize_in_weight_transfer", "session_id"),
            (*_HEAD, "quantize_in_weight_transfer", "session_id", "engine_world_size"),
            (*_HEAD, "quantize_in_weight_transfer", "session_id", "engine_world_size"),
            (
                Source(_SERVER, "e9d3f8791 lines 70-157 (init_broadcaster: 133-157)"),
                Source(_NCCL, "e9d3f8791 lines 103-113"),
                Source(_NIXL, "e9d3f8791 lines 91-101"),
            ),
        ),
        EngineGeneration(
            "73164c322",
            (
                "/pause",
                "/resume",
                "/update_weights",
                "/start_weight_update",
                "/finish_weight_update",
                "/load_lora_adapter",
                "/init_broadcaster",
            ),
            # backend "nixl": positional to the NIXL worker; else vLLM's native engine
            # (init_info: master_address, master_port, rank_offset + 1, world_size W + 1).
            ("backend", *_HEAD, "session_id"),
            None,  # the NCCL worker has no init_broadcaster: vLLM's weight-transfer engine
            (*_HEAD, "session_id"),
            (
                Source(_SERVER, "73164c322 lines 74-179 (init_broadcaster: 153-179)"),
                Source(_NCCL, "73164c322 (no init_broadcaster)"),
                Source(_NIXL, "73164c322 lines 90-98"),
            ),
        ),
        EngineGeneration(
            "main",
            (
                "/pause",
                "/resume",
                "/update_weights",
                "/stage",
                "/commit",
                "/reload_weights",
                "/load_lora_adapter",
                "/liveness",
                "/init_broadcaster",
            ),
            # Sent on as six positional args: the worker's engine_world_size is never filled.
            (*_HEAD, "quantize_in_weight_transfer"),
            (*_HEAD, "quantize_in_weight_transfer", "engine_world_size"),
            None,  # not read: the NIXL worker is not selectable on main's server
            (
                Source(_SERVER, "index id 63572154582, init_broadcaster at chars 10760-11290"),
                Source(
                    _NCCL,
                    "index id 57101607298 (commit 03199f7cf4b7), NCCLWeightUpdateWorker."
                    "init_broadcaster: no session_id, no **kwargs",
                ),
            ),
        ),
    )
}

#: The engine the reference fleet stands for and the client profile judges init calls against:
#: the generation whose worker takes every field the rank math needs (engine_world_size).
TARGET = GENERATIONS["e9d3f8791"]


def bind(
    parameters: tuple[str, ...], args: list[object], kwargs: dict[str, object]
) -> tuple[dict[str, object], str | None]:
    """Bind a call's ``args`` and ``kwargs`` to ``parameters`` as Python would: (bound values,
    None), or (what bound, the TypeError the engine would raise)."""
    bound: dict[str, object] = dict(zip(parameters, args, strict=False))
    if len(args) > len(parameters):
        return bound, (
            f"{len(args)} positional arguments for {len(parameters)} parameters "
            f"({', '.join(parameters)})"
        )
    for name, value in kwargs.items():
        if name not in parameters:
            return bound, f"unexpected keyword argument {name!r}"
        if name in bound:
            return bound, f"multiple values for argument {name!r}"
        bound[name] = value
    missing = [name for name in _HEAD if name in parameters and name not in bound]
    if missing:
        return bound, f"missing required argument(s) {', '.join(missing)}"
    return bound, None
