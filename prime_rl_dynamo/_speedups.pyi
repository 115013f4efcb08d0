"""The C accelerator of the validator's fast path (prime_rl_dynamo/_speedups.c)."""

from typing import Any

ABI: int

def configure(
    transport: type,
    transport_fields: tuple[Any, ...],
    models: tuple[tuple[type, tuple[Any, ...]], ...],
) -> None: ...
def columns_hold(workers: tuple[Any, ...], scope: str) -> int | None: ...
def typed_flags(
    workers: tuple[Any, ...], scope: str
) -> tuple[int, dict[str, list[int]]] | None: ...
def quotes(raw: bytes) -> int: ...
def scan(raw: bytes) -> tuple[int, bool]: ...
