"""The draft protocol 2 OpenAPI 3.1 document (schema/openapi/rl-frontend.v2.openapi.json).

Generated from rl-workers.v2.schema.json and the v1 error schema, like the v1 documents:
``python -m prime_rl_dynamo._openapi_v2`` rewrites it, ``--check`` exits 1 when it is stale.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from prime_rl_dynamo._openapi import embed_schema, render
from prime_rl_dynamo._resources import load_json, schema_dir

__all__ = ["NAME", "build", "main"]

NAME = "rl-frontend.v2.openapi.json"
_C = "#/components/schemas/"


def build() -> dict[str, Any]:
    """The document, built from the bundled schemas."""
    components: dict[str, Any] = {}
    components.update(
        embed_schema(
            load_json("rl-workers.v2.schema.json"), "RlWorkersV2", "rl-workers.v2.schema.json"
        )
    )
    components.update(
        embed_schema(
            load_json("rl-workers.v1.schema.json"), "RlWorkers", "rl-workers.v1.schema.json"
        )
    )
    components.update(
        embed_schema(
            load_json("rl-workers-error.v1.schema.json"),
            "RlWorkersError",
            "rl-workers-error.v1.schema.json",
        )
    )
    etag = {
        "description": "V2-3: the listing's strong validator, its fingerprint in quotes",
        "schema": {"type": "string", "pattern": '^"[0-9a-f]{32}"$'},
    }
    protocol = {
        "description": "V2-1: the protocol of this answer (absent on a v1 answer)",
        "schema": {"type": "string", "enum": ["2"]},
    }
    get = {
        "operationId": "listRlWorkersV2",
        "summary": "List RL workers (protocol 2 when asked, else 1)",
        "description": "Send Dynamo-RL-Protocol: 2, 1 to get the v2 listing (V2-1). With "
        "If-None-Match naming the current ETag the answer is 304 (V2-4); add ?wait=SECONDS to "
        "hold the request until the listing changes (V2-5). A v1 server ignores all three.",
        "x-requirements": ["V2-1", "V2-3", "V2-4", "V2-5", "V2-9"],
        "parameters": [
            {
                "name": "Dynamo-RL-Protocol",
                "in": "header",
                "required": False,
                "description": "the versions the client speaks, comma-separated, best first "
                "(2, 1). Never refused: tokens that are not versions are ignored, and a value "
                "naming no version the server speaks gets the v1 listing (V2-1, SPEC-v2 section 3)",
                "schema": {"type": "string"},
                "example": "2, 1",
            },
            {
                "name": "If-None-Match",
                "in": "header",
                "required": False,
                "description": "the ETag of the listing the client holds",
                "schema": {"type": "string"},
            },
            {
                "name": "wait",
                "in": "query",
                "required": False,
                "description": "with If-None-Match: hold the request up to this many seconds "
                "(a decimal number; the reference caps it at 30) for the listing to change. "
                "Never refused: a value that is not a number, or not above 0, is not waited on",
                "schema": {"type": "string"},
                "example": "30",
            },
        ],
        "responses": {
            "200": {
                "description": "The listing: v2 when asked for and spoken, else v1.",
                "headers": {"ETag": etag, "Dynamo-RL-Protocol": protocol},
                "content": {
                    "application/json": {
                        "schema": {
                            "oneOf": [{"$ref": _C + "RlWorkersV2"}, {"$ref": _C + "RlWorkers"}]
                        }
                    }
                },
            },
            "304": {
                "description": "Not modified: If-None-Match names the current ETag (V2-4, V2-5).",
                "headers": {"ETag": etag, "Dynamo-RL-Protocol": protocol},
            },
            "500": {
                "description": "The whole listing failed (HTTP-5).",
                "content": {"application/json": {"schema": {"$ref": _C + "RlWorkersError"}}},
            },
        },
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Dynamo RL listener, protocol 2 (draft)",
            "version": "2.0.0-draft",
            "description": "DRAFT. The normative text is SPEC-v2.md next to this document's "
            "directory; V2-* IDs refer to requirements.v2.json, others to SPEC.md.",
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
        },
        "servers": [{"url": "http://127.0.0.1:8001", "description": "DYN_RL_PORT"}],
        "paths": {"/v1/rl/workers": {"get": get}},
        "components": {"schemas": components},
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Write the document, or with ``--check`` exit 1 when the checked-in one is stale."""
    path = schema_dir() / "openapi" / NAME
    text = render(build())
    if list(argv if argv is not None else sys.argv[1:]) == ["--check"]:
        if not path.is_file() or path.read_text("utf-8") != text:
            print(f"{path}: stale; run `python -m prime_rl_dynamo._openapi_v2`", file=sys.stderr)
            return 1
        return 0
    path.write_text(text, "utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
