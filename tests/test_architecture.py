"""docs/architecture.md stays true: its module table lists every module of the two packages, and
no module imports from a layer below its own."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
PACKAGES = ("prime_rl_dynamo", "conformance")


def _table() -> dict[str, int]:
    text = DOC.read_text(encoding="utf-8")
    block = text.split("<!-- modules:", 1)[1].split("<!-- /modules -->", 1)[0]
    rows = re.findall(r"^\| (\d) \| `([^`]+)` \|", block, re.M)
    assert rows, "no module rows between the markers"
    paths = [path for _, path in rows]
    assert len(paths) == len(set(paths)), "a module is listed twice"
    return {path: int(layer) for layer, path in rows}


def _modules() -> set[str]:
    return {
        str(path.relative_to(ROOT))
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
    }


def _module_name(path: str) -> str:
    name = path.removesuffix(".py").replace("/", ".")
    return name.removesuffix(".__init__")


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(path: str) -> set[str]:
    """Every project module ``path`` imports at run time (anywhere in the file; what only the type
    checker reads, under ``if TYPE_CHECKING:``, does not couple layers)."""
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    name = _module_name(path)
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    found: set[str] = set()
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if _type_checking(node):
            assert isinstance(node, ast.If)
            pending.extend(node.orelse)
            continue
        pending.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                module = ".".join([*parts, module] if module else parts)
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return {n for n in found if n.split(".")[0] in PACKAGES}


def test_the_table_lists_every_module_and_only_modules() -> None:
    listed, present = set(_table()), _modules()
    assert present - listed == set(), "modules missing from docs/architecture.md"
    assert listed - present == set(), "docs/architecture.md lists modules that do not exist"


def test_no_module_imports_from_a_lower_layer() -> None:
    table = _table()
    layer_of = {_module_name(path): layer for path, layer in table.items()}
    upward = []
    for path, layer in sorted(table.items()):
        for name in sorted(_imports(path)):
            target = layer_of.get(name)
            if target is not None and target > layer:
                upward.append(f"{path} (layer {layer}) imports {name} (layer {target})")
    assert upward == []


def test_the_import_reader_sees_imports() -> None:
    """The layer check is only as good as its reader: a known run-time import is seen, a
    TYPE_CHECKING-only one is not."""
    assert "prime_rl_dynamo.readiness" in _imports("prime_rl_dynamo/client.py")
    assert "prime_rl_dynamo._fanout" not in _imports("prime_rl_dynamo/errors.py")
