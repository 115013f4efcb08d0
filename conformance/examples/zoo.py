"""The zoo: the spec client (spec_client.py) with exactly one natural bug each, as ``module:function``.

``--client conformance.examples.zoo:treats_429_as_fatal``, or as a command:
``python -m conformance.examples.zoo 429-fatal``. ``BY_NAME`` maps each function name to its bug
(the module's attributes are generated from it); zoo.json (``spec_client.ZOO_TABLE``) says which
requirement each breaks. ``COUNTERPARTS`` is the client half of the kill matrix
(conformance/kill_matrix.py): for each bug, the check that must fail, every requirement the bug
fails (and no other), and the reason code the check gives (``details["reasons"]``, ``REASONS``).
"""

from __future__ import annotations

import sys

from conformance.examples import lifecycle_zoo
from conformance.examples._contract import ClientFunction, command_main
from conformance.examples.spec_client import ZOO, ZOO_TABLE, zoo_client
from conformance.kill_matrix import Counterpart

__all__ = ["BY_NAME", "COUNTERPARTS", "REASONS", "main"]

#: function name -> bug (a key of spec_client.ZOO): the row's ``function``, else the bug's name
#: with dashes as underscores.
BY_NAME: dict[str, str] = {
    row.get("function", bug.replace("-", "_").replace("5xx", "five_xx")): bug
    for bug, row in ZOO_TABLE.items()
}

_NAME_OF = {bug: name for name, bug in BY_NAME.items()}

#: The client checks' counterparts in the kill matrix (conformance.kill_matrix).
COUNTERPARTS: tuple[Counterpart, ...] = tuple(
    Counterpart(row["check"], "zoo", _NAME_OF[bug], row["does"], frozenset(row["fails"]))
    for bug, row in ZOO_TABLE.items()
)

# The native update lifecycle's counterparts (conformance/examples/lifecycle_zoo.py).
COUNTERPARTS += lifecycle_zoo.COUNTERPARTS

#: Counterpart name -> the reason code its check must give.
REASONS: dict[str, str] = {
    **{_NAME_OF[bug]: row["reason"] for bug, row in ZOO_TABLE.items()},
    "reloads_from_path": "path-reload",
    "inits_twice": "init-not-once",
}


def __getattr__(name: str) -> ClientFunction:
    """``zoo.treats_429_as_fatal`` and each other name of ``BY_NAME``: the client with that bug
    (and the lifecycle deviations of ``lifecycle_zoo.BY_NAME``)."""
    if name in BY_NAME:
        return zoo_client(BY_NAME[name])
    if name in lifecycle_zoo.BY_NAME:
        return lifecycle_zoo.client(lifecycle_zoo.BY_NAME[name][0])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None) -> int:
    """``python -m conformance.examples.zoo BUG`` for --client-cmd (CONFORMANCE_* env)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in ZOO:
        print(f"usage: python -m conformance.examples.zoo {{{','.join(ZOO)}}}", file=sys.stderr)
        return 2
    return command_main(zoo_client(args[0]))


if __name__ == "__main__":
    raise SystemExit(main())
