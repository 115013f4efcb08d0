"""The original change's rank bug, kept as a client the suite must fail: offsets split evenly.

``offset_i = i * (W // n)`` ignores each engine's own world size, so on heterogeneous fleets ranks
collide and others are owned by nobody (FACTS.md §3: world sizes [2, 4, 1] give [0, 2, 4]). It
follows the client calling contract of conformance/client_profile.py; credentials are handled
correctly so that the suite's failure names the rank problem alone.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

import httpx


def run(
    discovery_url: str,
    inference_world_size: int,
    convention: str,
    credentials: Any,
    *,
    model: str | None,
    master_address: str,
    master_port: int,
    timeout: float,
) -> None:
    """Discover once, split ranks evenly (the bug), initialise every engine."""
    with httpx.Client(timeout=timeout, trust_env=False) as http:
        body = http.get(discovery_url).raise_for_status().json()
        engines = [
            w
            for w in body["workers"]
            if "error" not in w
            and w.get("admin_base_url")
            and (model is None or w.get("model") == model)
        ]
        if not engines:
            raise RuntimeError("no engine listed")
        share = inference_world_size // len(engines)  # the bug: one share for every engine
        session = uuid.uuid4().hex
        for i, worker in enumerate(engines):
            offset = i * share + (1 if convention == "vllm-native-nccl" else 0)
            base = worker["admin_base_url"].rstrip("/")
            headers = _headers(credentials, httpx.URL(base).host)
            if convention == "vllm-native-nccl":
                path = "/collective_rpc"
                payload: dict[str, Any] = {
                    "method": "init_weight_transfer_engine",
                    "args": [],
                    "kwargs": {
                        "init_info": {
                            "master_address": master_address,
                            "master_port": master_port,
                            "rank_offset": offset,
                            "world_size": inference_world_size + 1,
                        }
                    },
                }
            else:
                path = "/init_broadcaster"
                payload = {
                    "host": master_address,
                    "port": master_port,
                    "rank_offset": offset,
                    "inference_world_size": inference_world_size,
                    "engine_world_size": worker["world_size"],
                    "timeout": timeout,
                    "quantize_in_weight_transfer": False,
                }
                if convention == "nixl":
                    payload["session_id"] = session
            http.post(base + path, json=payload, headers=headers).raise_for_status()


def _headers(credentials: Any, host: str) -> dict[str, str]:
    allowed = credentials.allowed_hosts
    if allowed is not None and host not in allowed:
        return {}
    out = dict(credentials.headers)
    for header, var in credentials.headers_from_env.items():
        out[header] = os.environ.get(var, "")
    if credentials.api_key is not None:
        out["Authorization"] = f"Bearer {credentials.api_key}"
    return out


def main() -> int:
    """``python -m conformance.examples.even_split_client`` for --client-cmd (CONFORMANCE_* env)."""
    from conformance.client_profile import arguments_from_env

    args, kwargs = arguments_from_env()
    run(*args, **kwargs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
