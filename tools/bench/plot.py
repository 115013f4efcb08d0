"""The benchmark figure: discovery latency (p50 and p99) and time to a ready snapshot against fleet
size for both frontends, and validation time against body size for every contender.

Drawn with matplotlib's Agg backend from the report dictionary alone, so a stored JSON can be
re-plotted later.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

__all__ = ["plot_report"]

_COLOURS = {"reference": "#1f77b4", "dynamo": "#d62728"}
_LABELS = {"reference": "reference frontend", "dynamo": "Dynamo 1.6.1 frontend"}


def _ms(seconds: float) -> float:
    return seconds * 1000.0


def _blank(ax: Any, title: str, section: dict[str, Any]) -> bool:
    """Blank axes with the reason when a section measured nothing; True if so."""
    measured = any(
        p.get("latency_s") for s in (section.get("series") or {}).values() for p in s["points"]
    )
    if measured:
        return False
    ax.set_title(title)
    ax.set_xticks([])
    ax.set_yticks([])
    _skipped_note(ax, [f"skipped ({section.get('reason', 'no data')})"])
    return True


def _discovery_panel(
    ax: Any, discovery: dict[str, Any], title: str = "GET /v1/rl/workers latency"
) -> None:
    if _blank(ax, title, discovery):
        return
    skipped: list[str] = []
    sizes_seen: set[int] = set()
    for name, series in discovery.get("series", {}).items():
        points = [p for p in series.get("points", []) if "latency_s" in p]
        if not points:
            skipped.append(f"{_LABELS.get(name, name)}: skipped ({series.get('reason')})")
            continue
        xs = [p["engines"] for p in points]
        sizes_seen.update(xs)
        colour = _COLOURS.get(name)
        label = _LABELS.get(name, name)
        ax.plot(
            xs,
            [_ms(p["latency_s"]["p50"]) for p in points],
            "o-",
            color=colour,
            label=f"{label} p50",
        )
        ax.plot(
            xs,
            [_ms(p["latency_s"]["p99"]) for p in points],
            "s--",
            color=colour,
            alpha=0.75,
            label=f"{label} p99",
        )
    _fleet_axes(ax, sizes_seen, title)
    ax.set_ylabel("latency (ms, log)")
    _skipped_note(ax, skipped)


def _ready_panel(ax: Any, discovery: dict[str, Any]) -> None:
    if _blank(ax, "DiscoveryClient: time to a ready snapshot", discovery):
        return
    skipped: list[str] = []
    sizes_seen: set[int] = set()
    for name, series in discovery.get("series", {}).items():
        points = [p for p in series.get("points", []) if p.get("ready_s")]
        if not points:
            reason = series.get("reason") or next(
                (p.get("ready_skipped") for p in series.get("points", []) if "ready_skipped" in p),
                "no data",
            )
            skipped.append(f"{_LABELS.get(name, name)}: skipped ({reason})")
            continue
        xs = [p["engines"] for p in points]
        sizes_seen.update(xs)
        med = [_ms(p["ready_s"]["median"]) for p in points]
        low = [m - _ms(p["ready_s"]["min"]) for m, p in zip(med, points, strict=True)]
        high = [_ms(p["ready_s"]["max"]) - m for m, p in zip(med, points, strict=True)]
        ax.errorbar(
            xs,
            med,
            yerr=[low, high],
            fmt="o-",
            capsize=3,
            color=_COLOURS.get(name),
            label=f"{_LABELS.get(name, name)} (median, min-max)",
        )
    _fleet_axes(ax, sizes_seen, "DiscoveryClient: time to a ready snapshot")
    ax.set_ylabel("time (ms, log)")
    _skipped_note(ax, skipped)


def _validation_panel(ax: Any, validation: dict[str, Any]) -> None:
    ax.set_title("Validation cost against body size")
    curves = validation.get("curves") or {}
    if not curves:
        ax.set_xticks([])
        ax.set_yticks([])
        _skipped_note(ax, [f"validation: skipped ({validation.get('reason', 'no data')})"])
        return
    sizes: set[int] = set()
    own = validation.get("validator")
    for name, points in curves.items():
        xs = [p["workers"] for p in points]
        sizes.update(xs)
        # The project's own validator is the line the reader looks for.
        style = {"color": "black", "linewidth": 2.6, "zorder": 5} if name == own else {}
        ax.plot(xs, [_ms(p["median_s"]) for p in points], "o-", label=name, **style)
    ax.set_xscale("log")
    from matplotlib.ticker import NullLocator

    ax.xaxis.set_minor_locator(NullLocator())  # only the fleet sizes are labelled
    _log_y(ax)
    ax.set_xticks(sorted(sizes))
    ax.set_xticklabels([f"{s:,}" for s in sorted(sizes)])
    ax.set_xlabel("workers in the body (log)")
    ax.set_ylabel("time per body (ms, log, median)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")


def _log_y(ax: Any) -> None:
    # Plain numbers (44, 50, 100) read better than 4.4x10^1. Minor ticks carry labels too: every
    # one on a range under a decade (the usual case here), the 2s and 5s up to a few decades.
    import math

    from matplotlib.ticker import FuncFormatter

    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{value:g}"))
    low, high = ax.get_ylim()
    span = math.log10(high / low) if low > 0 else 99.0

    def minor(value: float, _pos: int) -> str:
        mantissa = round(value / 10 ** math.floor(math.log10(value)), 6) if value > 0 else 0
        if span < 1.0 or (span < 2.5 and mantissa in (2.0, 5.0)):
            return f"{value:g}"
        return ""

    ax.yaxis.set_minor_formatter(FuncFormatter(minor))
    ax.tick_params(axis="y", which="minor", labelsize=8)


def _fleet_axes(ax: Any, sizes: set[int], title: str) -> None:
    ax.set_xscale("log")
    _log_y(ax)
    if sizes:
        ax.set_xticks(sorted(sizes))
        ax.set_xticklabels([str(s) for s in sorted(sizes)])
        ax.set_xlim(min(sizes) / 1.6, max(sizes) * 1.6)
    ax.set_xlabel("engines in the fleet (log)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="upper left")


def _skipped_note(ax: Any, lines: list[str]) -> None:
    if lines:
        text = "\n".join(textwrap.fill(line, 60) for line in lines)
        ax.text(0.02, 0.02, text, transform=ax.transAxes, fontsize=7, va="bottom", color="#555555")


def plot_report(report: dict[str, Any], path: str | Path) -> Path:
    """Draw the figure of a benchmark report into ``path`` (PNG); returns the path."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib import pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(22, 5.2))
    try:
        _discovery_panel(axes[0], report.get("discovery") or {})
        _ready_panel(axes[1], report.get("discovery") or {})
        _validation_panel(axes[2], report.get("validation") or {})
        _discovery_panel(axes[3], report.get("scale") or {}, "Listing latency at 64-256 engines")
        machine = report.get("machine") or {}
        fig.suptitle(
            f"prime-rl-dynamo bench ({report.get('mode', '?')}) - {machine.get('cpu_count')} CPU "
            f"{machine.get('cpu_model') or ''}, Python {machine.get('python')}, "
            f"{machine.get('timestamp', '')}",
            fontsize=10,
        )
        fig.tight_layout(rect=(0, 0, 1, 0.95))
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=110)
    finally:
        plt.close(fig)
    return out
