"""The public surface: ``prime_rl_dynamo.__all__`` is all a trainer imports, documented and light
(no optional extra, no instrument of the suite)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _import_support import HEAVY, INSTRUMENTS, heavy_imports

import prime_rl_dynamo

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.integration
@pytest.mark.parametrize(
    ("module", "extra"), [("prime_rl_dynamo", ()), ("prime_rl_dynamo.prime_rl", ("prime_rl",))]
)
def test_import_pulls_in_no_optional_extra_nor_prime_rl(
    module: str, extra: tuple[str, ...]
) -> None:
    assert heavy_imports(module, (*extra, *HEAVY)) == []


@pytest.mark.integration
def test_the_probe_sees_an_instrument_when_one_is_loaded() -> None:
    # The counterpart of the test above: importing an instrument is seen by the same probe.
    assert heavy_imports("prime_rl_dynamo.suite.reference", INSTRUMENTS) == [
        "prime_rl_dynamo.suite.reference"
    ]


def test_every_export_exists_and_is_documented() -> None:
    for name in prime_rl_dynamo.__all__:
        obj = getattr(prime_rl_dynamo, name)
        if name.startswith("__"):
            continue
        assert (getattr(obj, "__doc__", None) or "").strip(), f"{name} has no docstring"
    assert len(prime_rl_dynamo.__all__) <= 48, "the public API should stay small"


def test_what_the_prime_rl_patches_import_is_public() -> None:
    # Every name Prime-RL's patches take from this package is part of the public surface.
    imported: set[str] = set()
    for patch in sorted((ROOT / "docs" / "prime-rl").glob("*.patch")):
        text = patch.read_text(encoding="utf-8")
        for names in re.findall(r"^\+\s*from prime_rl_dynamo[.\w]* import ([\w, ]+)$", text, re.M):
            imported.update(n.strip() for n in names.split(","))
    assert {"SyncNativeNcclTrainer", "DynamoInferencePool", "DynamoAdminPlane"} <= imported
    assert sorted(imported - set(prime_rl_dynamo.__all__)) == []


def test_the_instruments_docs_name_are_the_ones_the_import_test_excludes() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = text.split("The **instruments**", 1)[1].split("\n\n", 2)[1]
    listed = re.findall(r"^\| `prime_rl_dynamo/([\w/]+?)(?:\.py|/)` \|", table, re.M)
    assert sorted("prime_rl_dynamo." + name.replace("/", ".") for name in listed) == sorted(
        INSTRUMENTS
    )
