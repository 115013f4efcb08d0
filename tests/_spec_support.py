"""Reading SPEC.md and SPEC-v2.md in a test: BCP 14 keywords belong to numbered requirements."""

from __future__ import annotations

import re

_KEYWORD = re.compile(r"\b(MUST|SHOULD|SHALL|REQUIRED|RECOMMENDED|MAY|OPTIONAL)\b")


def keywords_outside_requirements(spec: str) -> list[str]:
    """Each paragraph after the requirement index that uses a BCP 14 keyword although it is not a
    requirement statement (``**ID**``, with its lists), a table or code: one line per paragraph."""
    body = spec.split("## 2. Requirement index", 1)[1]
    slips = []
    for paragraph in re.split(r"\n\s*\n", body):
        if paragraph.startswith(("**", "|", "-", "```")):
            continue
        found = _KEYWORD.findall(paragraph)
        if found:
            slips.append(f"keyword {found} outside a numbered requirement: {paragraph[:120]!r}")
    return slips
