"""Test support for the Prime-RL tests: main's config objects as main defines them (shared.py,
recorded in docs/prime-rl/main-<revision>.facts.json) and a reader of the unified diffs under
docs/prime-rl/."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The patches and facts docs/prime-rl/ ships, one pair per Prime-RL revision.
DOCS = Path(__file__).resolve().parent.parent / "docs" / "prime-rl"


def shipped(stem: str) -> tuple[Path, dict[str, Any]]:
    """The shipped patch's path and its facts for one revision (``73164c322``, ``main-009c03036``)."""
    return DOCS / f"{stem}.patch", json.loads((DOCS / f"{stem}.facts.json").read_text("utf-8"))


def pre_images(f: dict[str, Any]) -> list[tuple[int, int, str]]:
    """(start, lines, sha256 of the pre-image) of each hunk of one file of :func:`patch_files`."""
    return [
        (start, n, hashlib.sha256("\n".join(pre).encode()).hexdigest())
        for start, n, _, pre, _, _ in f["hunks"]
    ]


def recorded_pre_images(recorded: dict[str, Any]) -> list[tuple[int, int, str]]:
    """The same triples as the facts file records them for one file."""
    return [(h["old_start"], h["old_lines"], h["sha256"]) for h in recorded["hunks"]]


_HUNK = re.compile(r"^@@ -(\d+),(\d+) \+(\d+),(\d+) @@")


def patch_files(text: str) -> dict[str, dict[str, Any]]:
    """path -> {"index": old blob prefix, "hunks": [(old_start, old_n, new_n, pre, post, added)]}."""
    files: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    hunk: list[Any] | None = None
    for line in text.split("\n")[:-1]:  # the patch ends with a newline
        if line.startswith("diff --git "):
            a, b = line[len("diff --git ") :].split(" ")
            assert a.startswith("a/") and b == "b/" + a[2:], line
            current = files.setdefault(a[2:], {"index": None, "hunks": []})
            hunk = None
        elif line.startswith("index "):
            assert current is not None
            current["index"] = line.split()[1].split("..")[0]
        elif line.startswith(("--- a/", "+++ b/")):
            assert current is not None and hunk is None
        elif match := _HUNK.match(line):
            assert current is not None
            hunk = [int(match[1]), int(match[2]), int(match[4]), [], [], []]
            current["hunks"].append(hunk)
        else:
            assert hunk is not None, f"a line outside any hunk: {line!r}"
            sign, body = line[:1], line[1:]
            assert sign in (" ", "-", "+"), f"not a hunk line: {line!r}"
            if sign in (" ", "-"):
                hunk[3].append(body)
            if sign in (" ", "+"):
                hunk[4].append(body)
            if sign == "+":
                hunk[5].append(body)
    return files


# --- main's config objects, as main defines them (shared.py; FACTS["config"]) -------------------


@dataclass
class DynamoConfig:
    """Prime-RL main's DynamoConfig: its fields and defaults."""

    enabled: bool = True
    discovery_url: str | None = None


@dataclass
class ClientConfig:
    """Prime-RL main's ClientConfig: its fields and defaults."""

    wait_for_ready_timeout: int = 3600
    base_url: str = "http://localhost:8000/v1"
    api_key_var: str = "VLLM_API_KEY"
    headers: dict[str, str] = field(default_factory=dict)
    headers_from_env: dict[str, str] = field(default_factory=dict)
    skip_model_check: bool = False
    admin_base_url: list[str] | None = None
    dynamo: DynamoConfig | None = None
