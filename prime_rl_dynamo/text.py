"""Small wording helpers shared by messages: counts with the right plural."""

from __future__ import annotations

__all__ = ["plural"]


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``"1 engine"``, ``"2 engines"``, ``"1 distinct body"`` (``plural_form`` for irregular nouns)."""
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {plural_form or noun + 's'}"
