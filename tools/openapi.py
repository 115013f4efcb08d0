"""The OpenAPI 3.1 documents of schema/openapi/: templates with the JSON Schemas stitched in.

Each document's paths, responses, examples and descriptions are data, in
``tools/openapi-templates/<document>``; where a template says ``"$embed": {component: schema file}``
the schema files of ``schema/`` are embedded in their place (``embed_schema``). So the OpenAPI view
cannot drift from the JSON Schemas. ``python -m tools.openapi`` rewrites the documents; ``--check``
exits 1 when a checked-in document differs from what the templates and schemas produce.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tools import SCHEMA_DIR, load_schema

__all__ = [
    "DOCUMENTS",
    "TEMPLATES",
    "build",
    "build_documents",
    "embed_schema",
    "extract_schema",
    "main",
    "render",
]

JSON = dict[str, Any]
Loader = Callable[[str], Any]

#: Where the templates are: one per document, named as the document.
TEMPLATES = Path(__file__).resolve().parent / "openapi-templates"
#: The documents, in the order they are written (file names in schema/openapi/).
DOCUMENTS = (
    "rl-frontend.openapi.json",
    "worker-system.openapi.json",
    "admin.openapi.json",
    "rl-frontend.v2.openapi.json",
)
_EMBED = "$embed"
_COMPONENTS = "#/components/schemas/"
_DEFS = "#/$defs/"
# Component names must match this (OpenAPI 3.1, Components Object).
_COMPONENT_NAME = re.compile(r"^[A-Za-z0-9._-]+$")

# --- embedding a JSON Schema under components/schemas ---------------------------------------------


def _rewrite_refs(node: Any, rewrite: Callable[[str], str]) -> Any:
    """A deep copy of ``node`` with every ``$ref`` string passed through ``rewrite``."""
    if isinstance(node, dict):
        return {
            key: rewrite(value)
            if key == "$ref" and isinstance(value, str)
            else _rewrite_refs(value, rewrite)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_rewrite_refs(item, rewrite) for item in node]
    return copy.deepcopy(node)


def embed_schema(schema: Mapping[str, Any], name: str, source: str) -> JSON:
    """Components for one standalone JSON Schema: ``name`` for its root, ``name.<def>`` per $defs entry.

    ``$id`` and ``$schema`` move to ``x-schema-id`` / ``x-schema-dialect`` (an embedded ``$id`` would
    change the base URI of its ``#/$defs/...`` refs, which tools handle unevenly); refs become
    ``#/components/schemas/...``. ``extract_schema`` is the exact inverse.
    """
    defs = schema.get("$defs", {})

    def to_components(ref: str) -> str:
        if ref == "#":
            return _COMPONENTS + name
        if ref.startswith(_DEFS):
            head, sep, rest = ref[len(_DEFS) :].partition("/")
            if head not in defs:
                raise ValueError(f"{source}: $ref {ref!r} names no entry of $defs")
            return f"{_COMPONENTS}{name}.{head}{sep}{rest}"
        raise ValueError(
            f"{source}: $ref {ref!r} is not supported in an embedded schema "
            "(expected '#' or '#/$defs/...'; remote refs are not allowed)"
        )

    root = {k: v for k, v in schema.items() if k not in ("$defs", "$id", "$schema")}
    out: JSON = {
        name: {
            "x-schema-file": source,
            **({"x-schema-id": schema["$id"]} if "$id" in schema else {}),
            **({"x-schema-dialect": schema["$schema"]} if "$schema" in schema else {}),
            **_rewrite_refs(root, to_components),
        }
    }
    for def_name, definition in defs.items():
        component = f"{name}.{def_name}"
        if not _COMPONENT_NAME.match(component):
            raise ValueError(
                f"{source}: $defs name {def_name!r} cannot be an OpenAPI component name"
            )
        out[component] = _rewrite_refs(definition, to_components)
    return out


def extract_schema(components: Mapping[str, Any], name: str) -> JSON:
    """The standalone JSON Schema that ``embed_schema`` turned into ``components`` under ``name``."""
    prefix = f"{name}."

    def to_defs(ref: str) -> str:
        if ref == _COMPONENTS + name:
            return "#"
        if ref.startswith(_COMPONENTS + prefix):
            return _DEFS + ref[len(_COMPONENTS + prefix) :]
        raise ValueError(f"component {name}: $ref {ref!r} leaves the embedded schema")

    root = dict(components[name])
    root.pop("x-schema-file", None)
    schema: JSON = {}
    if "x-schema-dialect" in root:
        schema["$schema"] = root.pop("x-schema-dialect")
    if "x-schema-id" in root:
        schema["$id"] = root.pop("x-schema-id")
    schema.update(_rewrite_refs(root, to_defs))
    defs = {
        key[len(prefix) :]: _rewrite_refs(value, to_defs)
        for key, value in components.items()
        if key.startswith(prefix)
    }
    if defs:
        schema["$defs"] = defs
    return schema


def _stitch(node: Any, load: Loader, where: str) -> Any:
    """A copy of template ``node`` with every ``$embed`` entry replaced by the embedded schemas."""
    if isinstance(node, list):
        return [_stitch(item, load, f"{where}/{i}") for i, item in enumerate(node)]
    if not isinstance(node, dict):
        return node
    out: JSON = {}
    for key, value in node.items():
        if key != _EMBED:
            out[key] = _stitch(value, load, f"{where}/{key}")
            continue
        if not isinstance(value, dict):
            raise ValueError(f"{where}/{_EMBED}: expected an object {{component: schema file}}")
        for name, source in value.items():
            for component, schema in embed_schema(load(source), name, source).items():
                if component in node or component in out:
                    raise ValueError(f"{where}: component {component!r} is defined twice")
                out[component] = schema
    return out


def build(name: str, load: Loader | None = None) -> JSON:
    """Document ``name``: its template with the JSON Schemas ``load`` gives (default: schema/)."""
    template = json.loads((TEMPLATES / name).read_text(encoding="utf-8"))
    stitched: JSON = _stitch(template, load if load is not None else load_schema, name)
    return stitched


def build_documents(load: Loader | None = None) -> dict[str, JSON]:
    """Every OpenAPI document by file name."""
    return {name: build(name, load) for name in DOCUMENTS}


def render(document: Mapping[str, Any]) -> str:
    """The checked-in text of a document (stable: 2-space indent, UTF-8, trailing newline)."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _stale(directory: Path, documents: Mapping[str, JSON]) -> list[str]:
    stale = []
    for name, document in documents.items():
        path = directory / name
        if not path.is_file() or path.read_text(encoding="utf-8") != render(document):
            stale.append(name)
    return stale


def main(argv: Sequence[str] | None = None) -> int:
    """Write (or with ``--check`` verify) schema/openapi/*.openapi.json."""
    parser = argparse.ArgumentParser(
        prog="python -m tools.openapi",
        allow_abbrev=False,
        description="Generate the OpenAPI documents of schema/openapi/ from their templates and "
        "the JSON Schemas of schema/.",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if a checked-in document is missing or out of date",
    )
    args = parser.parse_args(argv)
    directory = SCHEMA_DIR / "openapi"
    documents = build_documents()
    if args.check:
        stale = _stale(directory, documents)
        for name in stale:
            print(
                f"{directory / name}: out of date with its template and the JSON Schemas; "
                "run `python -m tools.openapi`",
                file=sys.stderr,
            )
        if not stale:
            print(f"{len(documents)} OpenAPI documents in {directory} are up to date")
        return 1 if stale else 0
    directory.mkdir(parents=True, exist_ok=True)
    for name, document in documents.items():
        (directory / name).write_text(render(document), encoding="utf-8")
        print(f"wrote {directory / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
