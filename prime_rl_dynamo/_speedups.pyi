"""The C accelerator of the validator's fast path (prime_rl_dynamo/_speedups.c)."""

from typing import Any

ABI: int

def configure(
    transport: type,
    transport_fields: tuple[Any, ...],
    models: tuple[tuple[type, tuple[Any, ...]], ...],
) -> None: ...
def columns_hold(workers: tuple[Any, ...], scope: str) -> int | tuple[int, list[int]] | None: ...
def typed_flags(
    workers: tuple[Any, ...], scope: str
) -> tuple[int, dict[str, list[int]]] | None: ...
def quotes(raw: bytes) -> int: ...
def scan(raw: bytes) -> tuple[int, bool]: ...
def configure_violations(violation: type, fields: tuple[Any, ...], level: str) -> None: ...
def violation(
    requirement: str,
    pointer: str,
    message: str,
    worker: str | None,
    expected: str | None,
    found: str | None,
) -> Any: ...
def label(worker: Any) -> str: ...
def property_violations(
    workers: tuple[Any, ...],
    flagged: dict[str, list[int]],
    judges: tuple[tuple[str, int, Any, Any], ...],
    labels: dict[int, str],
) -> tuple[list[Any], set[tuple[int, str]]]: ...
