"""Test support for the validator's tests: hypothesis strategies of valid bodies and of bodies
with one to three defects of many kinds (the differential tests feed both to every path)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

U64 = 2**64 - 1
text = st.text(min_size=1, max_size=6)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def http_urls(draw: st.DrawFn, *, for_admin: bool = True) -> str:
    scheme = draw(st.sampled_from(["http", "https", "HTTP", "Https"]))
    # WORKER-8 wants a host the pool can use (names end in a label with a letter); WORKER-7 less.
    names = r"([a-z0-9-]{1,4}\.){0,2}[a-z0-9-]{0,3}[a-z-][a-z0-9-]{0,3}" if for_admin else None
    host = draw(
        st.from_regex(names or r"[a-z0-9][a-z0-9.-]{0,8}", fullmatch=True)
        | st.sampled_from(["[::1]", "127.0.0.1", "[2001:db8::7]"])
    )
    port = draw(st.one_of(st.just(""), st.integers(1, 65535).map(lambda p: f":{p}")))
    path = draw(st.from_regex(r"(/[A-Za-z0-9._~%-]{0,6}){0,3}", fullmatch=True))
    tail = "" if for_admin else draw(st.sampled_from(["", "?a=1", "#x"]))
    return f"{scheme}://{host}{port}{path}{tail}"


@st.composite
def valid_bodies(draw: st.DrawFn, *, unknown_fields: bool = True) -> dict[str, Any]:
    """Bodies the contract accepts: sorted, unique, consistent, optional fields omitted."""
    scope = draw(st.sampled_from(["dynamo", "dyn", "", "team.a"]))
    workers: dict[tuple[str, str, str, int], dict[str, Any]] = {}
    for i in range(draw(st.integers(0, 6))):
        ns = scope + draw(st.sampled_from(["", "", "-x", "b"])) or "ns"
        comp = draw(st.one_of(st.sampled_from(["prefill", "decode", "backend"]), text))
        ep = draw(st.one_of(st.just("rl"), text))
        iid = draw(st.one_of(st.integers(0, U64), st.sampled_from([0, 7, 2**53 + 1, U64])))
        w: dict[str, Any] = {
            "namespace": ns,
            "component": comp,
            "endpoint": ep,
            "instance_id": iid,
            "transport": {
                draw(st.sampled_from(["tcp", "nats_tcp", "http"])): draw(st.text(max_size=20))
            },
            "request_plane_url": f"dyn://{ns}.{comp}.{ep}",
            "routes": sorted(draw(st.sets(text, max_size=4))),
        }
        if draw(st.booleans()):
            w["error"] = draw(text)
            w["routes"] = []
        else:
            if draw(st.booleans()):
                w["system_url"] = draw(http_urls(for_admin=False))
            if draw(st.booleans()):
                w["admin_base_url"] = draw(http_urls()) + f"/w{i}"  # unique per worker (LIST-6)
                w["world_size"] = draw(st.integers(1, 2**32 - 1))
            elif draw(st.booleans()):
                w["world_size"] = draw(st.integers(1, 2**32 - 1))
        if draw(st.booleans()):
            w["model"] = draw(text)
        if unknown_fields and draw(st.booleans()):
            # weight_transfer_backend in a listing without admin_base_url is the known fork,
            # named under VERSION-1 (prime_rl_dynamo.variants); next to one it is just unknown.
            names = ["weight_transfer_backend", "x_extra"] if "admin_base_url" in w else ["x_extra"]
            w[draw(st.sampled_from(names))] = draw(json_values)
        workers[(ns, comp, ep, iid)] = w
    doc = {
        "protocol_version": 1,
        "namespace": scope,
        "workers": [workers[k] for k in sorted(workers)],
    }
    if unknown_fields and draw(st.booleans()):
        doc["generated_by"] = draw(st.text(max_size=5))
    return doc


FIELDS = [
    "namespace", "component", "endpoint", "instance_id", "transport", "request_plane_url",
    "routes", "system_url", "admin_base_url", "model", "world_size", "error",
]  # fmt: skip


@st.composite
def mutated_bodies(draw: st.DrawFn) -> dict[str, Any]:
    """A valid body with one to three defects (or harmless changes) of many kinds."""
    doc = draw(valid_bodies())
    for _ in range(draw(st.integers(1, 3))):
        workers = doc.get("workers")
        kind = draw(st.integers(0, 9))
        if kind == 0 or not isinstance(workers, list) or not workers:
            key = draw(st.sampled_from(["protocol_version", "namespace", "workers", "extra"]))
            if draw(st.booleans()):
                doc.pop(key, None)
            else:
                doc[key] = draw(json_values)
            continue
        i = draw(st.integers(0, len(workers) - 1))
        w = workers[i]
        if not isinstance(w, dict):
            continue
        if kind == 1:
            w[draw(st.sampled_from(FIELDS))] = draw(json_values)
        elif kind == 2:
            w.pop(draw(st.sampled_from(FIELDS)), None)
        elif kind == 3:
            workers.insert(draw(st.integers(0, len(workers))), dict(w))
        elif kind == 4:
            workers.reverse()
        elif kind == 5 and isinstance(w.get("transport"), dict):
            w["transport"][draw(st.sampled_from(["tcp", "nats_tcp", "http", "grpc"]))] = draw(
                st.one_of(st.text(max_size=3), json_values)
            )
        elif kind == 6 and isinstance(w.get("routes"), list):
            w["routes"] = list(reversed(w["routes"])) + draw(
                st.lists(st.text(max_size=2), max_size=2)
            )
        elif kind == 7:
            url = draw(http_urls(for_admin=False)) + draw(
                st.sampled_from(["", "\n", " x", "@", "?", "#", "\x7f"])
            )
            w[draw(st.sampled_from(["admin_base_url", "system_url"]))] = (
                draw(st.sampled_from(["user@", ""])) + url
            )
        elif kind == 8:
            w["instance_id"] = draw(st.sampled_from([-1, U64, U64 + 1, 2**63, 1.0, 1.5, True, "1"]))
        else:
            workers[i] = draw(json_values)
    return doc
