"""Generate prime_rl_dynamo/_models.py (frozen msgspec Structs) from the bundled discovery schema.

``python -m tools.codegen`` rewrites the models; ``--check`` exits 1 when the checked-in
file drifted from the schema. Constraints msgspec cannot express are listed in the output's comments.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from typing import Any

from tools import REPO
from tools import load_schema as load_json

SCHEMA_NAME = "rl-workers.v1.schema.json"
MODELS_PATH = REPO / "prime_rl_dynamo" / "_models.py"

# msgspec integer bounds must fit in an int64; larger bounds are left to the validator.
_INT64_MAX = 2**63 - 1

# Bases that give a generated class its derived views (identity, label) from the wire module.
BASES: dict[str, str] = {"Worker": "Identified"}


class _Generator:
    """Walks the schema from the root and emits one Struct per object schema with x-python-name."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self.classes: list[str] = []
        self.done: set[str] = set()
        self.patterns: dict[str, str] = {}

    def resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in node:
            ref = node["$ref"]
            if not ref.startswith("#/"):
                raise ValueError(f"only local $ref is supported, found {ref!r}")
            target: Any = self.schema
            for part in ref[2:].split("/"):
                target = target[part]
            node = target
        return node

    def optional_inner(self, node: dict[str, Any]) -> dict[str, Any] | None:
        """The value schema of an optional field written as if null then omitted else VALUE."""
        if {"if", "then", "else"} <= node.keys():
            cond = self.resolve(node["if"])
            if cond.get("type") == "null":
                return self.resolve(node["else"])
        return None

    def annotation(self, node: dict[str, Any], gaps: list[str], where: str) -> str:
        node = self.resolve(node)
        if "x-python-name" in node:
            self.emit_class(node)
            return str(node["x-python-name"])
        if "const" in node:
            return f"Literal[{node['const']!r}]"
        kind = node.get("type")
        meta: list[str] = []
        if kind == "string":
            base = "str"
            if "minLength" in node:
                meta.append(f"min_length={node['minLength']}")
            if "maxLength" in node:
                meta.append(f"max_length={node['maxLength']}")
            if "pattern" in node:
                # msgspec runs one Python re.search per value (~2 us each): at 8,192 workers that
                # alone costs half of json.loads, so patterns go to PATTERNS for a bulk check.
                self.patterns[where] = node["pattern"]
                gaps.append(f"{where}: pattern (PATTERNS[{where!r}])")
        elif kind == "integer":
            base = "int"
            for key, arg in (("minimum", "ge"), ("maximum", "le")):
                if key in node:
                    if abs(node[key]) <= _INT64_MAX:
                        meta.append(f"{arg}={node[key]}")
                    else:
                        gaps.append(f"{where}: {key} {node[key]} (beyond int64)")
        elif kind == "array":
            item = self.annotation(node["items"], gaps, f"{where}[]")
            if node.get("uniqueItems"):
                gaps.append(f"{where}: uniqueItems")
            return f"tuple[{item}, ...]"
        else:
            raise ValueError(f"{where}: no Python type for schema {node!r}")
        if meta:
            return f"Annotated[{base}, msgspec.Meta({', '.join(meta)})]"
        return base

    def emit_class(self, node: dict[str, Any]) -> None:
        name = node["x-python-name"]
        if name in self.done:
            return
        self.done.add(name)
        required = set(node.get("required", ()))
        for part in node.get("allOf", ()):
            required |= set(self.resolve(part).get("required", ()))
        gaps: list[str] = []
        for key in ("oneOf", "anyOf", "allOf", "if", "dependentRequired"):
            if key in node:
                gaps.append(f"{name}: {key} ({_rule_summary(self, node, key)})")
        lines: list[str] = []
        for prop, sub in node.get("properties", {}).items():
            inner = self.optional_inner(sub)
            where = f"{name}.{prop}"
            if inner is not None:
                lines.append(f"    {prop}: {self.annotation(inner, gaps, where)} | None = None")
            elif prop in required:
                lines.append(f"    {prop}: {self.annotation(sub, gaps, where)}")
            else:
                lines.append(f"    {prop}: {self.annotation(sub, gaps, where)} | None = None")
        doc = node.get("description", name)
        base = f", {BASES[name]}" if name in BASES else ""
        out = [
            f"class {name}(msgspec.Struct{base}, frozen=True, kw_only=True, gc=False, "
            "omit_defaults=True):",
            f'    """{doc[0].upper()}{doc[1:]}."""',
            "",
        ]
        if gaps:
            out.append("    # Not expressible in msgspec, checked by prime_rl_dynamo.validate:")
            out.extend(f"    #   {gap}" for gap in gaps)
        out.extend(lines)
        self.classes.append("\n".join(out))


def _rule_summary(gen: _Generator, node: dict[str, Any], key: str) -> str:
    value = node[key]
    if isinstance(value, list):
        reqs = [gen.resolve(v).get("x-requirement", "?") for v in value]
        return ", ".join(dict.fromkeys(reqs))
    if isinstance(value, dict):
        return str(gen.resolve(value).get("x-requirement", node.get("x-requirement", "?")))
    return str(node.get("x-requirement", "?"))


def render(schema: dict[str, Any] | None = None) -> str:
    """The full text of _models.py for ``schema`` (default: the bundled discovery schema)."""
    schema = schema if schema is not None else load_json(SCHEMA_NAME)
    gen = _Generator(schema)
    gen.emit_class(schema)
    header = (
        f'"""Typed models of {SCHEMA_NAME} (msgspec, frozen). GENERATED, do not edit.\n\n'
        "Regenerate with ``python -m tools.codegen``; tests fail when this file drifts.\n"
        "Optional fields are ``X | None``: None means the field was absent (null is refused).\n"
        '"""\n\n'
        "from __future__ import annotations\n\n"
        "from typing import Annotated, Literal\n\n"
        "import msgspec\n\n"
        "from prime_rl_dynamo.wire import Identified\n\n"
        f'SCHEMA_ID = "{schema.get("$id", "")}"\n\n'
        f"__all__ = {json.dumps(sorted([*gen.done, 'PATTERNS']))}\n\n"
        "# Regular expressions of the schema, checked by prime_rl_dynamo.validate in bulk.\n"
        "PATTERNS: dict[str, str] = {\n"
        + "".join(f"    {json.dumps(k)}: {json.dumps(v)},\n" for k, v in gen.patterns.items())
        + "}\n"
    )
    # Classes are emitted depth-first, so dependencies come before their users.
    return header + "\n\n" + "\n\n\n".join(gen.classes) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.codegen", allow_abbrev=False, description=__doc__
    )
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if _models.py differs from the schema"
    )
    args = parser.parse_args(argv)
    text = render()
    current = MODELS_PATH.read_text(encoding="utf-8") if MODELS_PATH.exists() else ""
    if args.check:
        if current == text:
            print(f"{MODELS_PATH.name} is up to date with {SCHEMA_NAME}")
            return 0
        diff = difflib.unified_diff(
            current.splitlines(keepends=True),
            text.splitlines(keepends=True),
            fromfile=f"{MODELS_PATH.name} (checked in)",
            tofile=f"{MODELS_PATH.name} (from {SCHEMA_NAME})",
        )
        sys.stdout.writelines(diff)
        print(f"\n{MODELS_PATH.name} drifted from {SCHEMA_NAME}: run python -m tools.codegen")
        return 1
    MODELS_PATH.write_text(text, encoding="utf-8")
    print(f"wrote {MODELS_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
