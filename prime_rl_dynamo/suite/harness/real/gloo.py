"""A gloo weight broadcast standing in for Prime-RL's NCCL broadcaster, on the CPU.

Two halves, both run in the real-engine virtualenv (they need torch):

- ``GlooWeightReceiver``, a vLLM worker extension (``--worker-extension-cls``): each engine's
  tensor-parallel rank joins the group the package's plan describes when the admin API's
  ``/collective_rpc`` calls ``init_broadcaster`` (the plan's body: ``host``, ``port``,
  ``rank_offset``, ``inference_world_size``, ``timeout``); its rank is ``rank_offset`` plus its
  tensor-parallel rank plus one in a group of ``inference_world_size + 1``. ``receive_weights`` takes one
  broadcast of every tensor from rank 0 and loads it into the model.
- ``python -m prime_rl_dynamo.suite.harness.real.gloo PORT W CHECKPOINT``: rank 0 (the trainer). It
  hosts the rendezvous store, waits until every rank 1..W has been claimed exactly once, then
  broadcasts the checkpoint's tensors in name order.

Every rank claims its number in the store before joining. A rank claimed twice (a plan whose
ranks collide) makes the second claimant fail at once and the trainer fail within its timeout,
each saying which rank collided; a rank never claimed fails the trainer at its timeout.
"""

from __future__ import annotations

import argparse
import sys
from datetime import timedelta
from typing import Any

_PREFIX = "prime-rl-dynamo-gloo"


def _claim_key(rank: int) -> str:
    return f"{_PREFIX}/claim/{rank}"


def _group(store: Any, rank: int, world_size: int, timeout: float) -> Any:
    import torch.distributed as dist

    prefixed = dist.PrefixStore(_PREFIX, store)
    return dist.ProcessGroupGloo(prefixed, rank, world_size, timedelta(seconds=timeout))


class GlooWeightReceiver:
    """The worker extension: joins the broadcast group, receives and loads weights."""

    def init_broadcaster(
        self,
        host: str,
        port: int,
        rank_offset: int,
        inference_world_size: int,
        timeout: float,
        **_: Any,
    ) -> int:
        """Join the group at rank ``rank_offset + tensor-parallel rank + 1`` (Prime's broadcaster:
        the trainer is rank 0, inference rank r is group rank r + 1); returns that rank."""
        import torch.distributed as dist

        rank = int(rank_offset) + int(self.rank) + 1  # type: ignore[attr-defined]
        world_size = int(inference_world_size) + 1
        store = dist.TCPStore(
            host, int(port), world_size, is_master=False, timeout=timedelta(seconds=timeout)
        )
        claims = store.add(_claim_key(rank), 1)
        if claims != 1:
            raise RuntimeError(
                f"RANK-1: rank {rank} of the broadcast group was claimed {claims} times; "
                "the plan gives two engines overlapping ranks"
            )
        self._prd_group = _group(store, rank, world_size, timeout)
        self._prd_rank = rank
        return rank

    def receive_weights(self, manifest: list[list[Any]]) -> int:
        """Receive one broadcast per ``[name, shape, dtype]`` and load them; returns the count."""
        import torch

        group = self._prd_group
        received = []
        for name, shape, dtype in manifest:
            tensor = torch.empty(tuple(shape), dtype=getattr(torch, dtype))
            group.broadcast(tensor, 0).wait()
            received.append((name, tensor))
        # Through vLLM's reload path, as a reload from disk: the CPU backend repacks weights
        # after loading, so the model's own load_weights finds empty parameters.
        runner = self.model_runner  # type: ignore[attr-defined]
        runner.reload_weights(weights_iterator=received, is_checkpoint_format=True)
        return len(received)


def manifest(checkpoint: str) -> list[list[Any]]:
    """``[name, shape, dtype]`` of every tensor of the checkpoint, in name order."""
    from safetensors import safe_open

    out: list[list[Any]] = []
    with safe_open(f"{checkpoint}/model.safetensors", framework="pt") as reader:
        for name in sorted(reader.keys()):
            tensor = reader.get_tensor(name)
            out.append([name, list(tensor.shape), str(tensor.dtype).removeprefix("torch.")])
    return out


def broadcast(port: int, inference_world_size: int, checkpoint: str, timeout: float) -> None:
    """Rank 0: host the store, wait for every rank claimed once, broadcast the checkpoint."""
    import time

    import torch.distributed as dist
    from safetensors import safe_open

    world_size = inference_world_size + 1
    store = dist.TCPStore(
        "127.0.0.1", port, world_size, is_master=True, timeout=timedelta(seconds=timeout)
    )
    deadline = time.monotonic() + timeout
    ranks = range(1, world_size)
    while True:
        counts = {r: store.add(_claim_key(r), 0) for r in ranks}
        twice = [r for r, c in counts.items() if c > 1]
        if twice:
            raise SystemExit(
                f"RANK-1: rank(s) {twice} of the broadcast group were claimed more than once "
                f"(claims per rank: {counts}); the plan's ranks collide"
            )
        if all(c == 1 for c in counts.values()):
            break
        if time.monotonic() >= deadline:
            missing = [r for r, c in counts.items() if c == 0]
            raise SystemExit(
                f"RANK-1: rank(s) {missing} of the broadcast group were never claimed within "
                f"{timeout:g} s (claims per rank: {counts})"
            )
        time.sleep(0.05)
    group = _group(store, 0, world_size, timeout)
    with safe_open(f"{checkpoint}/model.safetensors", framework="pt") as reader:
        for name in sorted(reader.keys()):
            group.broadcast(reader.get_tensor(name), 0).wait()
    print(f"broadcast {checkpoint} to ranks 1..{inference_world_size}", flush=True)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the trainer side (rank 0)."""
    parser = argparse.ArgumentParser(prog="python -m prime_rl_dynamo.suite.harness.real.gloo")
    parser.add_argument("port", type=int)
    parser.add_argument("inference_world_size", type=int)
    parser.add_argument("checkpoint")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--manifest", action="store_true", help="print the manifest and exit")
    args = parser.parse_args(argv)
    if args.manifest:
        import json

        print(json.dumps(manifest(args.checkpoint)))
        return 0
    broadcast(args.port, args.inference_world_size, args.checkpoint, args.timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
