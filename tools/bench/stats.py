"""Timing primitives shared by every benchmark: interleaved repetitions, summaries and ratios.

Machines here are noisy, so contenders run in turn inside each repetition (rotating who goes
first) and each figure is a median with its min-max spread, never a single run.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from prime_rl_dynamo.stats import percentile

__all__ = [
    "interleaved",
    "paired_ratio",
    "percentile",
    "summarize",
]


def summarize(samples: Sequence[float]) -> dict[str, Any]:
    """Median, min, max, p50, p99 and count of some samples (seconds in, seconds out)."""
    if not samples:
        raise ValueError("summary of no samples")
    return {
        "n": len(samples),
        "median": statistics.median(samples),
        "min": min(samples),
        "max": max(samples),
        "p50": percentile(samples, 50.0),
        "p99": percentile(samples, 99.0),
    }


def paired_ratio(numerator: Sequence[float], denominator: Sequence[float]) -> dict[str, Any]:
    """Ratio of two contenders measured in the same repetitions.

    ``median`` is the ratio of the medians (the headline figure); ``min``/``max`` span the
    per-repetition ratios, which pair samples taken moments apart and so share the machine's noise.
    """
    if len(numerator) != len(denominator) or not numerator:
        raise ValueError(
            f"paired ratio needs equal, non-empty sample lists; got {len(numerator)} and "
            f"{len(denominator)}"
        )
    per_rep = [a / b for a, b in zip(numerator, denominator, strict=True) if b > 0]
    med_den = statistics.median(denominator)
    headline = statistics.median(numerator) / med_den if med_den > 0 else math.inf
    return {
        "median": headline,
        "min": min(per_rep) if per_rep else math.inf,
        "max": max(per_rep) if per_rep else math.inf,
    }


def interleaved(
    contenders: Mapping[str, Callable[[], object]],
    repetitions: int,
    *,
    number: int = 1,
    after_each: Callable[[int], None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, list[float]]:
    """Time every contender once per repetition, rotating the order, for ``repetitions`` rounds.

    Each sample is the mean of ``number`` back-to-back calls (for operations too short to time one
    by one). ``after_each(rep)`` is called after each repetition (progress display). Returns the
    per-contender samples in seconds, index i belonging to repetition i for every contender.
    """
    if repetitions < 1 or number < 1:
        raise ValueError(f"repetitions and number must be >= 1, got {repetitions} and {number}")
    names = list(contenders)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for rep in range(repetitions):
        # Rotate who goes first so that warm caches or a frequency ramp favour nobody.
        shift = rep % len(names) if names else 0
        for name in names[shift:] + names[:shift]:
            call = contenders[name]
            start = clock()
            for _ in range(number):
                call()
            samples[name].append((clock() - start) / number)
        if after_each is not None:
            after_each(rep)
    return samples
