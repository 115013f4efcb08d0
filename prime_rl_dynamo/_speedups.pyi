"""The C accelerator of the validator's fast path (prime_rl_dynamo/_speedups.c)."""

from typing import Any

from prime_rl_dynamo._models import Worker

ABI: int

def configure(
    worker: type, worker_fields: tuple[Any, ...], transport: type, transport_fields: tuple[Any, ...]
) -> None: ...
def columns_hold(workers: tuple[Worker, ...], scope: str) -> int | None: ...
def quotes(raw: bytes) -> int: ...
