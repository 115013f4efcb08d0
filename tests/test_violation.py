"""violation_of builds the Violation the dataclass would, without its __init__: equal, hashed,
shown and frozen alike, so a validator can use either."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from prime_rl_dynamo.violation import Violation, violation_of

texts = st.text(max_size=12)


@given(texts, texts, texts, st.none() | texts, texts, texts)
def test_violation_of_is_the_dataclass_built_with_its_message(
    requirement: str, pointer: str, expected: str, worker: str | None, found: str, other: str
) -> None:
    message = f"expected {expected}, found {found}"
    built = violation_of(requirement, pointer, message, worker, expected, found)
    made = Violation(requirement, pointer, message, worker, "MUST", expected, found)
    assert type(built) is Violation
    assert built == made and hash(built) == hash(made)
    assert repr(built) == repr(made) and str(built) == str(made)
    assert dataclasses.astuple(built) == dataclasses.astuple(made)
    assert built != violation_of(requirement + "x", pointer, message, worker, expected, found)
    assert dataclasses.replace(built, found=other) == dataclasses.replace(made, found=other)


def test_violation_of_is_frozen() -> None:
    built = violation_of("LIST-4", "/workers/0/routes/1", "expected a, found b", "w", "a", "b")
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.found = "c"  # type: ignore[misc]
