"""``prime-rl-dynamo dynamo up --real``: bad sizes are a usage error before anything starts."""

from __future__ import annotations

import pytest

from prime_rl_dynamo.cli import main


@pytest.mark.parametrize("sizes", ["1,x", "0", "", "2,-1"])
def test_bad_tensor_parallel_sizes_are_a_usage_error(
    sizes: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["dynamo", "up", "--real", sizes]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_real_and_engines_together_are_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dynamo", "up", "--real", "1,2", "--engines", "3"]) == 2
    assert "Traceback" not in capsys.readouterr().err
