"""The zoo: the spec client (spec_client.py) with exactly one natural bug each, as ``module:function``.

``--client conformance.examples.zoo:treats_429_as_fatal``, or as a command:
``python -m conformance.examples.zoo 429-fatal``. ``BY_NAME`` maps each function name to its bug
(the module's attributes are generated from it); ``spec_client.ZOO`` says which requirement each
breaks. ``COUNTERPARTS`` is the client half of the kill matrix (conformance/kill_matrix.py): for
each bug, the check that must fail, every requirement the bug fails (and no other), and the reason
code the check gives (``details["reasons"]``).
"""

from __future__ import annotations

import sys

from conformance.examples._contract import ClientFunction, command_main
from conformance.examples.spec_client import ZOO, zoo_client
from conformance.kill_matrix import Counterpart

__all__ = ["BY_NAME", "COUNTERPARTS", "REASONS", "main"]

#: Function names kept from before the names were generated from the bug.
_NAMED = {
    "drops-credentials": "drops_credentials",
    "429-fatal": "treats_429_as_fatal",
    "one-poll": "plans_from_one_poll",
    "follows-admin-redirects": "follows_admin_redirects",
    "ignores-allow-list": "ignores_allow_list",
    "swallows-init-errors": "swallows_init_errors",
    "retries-version": "retries_version_2",
    "field-checks-smg": "field_checks_smg",
    "derives-w": "derives_w",
    "component-order": "orders_by_component",
    "rejects-unknown-fields": "rejects_unknown_fields",
    "skips-reverify": "skips_reverify",
    "even-split": "even_split",
}

#: function name -> bug (a key of spec_client.ZOO).
BY_NAME: dict[str, str] = {
    _NAMED.get(bug, bug.replace("-", "_").replace("5xx", "five_xx")): bug for bug in ZOO
}

_OFFSETS = ("RANK-3::prime-nccl-offsets", "RANK-4::vllm-native-offsets", "RANK-5::nixl-offsets")

#: bug -> (the check it kills, every requirement it fails, the check's reason code).
_KILLS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "even-split": ("RANK-6::ranks-cover-once", ("RANK-3", "RANK-4", "RANK-5", "RANK-6"),
                   "rank-collides"),
    "drops-credentials": ("CRED-2::credentials-sent", ("CRED-2",), "credential-missing"),
    "429-fatal": ("POLL-1::retry-transient", ("POLL-1",), "did-not-complete"),
    "one-poll": ("READY-4::two-identical-polls", ("READY-4",), "planned-without-two-polls"),
    "follows-admin-redirects": ("CRED-4::no-credentials-across-redirect", ("CRED-4", "ADMIN-3"),
                                "followed-admin-redirect"),
    "ignores-allow-list": ("CRED-3::credentials-allow-list", ("CRED-3",), "credential-leaked"),
    "swallows-init-errors": ("ADMIN-3::failed-admin-call", ("ADMIN-3",), "returned"),
    "retries-version": ("VERSION-2::unknown-version", ("VERSION-2",), "retried"),
    "field-checks-smg": ("DIALECT-1::other-dialect", ("DIALECT-1",), "not-refused-as-dialect"),
    "derives-w": ("READY-3::wrong-sum-is-pending", ("READY-3", "RANK-2"), "planned-while-pending"),
    "component-order": ("RANK-1::canonical-order", ("RANK-1",), "not-canonical"),
    # The pinned vllm-native fleet lists weight_transfer_backend, an extension field the latest
    # Prime-RL generation needs: refusing unknown fields refuses that fleet too.
    "rejects-unknown-fields": ("BODY-5::unknown-fields-ignored", ("BODY-5", "RANK-4", "RANK-6"),
                               "did-not-complete"),
    "skips-reverify": ("TOPO-1::reverify-before-update", ("TOPO-1",), "updated-resized"),
    "ignores-error": ("READY-1::error-is-pending", ("READY-1",), "planned-while-pending"),
    "drops-error": ("READY-1::error-is-pending", ("READY-1",), "planned-while-pending"),
    "error-is-fatal": ("READY-1::error-is-pending", ("READY-1",), "did-not-complete"),
    "drops-no-admin": ("READY-2::no-admin-is-pending", ("READY-2",), "planned-while-pending"),
    "no-admin-is-fatal": ("READY-2::no-admin-is-pending", ("READY-2",), "did-not-complete"),
    "counts-no-admin": ("READY-2::no-admin-is-pending", ("READY-2",), "planned-while-pending"),
    "sum-is-fatal": ("READY-3::wrong-sum-is-pending", ("READY-3",), "did-not-complete"),
    "sum-at-most-w": ("READY-3::wrong-sum-is-pending", ("READY-3",), "planned-while-pending"),
    "streak-survives-failure": ("READY-4::two-identical-polls", ("READY-4",),
                                "planned-without-two-polls"),
    # Counting another model's worker also keeps none-then-ready pending for good (READY-6).
    "ignores-model-filter": ("READY-5::others-left-alone", ("READY-5", "READY-6"),
                             "did-not-complete"),
    # Dynamo lists an erroring worker without model: dropping model-less entries drops it too.
    "excludes-model-less": ("READY-5::others-left-alone", ("READY-5", "READY-1"),
                            "did-not-complete"),
    "other-no-admin-pending": ("READY-5::others-left-alone", ("READY-5",), "did-not-complete"),
    "model-less-same-namespace": ("READY-5::mixed-fleet", ("READY-5",), "did-not-complete"),
    "empty-is-fatal": ("READY-6::no-match-is-pending", ("READY-6",), "did-not-complete"),
    "fixed-retry": ("POLL-1::retry-transient", ("POLL-1",), "retry-after-ignored"),
    "5xx-fatal": ("POLL-1::retry-transient", ("POLL-1",), "did-not-complete"),
    "reset-fatal": ("POLL-1::retry-transient", ("POLL-1",), "did-not-complete"),
    "retries-4xx": ("POLL-2::fatal-not-retried", ("POLL-2",), "retried"),
    "skips-list-6": ("POLL-2::fatal-not-retried", ("POLL-2",), "initialised"),
    "retries-schema": ("POLL-2::fatal-not-retried", ("POLL-2",), "retried"),
    "ignores-cap-setting": ("POLL-3::size-capped", ("POLL-3",), "initialised"),
    "retries-oversized": ("POLL-3::size-capped", ("POLL-3",), "retried"),
    "small-fixed-cap": ("POLL-3::size-capped", ("POLL-3",), "did-not-complete"),
    "follows-listing-redirects": ("POLL-4::same-origin-only", ("POLL-4",), "other-origin"),
    "trusts-proxy-env": ("POLL-4::same-origin-only", ("POLL-4",), "other-origin"),
    "no-deadline": ("POLL-5::deadline-result", ("POLL-5",), "hung"),
    "deadline-without-sum": ("POLL-5::deadline-result", ("POLL-5",), "wrong-world-size-sum"),
    "deadline-swaps-numbers": ("POLL-5::deadline-result", ("POLL-5",), "wrong-world-size-sum"),
    "accepts-userinfo-url": ("CRED-1::no-userinfo", ("CRED-1",), "requested-userinfo-url"),
    "accepts-listed-userinfo": ("CRED-1::no-userinfo", ("CRED-1",), "admin-called"),
    "key-in-query": ("CRED-1::no-userinfo", ("CRED-1",), "credential-in-url"),
    "sends-empty-key": ("CRED-2::credentials-sent", ("CRED-2",), "empty-key-sent"),
    "no-env-headers": ("CRED-2::credentials-sent", ("CRED-2",), "credential-missing"),
    "exact-only-allow-list": ("CRED-2::credentials-sent", ("CRED-2",), "credential-missing"),
    "case-sensitive-allow-list": ("CRED-2::credentials-sent", ("CRED-2",), "credential-missing"),
    "wildcard-bare-suffix": ("CRED-3::credentials-allow-list", ("CRED-3",), "credential-leaked"),
    "resolves-for-cidr": ("CRED-3::credentials-allow-list", ("CRED-3",), "credential-leaked"),
    "follows-admin-redirects-bare": ("CRED-4::no-credentials-across-redirect",
                                     ("CRED-4", "ADMIN-3"), "followed-admin-redirect"),
    "arrival-order": ("RANK-1::canonical-order", ("RANK-1",), "not-canonical"),
    "probes-before-refusal": ("RANK-2::refuse-wrong-sum", ("RANK-2",), "request-sent"),
    "no-engine-world-size": ("RANK-3::prime-nccl-offsets", ("RANK-3",), "no-engine-world-size"),
    "native-group-w": ("RANK-4::vllm-native-offsets", ("RANK-4",), "wrong-group-size"),
    "nixl-offsets-from-1": ("RANK-5::nixl-offsets", ("RANK-5", "RANK-6"), "wrong-offset"),
    "port-per-engine": ("RANK-8::same-coordinates", ("RANK-8",), "differing-port"),
    "timeout-per-engine": ("RANK-8::same-coordinates", ("RANK-8",), "differing-timeout"),
    "reverify-ignores-resize": ("TOPO-1::reverify-before-update", ("TOPO-1",), "updated-resized"),
    "ignores-version": ("VERSION-2::unknown-version", ("VERSION-2",), "initialised"),
    "retries-smg": ("DIALECT-1::other-dialect", ("DIALECT-1",), "retried"),
    "status-only": ("ADMIN-3::failed-admin-call", ("ADMIN-3",), "returned"),
    "continues-after-failure": ("ADMIN-3::failed-admin-call", ("ADMIN-3",),
                                "updated-after-failure"),
    "rejects-unknown-top": ("BODY-5::unknown-fields-ignored", ("BODY-5",), "did-not-complete"),
    "rejects-unknown-transport": ("BODY-5::unknown-fields-ignored", ("BODY-5",),
                                  "did-not-complete"),
    "dialect-after-retry": ("DIALECT-1::other-dialect", ("DIALECT-1",), "retried"),
    "version-retry-once": ("VERSION-2::unknown-version", ("VERSION-2",), "retried"),
    "streak-survives-pending": ("READY-4::two-identical-polls", ("READY-4",),
                                "planned-without-two-polls"),
    "empty-is-ready": ("READY-6::no-match-is-pending", ("READY-6",), "no-init"),
    "honours-all-proxy": ("POLL-4::same-origin-only", ("POLL-4",), "other-origin"),
    "inits-at-deadline": ("RANK-2::refuse-wrong-sum", ("RANK-2",), "request-sent"),
    "inference-w-plus-1": ("RANK-3::prime-nccl-offsets", ("RANK-3",),
                           "wrong-inference-world-size"),
    "prime-offsets-from-1": ("RANK-3::prime-nccl-offsets", ("RANK-3", "RANK-6"), "wrong-offset"),
    "native-offsets-from-0": ("RANK-4::vllm-native-offsets", ("RANK-4", "RANK-6"),
                              "wrong-offset"),
    "native-prime-init": ("RANK-4::vllm-native-offsets", ("RANK-4", "RANK-6"), "wrong-family"),
    "nixl-nccl-layout": ("RANK-8::same-coordinates", ("RANK-8",), "no-session-id"),
    "nixl-w-per-engine": ("RANK-5::nixl-offsets", ("RANK-5", "RANK-8"),
                          "wrong-inference-world-size"),
    "offsets-by-index": ("RANK-6::ranks-cover-once", ("RANK-3", "RANK-4", "RANK-5", "RANK-6"),
                         "rank-collides"),
    "inclusive-prefix-sum": ("RANK-6::ranks-cover-once",
                             ("RANK-3", "RANK-4", "RANK-5", "RANK-6"), "rank-missing"),
    "session-per-engine": ("RANK-8::same-coordinates", ("RANK-8",), "differing-session_id"),
    "reverify-after-pause": ("TOPO-1::reverify-before-update", ("TOPO-1",), "updated-resized"),
}  # fmt: skip

_NAME_OF = {bug: name for name, bug in BY_NAME.items()}

#: The client checks' counterparts in the kill matrix (conformance.kill_matrix).
COUNTERPARTS: tuple[Counterpart, ...] = tuple(
    Counterpart(check, "zoo", _NAME_OF[bug], ZOO[bug][1], frozenset(fails))
    for bug, (check, fails, _) in _KILLS.items()
)

#: Counterpart name -> the reason code its check must give.
REASONS: dict[str, str] = {_NAME_OF[bug]: reason for bug, (_, _, reason) in _KILLS.items()}


def __getattr__(name: str) -> ClientFunction:
    """``zoo.treats_429_as_fatal`` and each other name of ``BY_NAME``: the client with that bug."""
    if name in BY_NAME:
        return zoo_client(BY_NAME[name])
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
