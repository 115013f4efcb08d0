"""Issue #37's bar, held: a body's path through validation visits each module once, without going
back. Every project function called while ``validate_body`` (or ``check_body``) runs is seen; a
module that calls into another module and is then called back from it (A -> B -> A on the stack)
has been left and re-entered, and the test names the frames that did it."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from prime_rl_dynamo.errors import ProtocolError
from prime_rl_dynamo.validate import check_body, validate_body

ROOT = Path(__file__).resolve().parent.parent
CASES = json.loads((ROOT / "schema" / "vectors" / "discovery.v1.json").read_text("utf-8"))["cases"]
PACKAGE = str(ROOT / "prime_rl_dynamo")


def _module(frame: FrameType) -> str | None:
    filename = frame.f_code.co_filename
    return filename if filename.startswith(PACKAGE) else None


def reentries(run: Callable[[], object]) -> list[str]:
    """Every call that re-enters a project module which is on the stack below another module."""
    stack: list[str | None] = []
    found: list[str] = []

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        if event == "call":
            module = _module(frame)
            below = [m for m in stack if m is not None]
            if module is not None and module in below and below[-1] != module:
                chain = " -> ".join(Path(m).name for m in dict.fromkeys(below))
                found.append(f"{chain} -> {Path(module).name} ({frame.f_code.co_name})")
            stack.append(module)
        elif event == "return" and stack:
            stack.pop()

    sys.setprofile(profile)
    try:
        run()
    except ProtocolError:
        pass
    finally:
        sys.setprofile(None)
    return found


def _body(case: dict[str, Any]) -> bytes:
    raw = case.get("raw")
    return raw.encode("utf-8") if isinstance(raw, str) else json.dumps(case["body"]).encode()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["description"][:70])
def test_a_body_goes_through_each_module_once(case: dict[str, Any]) -> None:
    body = _body(case)
    assert reentries(lambda: validate_body(body)) == []
    assert reentries(lambda: check_body(body)) == []


def test_the_probe_sees_a_module_called_back(monkeypatch: pytest.MonkeyPatch) -> None:
    # The counterpart: a helper that calls back into validate.py while validate.py waits on it.
    # It is compiled as if it were text.py, so that the probe sees validate.py -> text.py ->
    # validate.py, the path the bar forbids.
    from prime_rl_dynamo import validate

    namespace: dict[str, Any] = {"validate": validate, "clip": validate.clip}
    source = (
        "def calling_back(*args, **kw):\n"
        "    validate.json_pointer(['x'])\n"
        "    return clip(*args, **kw)\n"
    )
    exec(compile(source, str(ROOT / "prime_rl_dynamo" / "text.py"), "exec"), namespace)
    monkeypatch.setattr(validate, "clip", namespace["calling_back"])
    found = reentries(lambda: validate_body(b'{"protocol_version": 1, "workers": "no"}'))
    assert found and found[0].startswith("validate.py -> text.py -> validate.py")
