"""Known incompatible variants of protocol 1: listings that say ``protocol_version: 1`` but break it.

Real Dynamo branches and a neighbouring gateway already serve bodies that claim version 1 while
making breaking changes (a ``system_routes`` branch, a gateway's body). Each is identified here by name, so
a validator or the suite can say what the body is (one VERSION-1 violation per variant) before the
field-level violations that follow from it. Pure functions over a parsed body, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from prime_rl_dynamo.violation import Violation

__all__ = [
    "ALSO_BROKEN",
    "SMG_ERROR_HEADER",
    "VARIANTS",
    "Variant",
    "detect_dialect",
    "dialect_violations",
    "identify",
    "may_be_variant",
    "version_violations",
    "with_variants",
]

_OPTIONAL = ("system_url", "admin_base_url", "model", "world_size", "error")


@dataclass(frozen=True, slots=True)
class Variant:
    """One known v1 variant: its name, where it comes from and what it breaks."""

    name: str
    origin: str
    breaks: str  # "renames routes to system_routes", completed into the one-line diagnosis
    #: Another protocol at its own version 1 (SMG's), not a branch of this one: its diagnosis
    #: says so instead of calling it a breaking change (DIALECT-1 refuses it first).
    other_protocol: bool = False

    def diagnosis(self, evidence: str = "") -> str:
        """The one-line diagnosis: what the listing claims, what it does and what that means."""
        where = f" ({evidence})" if evidence else ""
        if self.other_protocol:
            return (
                f"this listing {self.breaks}{where}: another protocol at its own "
                f"protocol_version 1, not a breaking change of this one (DIALECT-1 refuses it) "
                f"[variant {self.name}: {self.origin}]"
            )
        return (
            f"this listing says protocol_version 1 but {self.breaks}{where}: a breaking change "
            f"that needs a new protocol_version [variant {self.name}: {self.origin}]"
        )


SYSTEM_ROUTES = Variant(
    "system-routes",
    "the Dynamo branch feat/dyn-pi-sidecar-v2-review-001",
    "renames routes to system_routes",
)
NULL_OPTIONALS = Variant(
    "null-optionals",
    "the Dynamo system_routes branch tolerates world_size: null",
    "sends null for optional fields that v1 omits when absent (WORKER-6)",
)
WEIGHT_TRANSFER_BACKEND = Variant(
    "weight-transfer-backend",
    "the Dynamo fork with weight_transfer_backend",
    "replaces admin_base_url with weight_transfer_backend, so no engine can be planned",
)
SMG = Variant(
    "smg",
    "the SMG gateway's /v1/rl/workers",
    "is the SMG gateway's, not Dynamo's",
    other_protocol=True,
)

#: Every known variant, in the order they are reported.
VARIANTS: tuple[Variant, ...] = (SYSTEM_ROUTES, NULL_OPTIONALS, WEIGHT_TRANSFER_BACKEND, SMG)


#: Requirements whose every break is also a known variant, so a body breaking only one of them
#: is reported under VERSION-1 too: any null optional (WORKER-6) and the SMG shape (DIALECT-1).
ALSO_BROKEN: dict[str, tuple[str, ...]] = {"WORKER-6": ("VERSION-1",), "DIALECT-1": ("VERSION-1",)}


#: The header the SMG gateway sets on its own error replies (a 404 when its RL routes are off).
SMG_ERROR_HEADER = "x-smg-error-code"

# Keys only the SMG gateway's shape of the discovery path carries (another protocol, same path).
_SMG_TOP_KEYS = frozenset({"total"})
_SMG_WORKER_KEYS = frozenset(
    {"id", "engine", "control_url", "capabilities", "health", "connection_mode", "base_url"}
)
_DYNAMO_WORKER_KEYS = frozenset({"request_plane_url", "component", "instance_id", "transport"})


def detect_dialect(parsed: object) -> str:
    """Which protocol a parsed body speaks: ``"dynamo-v1"``, ``"smg"`` or ``"unknown"``."""
    if not isinstance(parsed, Mapping):
        return "unknown"
    workers = parsed.get("workers")
    worker_keys: set[str] = set()
    if isinstance(workers, list):
        for worker in workers:
            if isinstance(worker, Mapping):
                worker_keys.update(k for k in worker if isinstance(k, str))
    # Dynamo markers win: a Dynamo body with a new unknown field named like an SMG one stays Dynamo.
    if "namespace" in parsed or worker_keys & _DYNAMO_WORKER_KEYS:
        return "dynamo-v1"
    if _SMG_TOP_KEYS & parsed.keys() or worker_keys & _SMG_WORKER_KEYS:
        return "smg"
    return "unknown"


def dialect_violations(parsed: Any) -> list[Violation]:
    """An ``smg`` body refused as a whole: DIALECT-1 first, then its variant under VERSION-1 (no
    field-level violations); empty for any other dialect."""
    if detect_dialect(parsed) != "smg":
        return []
    return [_dialect_violation(parsed), *version_violations(parsed)]


def _dialect_violation(parsed: Mapping[str, Any]) -> Violation:
    keys = sorted(k for k in parsed if isinstance(k, str))
    workers = parsed.get("workers")
    if isinstance(workers, list) and workers:
        shape = "workers with id, engine, control_url, capabilities, health"
    else:  # SMG's empty fleet: nothing but its top level says who it is
        shape = "a top-level total beside an empty workers list"
    return Violation(
        "DIALECT-1",
        "",
        expected="a Dynamo discovery body (namespace; workers with component, instance_id, "
        "transport, request_plane_url)",
        found=f"the SMG gateway's /v1/rl/workers ({shape}); top-level keys {keys}. This is "
        "another protocol served at the same path, not a broken Dynamo body: point the client "
        "at Dynamo's RL listener (DYN_RL_PORT)",
    )


def with_variants(requirement: str) -> set[str]:
    """The requirements a body that breaks only ``requirement`` is reported under."""
    return {requirement, *ALSO_BROKEN.get(requirement, ())}


def _workers(parsed: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    workers = parsed.get("workers")
    if not isinstance(workers, list):
        return []
    return [(i, w) for i, w in enumerate(workers) if isinstance(w, Mapping)]


def _system_routes(parsed: Mapping[str, Any]) -> str | None:
    renamed = [i for i, w in _workers(parsed) if "system_routes" in w and "routes" not in w]
    if not renamed:
        return None
    return f"{len(renamed)} worker(s) with system_routes and no routes, first /workers/{renamed[0]}"


def _null_optionals(parsed: Mapping[str, Any]) -> str | None:
    nulls = [
        f"/workers/{i}/{name}"
        for i, w in _workers(parsed)
        for name in _OPTIONAL
        if name in w and w[name] is None
    ]
    if not nulls:
        return None
    more = f" and {len(nulls) - 3} more" if len(nulls) > 3 else ""
    return "null at " + ", ".join(nulls[:3]) + more


def _weight_transfer_backend(parsed: Mapping[str, Any]) -> str | None:
    # The fork's signature: a non-empty string weight_transfer_backend, and admin_base_url on no
    # worker at all. Next to an admin_base_url it is just an unknown additive field (BODY-5).
    workers = _workers(parsed)
    forked = [
        i
        for i, w in workers
        if "error" not in w
        and isinstance(w.get("weight_transfer_backend"), str)
        and w["weight_transfer_backend"].strip()
    ]
    if not forked or any("admin_base_url" in w for _, w in workers):
        return None
    return (
        f"{len(forked)} worker(s) with weight_transfer_backend, none with admin_base_url, "
        f"first /workers/{forked[0]}"
    )


def _smg(parsed: Mapping[str, Any]) -> str | None:
    if detect_dialect(parsed) != "smg":
        return None
    return "top-level keys " + ", ".join(sorted(k for k in parsed if isinstance(k, str)))


_DETECTORS: dict[str, Callable[[Mapping[str, Any]], str | None]] = {
    SYSTEM_ROUTES.name: _system_routes,
    NULL_OPTIONALS.name: _null_optionals,
    WEIGHT_TRANSFER_BACKEND.name: _weight_transfer_backend,
    SMG.name: _smg,
}


def identify(parsed: object) -> list[tuple[Variant, str]]:
    """Every known variant the parsed body is, with its evidence (empty for a plain v1 body).

    Only bodies that claim version 1 (or carry no version) are variants of it: a body that says
    another version is judged by BODY-2 and VERSION-2 instead.
    """
    if not isinstance(parsed, Mapping) or parsed.get("protocol_version", 1) != 1:
        return []
    if isinstance(parsed.get("protocol_version"), bool):
        return []
    found = []
    for variant in VARIANTS:
        evidence = _DETECTORS[variant.name](parsed)
        if evidence is not None:
            found.append((variant, evidence))
    return found


def version_violations(parsed: object) -> list[Violation]:
    """One VERSION-1 violation per variant identified, each with its one-line diagnosis."""
    return [
        Violation("VERSION-1", "", variant.diagnosis(evidence))
        for variant, evidence in identify(parsed)
    ]


def may_be_variant(raw: bytes) -> bool:
    """Whether a body that passes v1's field rules could still be a variant (a cheap byte test).

    Only the weight_transfer_backend fork is valid field by field (admin_base_url is optional);
    every other variant already fails the fast path.
    """
    return b"weight_transfer_backend" in raw
