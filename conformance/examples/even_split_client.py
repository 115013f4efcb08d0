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

from conformance.examples._contract import ClientCall, command_main, contract_client


def _split_evenly(call: ClientCall) -> None:
    """Discover once, split ranks evenly (the bug), initialise every engine."""
    with httpx.Client(timeout=call.timeout, trust_env=False) as http:
        body = http.get(call.discovery_url).raise_for_status().json()
        engines = [
            w
            for w in body["workers"]
            if "error" not in w
            and w.get("admin_base_url")
            and (call.model is None or w.get("model") == call.model)
        ]
        if not engines:
            raise RuntimeError("no engine listed")
        share = call.inference_world_size // len(engines)  # the bug: one share for every engine
        session = uuid.uuid4().hex
        for i, worker in enumerate(engines):
            offset = i * share + (1 if call.convention == "vllm-native-nccl" else 0)
            base = worker["admin_base_url"].rstrip("/")
            headers = _headers(call.credentials, httpx.URL(base).host)
            if call.convention == "vllm-native-nccl":
                path = "/collective_rpc"
                payload: dict[str, Any] = {
                    "method": "init_weight_transfer_engine",
                    "args": [],
                    "kwargs": {
                        "init_info": {
                            "master_address": call.master_address,
                            "master_port": call.master_port,
                            "rank_offset": offset,
                            "world_size": call.inference_world_size + 1,
                        }
                    },
                }
            else:
                path = "/init_broadcaster"
                payload = {
                    "host": call.master_address,
                    "port": call.master_port,
                    "rank_offset": offset,
                    "inference_world_size": call.inference_world_size,
                    "engine_world_size": worker["world_size"],
                    "timeout": call.timeout,
                    "quantize_in_weight_transfer": False,
                }
                if call.convention == "nixl":
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


run = contract_client(_split_evenly)


def main() -> int:
    """``python -m conformance.examples.even_split_client`` for --client-cmd (CONFORMANCE_* env)."""
    return command_main(run)


if __name__ == "__main__":
    raise SystemExit(main())
