"""The recipes of docs/architecture.md and the validator's account in docs/validation.md name only
things that exist: every backticked path is a file or directory of the repository (a
``path::NAME`` names something that file defines), every dotted name imports, and every other
backticked identifier occurs in the project's code. A name a refactor removed fails here."""

from __future__ import annotations

import importlib
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: (document, the section whose names are checked: from its heading to the next one).
SECTIONS = (("docs/architecture.md", "## Recipes"), ("docs/validation.md", "## One table, two paths"),
            ("docs/validation.md", "## Benchmark"))  # fmt: skip
#: Where the code lives; a path or a dotted name may also be written from inside a package.
PACKAGES = ("prime_rl_dynamo", "conformance", "tools")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*(\(\))?")


def _section(doc: str, heading: str) -> str:
    text = (ROOT / doc).read_text(encoding="utf-8")
    return text.split(heading, 1)[1].split("\n## ", 1)[0]


@cache
def _code_words() -> frozenset[str]:
    words: set[str] = set()
    for tree in PACKAGES:
        for path in (ROOT / tree).rglob("*.py"):
            words |= set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", path.read_text(encoding="utf-8")))
    return frozenset(words)


def _resolves_dotted(name: str) -> bool:
    return any(_resolves(f"{package}.{name}") for package in PACKAGES) or _resolves(name)


def _resolves(name: str) -> bool:
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def unresolved(token: str) -> str | None:
    """Why the backticked ``token`` names nothing (None: it names something, or is no name)."""
    path, _, inner = token.partition("::")
    if "/" in path and " " not in path:
        target = next((t for t in (ROOT / path, *(ROOT / p / path for p in PACKAGES)) if t.exists()), None)  # fmt: skip
        if target is None:
            return f"{path} does not exist"
        if inner and re.search(rf"^\s*(def |class )?{re.escape(inner)}\b", target.read_text(encoding="utf-8"), re.M) is None:  # fmt: skip
            return f"{path} defines no {inner}"
        return None
    if not IDENTIFIER.fullmatch(token):
        return None  # a command, a pattern, a message: not a name
    name = token.removesuffix("()")
    if "." in name and not name.endswith((".py", ".md", ".json")):
        return None if _resolves_dotted(name) else f"{name} does not import"
    return None if name in _code_words() or "." in name else f"{name} occurs in no code"


def _tokens() -> list[tuple[str, str]]:
    return [
        (doc, token)
        for doc, heading in SECTIONS
        for token in dict.fromkeys(re.findall(r"`([^`\n]+)`", _section(doc, heading)))
    ]


@pytest.mark.parametrize(("doc", "token"), _tokens(), ids=lambda v: str(v)[:60])
def test_a_named_thing_exists(doc: str, token: str) -> None:
    assert unresolved(token) is None, f"{doc}: `{token}`: {unresolved(token)}"


def test_the_check_catches_names_that_do_not_exist() -> None:
    # The counterparts: the names issue #37 found in the old recipes, and a missing file.
    assert unresolved("_fast_rules_hold") == "_fast_rules_hold occurs in no code"
    assert unresolved("prime_rl_dynamo/_speedups.c") is not None
    assert unresolved("prime_rl_dynamo.validate.ACCELERATED") is not None
    assert unresolved("prime_rl_dynamo/suite/reference/faults.py::NO_SUCH_TABLE") is not None
    assert unresolved("prime_rl_dynamo/validate.py") is None
    assert unresolved("prime_rl_dynamo.validate.SEMANTIC_RULES") is None
