"""The zoo: the spec client (spec_client.py) with exactly one bug each, as ``module:function``.

``--client conformance.examples.zoo:treats_429_as_fatal``, or as a command:
``python -m conformance.examples.zoo 429-fatal``. ``BY_NAME`` maps each function name to its bug
(the module's attributes are generated from it); ``spec_client.ZOO`` says which requirement each
breaks.
"""

from __future__ import annotations

import sys

from conformance.examples import lifecycle_zoo
from conformance.examples._contract import ClientFunction, command_main
from conformance.examples.spec_client import ZOO, zoo_client
from conformance.kill_matrix import Counterpart

__all__ = ["BY_NAME", "COUNTERPARTS", "main"]

#: function name -> bug (a key of spec_client.ZOO).
BY_NAME: dict[str, str] = {
    "even_split": "even-split",
    "drops_credentials": "drops-credentials",
    "treats_429_as_fatal": "429-fatal",
    "plans_from_one_poll": "one-poll",
    "follows_admin_redirects": "follows-admin-redirects",
    "ignores_allow_list": "ignores-allow-list",
    "swallows_init_errors": "swallows-init-errors",
    "retries_version_2": "retries-version",
    "field_checks_smg": "field-checks-smg",
    "derives_w": "derives-w",
    "orders_by_component": "component-order",
    "rejects_unknown_fields": "rejects-unknown-fields",
    "skips_reverify": "skips-reverify",
}

#: The client checks' counterparts in the kill matrix (conformance.kill_matrix).
COUNTERPARTS: tuple[Counterpart, ...] = ()
# The native update lifecycle's counterparts (conformance/examples/lifecycle_zoo.py).
COUNTERPARTS += lifecycle_zoo.COUNTERPARTS


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
