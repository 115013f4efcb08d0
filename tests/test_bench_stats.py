"""Timing primitives of the benchmark: percentiles, summaries, paired ratios, interleaving order."""

from __future__ import annotations

import itertools

import pytest

from tools.bench.stats import interleaved, paired_ratio, percentile, summarize


def test_percentile_interpolates_between_ranks() -> None:
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == pytest.approx(2.5)
    assert percentile([1.0, 2.0, 3.0], 0) == 1.0
    assert percentile([1.0, 2.0, 3.0], 100) == 3.0
    # p99 of 1..101 is the 100th value: 100.
    assert percentile([float(x) for x in range(1, 102)], 99) == pytest.approx(100.0)


@pytest.mark.parametrize("bad", [-1.0, 100.5])
def test_percentile_refuses_out_of_range(bad: float) -> None:
    with pytest.raises(ValueError, match=r"0\.\.100"):
        percentile([1.0], bad)


def test_summary_keys_and_values() -> None:
    summary = summarize([0.3, 0.1, 0.2, 0.9])
    assert summary == {
        "n": 4,
        "median": pytest.approx(0.25),
        "min": 0.1,
        "max": 0.9,
        "p50": pytest.approx(0.25),
        "p99": pytest.approx(0.3 + (0.9 - 0.3) * 0.97),
    }
    with pytest.raises(ValueError):
        summarize([])


def test_paired_ratio_uses_medians_and_per_repetition_spread() -> None:
    ratio = paired_ratio([2.0, 6.0, 4.0], [1.0, 2.0, 4.0])
    assert ratio["median"] == pytest.approx(4.0 / 2.0)
    assert ratio["min"] == pytest.approx(1.0)  # 4/4
    assert ratio["max"] == pytest.approx(3.0)  # 6/2
    with pytest.raises(ValueError, match="equal"):
        paired_ratio([1.0], [1.0, 2.0])


def test_interleaved_rotates_order_and_pairs_samples() -> None:
    calls: list[str] = []
    ticks = itertools.count()

    def clock() -> float:
        return float(next(ticks))

    contenders = {name: (lambda n=name: calls.append(n)) for name in ("a", "b", "c")}
    seen: list[int] = []
    samples = interleaved(contenders, 3, number=2, clock=clock, after_each=seen.append)
    # Each repetition runs every contender (number times), the first one rotating.
    assert (
        calls
        == ["a"] * 2
        + ["b"] * 2
        + ["c"] * 2
        + ["b"] * 2
        + ["c"] * 2
        + ["a"] * 2
        + ["c"] * 2
        + ["a"] * 2
        + ["b"] * 2
    )
    assert seen == [0, 1, 2]
    assert {name: len(values) for name, values in samples.items()} == {"a": 3, "b": 3, "c": 3}
    # The fake clock advances one tick per reading: each sample is (1 tick) / number.
    assert all(value == pytest.approx(0.5) for values in samples.values() for value in values)


def test_interleaved_refuses_zero_repetitions() -> None:
    with pytest.raises(ValueError):
        interleaved({"a": lambda: None}, 0)
