"""Issue #37's bar, held: the validator and its helpers are at most 1,000 lines of Python, counted
as ruff formats them (no ``fmt: skip``, no line over the project's 100 columns)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The validator and its helpers: what a body's validation reads and no other module needs.
VALIDATOR = ("prime_rl_dynamo/validate.py", "prime_rl_dynamo/_strict_json.py")
MAX_LINES = 1_000
MAX_COLUMNS = 100  # pyproject.toml [tool.ruff] line-length


def packing(name: str, text: str) -> list[str]:
    """Each way ``text`` dodges the formatter: a ``fmt: skip``/``fmt: off`` or a line too long."""
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        if "fmt: skip" in line or "fmt: off" in line:
            found.append(f"{name}:{n}: a formatter escape")
        if len(line) > MAX_COLUMNS:
            found.append(f"{name}:{n}: {len(line)} columns")
    return found


def test_the_validator_is_at_most_1000_formatted_lines() -> None:
    texts = {name: (ROOT / name).read_text(encoding="utf-8") for name in VALIDATOR}
    lines = sum(len(text.splitlines()) for text in texts.values())
    assert lines <= MAX_LINES, f"the validator is {lines} lines (bar: {MAX_LINES})"
    assert [p for name, text in texts.items() for p in packing(name, text)] == []


def test_the_packing_check_sees_escapes_and_long_lines() -> None:
    packed = 'x = 1  # fmt: skip\n# fmt: off\ny = "' + "a" * MAX_COLUMNS + '"\nz = 2\n'
    assert packing("f.py", packed) == [
        "f.py:1: a formatter escape",
        "f.py:2: a formatter escape",
        f"f.py:3: {MAX_COLUMNS + 6} columns",
    ]
    assert packing("f.py", "z = 2\n" + "b" * MAX_COLUMNS + "\n") == []
