"""Prime-RL's start-up (prime_rl_pool_client.py) with one deviation of the native update lifecycle.

Both are faithful under ``prime-nccl`` and ``nixl``; under ``vllm-native-nccl`` each breaks one
requirement of SPEC §12.3 and nothing else:

- ``reloads_from_path`` (NATIVE-2): the orchestrator updates with ``POST {admin}/update_weights
  {"weight_dir": <the step's directory>}``, as this project's pool did before the native lifecycle:
  the engines reload a path instead of receiving the weights over the group;
- ``inits_twice`` (NATIVE-1): the orchestrator initialises every engine through ``/collective_rpc``
  as well as the trainer through the engine route: two inits per engine.

``--client conformance.examples.lifecycle_zoo:inits_twice`` (also reachable as
``conformance.examples.zoo:inits_twice``), or ``python -m conformance.examples.lifecycle_zoo
inits-twice`` for ``--client-cmd``.
"""

from __future__ import annotations

import asyncio
import sys

from conformance.examples._contract import ClientCall, ClientFunction, command_main, contract_client
from conformance.examples.prime_rl_pool_client import BUGS, orchestrate
from conformance.kill_matrix import Counterpart

__all__ = ["BY_NAME", "COUNTERPARTS", "client", "main"]

#: function name -> deviation (one of prime_rl_pool_client.BUGS) and the requirement it breaks.
BY_NAME: dict[str, tuple[str, str, str]] = {
    "reloads_from_path": (
        "reloads-from-path",
        "NATIVE-2",
        "updates native NCCL engines with /update_weights {weight_dir}: a reload from a path",
    ),
    "inits_twice": (
        "inits-twice",
        "NATIVE-1",
        "the orchestrator initialises every engine as well as the trainer: two inits each",
    ),
}

#: The kill matrix's record of these clients (appended to conformance.examples.zoo.COUNTERPARTS).
COUNTERPARTS: tuple[Counterpart, ...] = (
    Counterpart(
        "NATIVE-2::native-update-lifecycle",
        "zoo",
        "reloads_from_path",
        BY_NAME["reloads_from_path"][2],
        frozenset({"NATIVE-2"}),
    ),
    Counterpart(
        "NATIVE-1::native-init-once",
        "zoo",
        "inits_twice",
        BY_NAME["inits_twice"][2],
        frozenset({"NATIVE-1"}),
    ),
)


def client(bug: str) -> ClientFunction:
    """Prime-RL's start-up on the pool with the deviation ``bug`` (one of BUGS)."""
    if bug not in BUGS:
        raise KeyError(f"no lifecycle deviation {bug!r}; expected one of {', '.join(BUGS)}")

    def body(call: ClientCall) -> None:
        # At the suite's pace (CONFORMANCE_POLL_INTERVAL): the deviation, not the pace, is judged.
        asyncio.run(orchestrate(call, bug, call.poll_interval))

    body.__module__ = __name__
    body.__doc__ = f"Prime-RL's start-up on the pool, deviating: {bug}"
    return contract_client(body)


def __getattr__(name: str) -> ClientFunction:
    """``lifecycle_zoo.inits_twice`` and ``lifecycle_zoo.reloads_from_path``."""
    if name in BY_NAME:
        return client(BY_NAME[name][0])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None) -> int:
    """``python -m conformance.examples.lifecycle_zoo BUG`` for --client-cmd (CONFORMANCE_* env)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in BUGS:
        print(
            f"usage: python -m conformance.examples.lifecycle_zoo {{{','.join(BUGS)}}}",
            file=sys.stderr,
        )
        return 2
    return command_main(client(args[0]))


if __name__ == "__main__":
    raise SystemExit(main())
