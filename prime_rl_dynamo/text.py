"""Small wording helpers shared by messages: counts with the right plural, and the two ways a long
text is shortened (``clip`` for a quoted value, ``cut`` at a word for a line a person reads)."""

from __future__ import annotations

__all__ = ["clip", "cut", "plural"]


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``"1 engine"``, ``"2 engines"``, ``"1 distinct body"`` (``plural_form`` for irregular nouns)."""
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {plural_form or noun + 's'}"


def clip(text: str, limit: int = 120) -> str:
    """``text`` cut to ``limit`` characters, the last three ``...``: a message quotes what it
    found, never all of it."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def cut(text: str, limit: int) -> str:
    """At most ``limit`` characters, cut at a word boundary and marked with an ellipsis."""
    if len(text) <= limit:
        return text
    head = text[: max(1, limit - 1)]
    space = head.rfind(" ")
    return (head[:space] if space > limit // 2 else head).rstrip() + "…"
