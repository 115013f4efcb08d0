"""The public surface stays small, documented and light to import."""

from __future__ import annotations

import pytest
from _import_support import HEAVY, heavy_imports

import prime_rl_dynamo


@pytest.mark.integration
@pytest.mark.parametrize(
    ("module", "extra"), [("prime_rl_dynamo", ()), ("prime_rl_dynamo.prime_rl", ("prime_rl",))]
)
def test_import_pulls_in_no_optional_extra_nor_prime_rl(
    module: str, extra: tuple[str, ...]
) -> None:
    assert heavy_imports(module, (*extra, *HEAVY)) == []


def test_every_export_exists_and_is_documented() -> None:
    for name in prime_rl_dynamo.__all__:
        obj = getattr(prime_rl_dynamo, name)
        if name.startswith("__"):
            continue
        assert (getattr(obj, "__doc__", None) or "").strip(), f"{name} has no docstring"
    assert len(prime_rl_dynamo.__all__) <= 36, "the public API should stay small"
