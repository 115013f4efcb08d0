"""The suite as pytest items: ``pytest --pyargs conformance [--rl-url URL] [--rl-profile P]``.

One item per check, parametrized by the plugin (conformance/plugin.py); the suite runs once.
"""

from __future__ import annotations

from typing import Any

from conformance.plugin import assert_result


def test_conformance(rl_check: Any) -> None:
    """One conformance check: pass, fail, warn, skip or error as the suite decided."""
    assert rl_check.check
    assert_result(rl_check)
