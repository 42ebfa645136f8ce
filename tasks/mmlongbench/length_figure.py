"""MMLongBench's figure: score against length, one panel per category (and Avg), ours solid with its 95 % band
(Wilson's on the effective n, `harness.outputs.results.estimates`) and the paper's dashed (its Figures 22-26 as curves)."""

from __future__ import annotations

import math
import textwrap
from typing import Any

from harness.outputs.report.figures import LINE_COLOURS, MARKERS
from tasks.mmlongbench.aggregation import AVERAGE
from tasks.mmlongbench.scores import LENGTHS, ROWS


def _empty_panel(row: str, ran: bool) -> str:
    """Why a panel has no curve of ours."""
    if not ran:
        return "not run"
    if row == "Summ":
        return "no score: Summ needs the judge's\nFluency-F1 (run with --judge_model)"
    if row == AVERAGE:
        return "no score: Avg needs all five\ncategories (Summ needs the judge)"
    return "no score: a dataset of this\ncategory is missing or N/A"


def length_figure(
    series: dict[str, dict[tuple[str, str], float | None]],
    paper: dict[str, dict[tuple[str, str], float | None]],
    caption: str,
    bands: dict[str, dict[tuple[str, str], tuple[float, float]]] | None = None,
) -> Any:
    """One panel per category (and Avg): score against length, ours solid with its band (`bands`: model -> (row,
    length) -> its 95 % interval), the paper's dashed."""
    import matplotlib.pyplot as plt

    fig, grid = plt.subplots(2, 3, figsize=(11, 7), sharey=True)
    axes = list(grid.flat)
    xs = list(range(len(LENGTHS)))
    for ax, row in zip(axes, ROWS, strict=True):
        for i, (model, scores) in enumerate(series.items()):
            ys = [scores.get((row, length)) for length in LENGTHS]
            ax.plot(
                xs,
                [math.nan if y is None else y for y in ys],
                marker=MARKERS[i % len(MARKERS)],
                color=LINE_COLOURS[i % len(LINE_COLOURS)],
                label=model,
            )
            band = (bands or {}).get(model, {})
            if any((row, length) in band for length in LENGTHS):
                low, high = ([band.get((row, n), (math.nan, math.nan))[j] for n in LENGTHS] for j in (0, 1))
                ax.fill_between(xs, low, high, color=LINE_COLOURS[i % len(LINE_COLOURS)], alpha=0.15, linewidth=0)
        for i, (model, scores) in enumerate(paper.items()):
            ys = [scores.get((row, length)) for length in LENGTHS]
            ax.plot(
                xs,
                [math.nan if y is None else y for y in ys],
                linestyle="--",
                marker=MARKERS[i % len(MARKERS)],
                color=LINE_COLOURS[(i + len(series)) % len(LINE_COLOURS)],
                alpha=0.8,
                label=f"{model} (paper)",
            )
        if not any(scores.get((row, length)) is not None for scores in series.values() for length in LENGTHS):
            ax.text(
                0.5,
                0.5,
                _empty_panel(row, any((row, length) in scores for scores in series.values() for length in LENGTHS)),
                transform=ax.transAxes,
                ha="center",
                va="center",
                fontsize=8,
                color="#555555",
            )
        ax.set_title(row)
        ax.set_xticks(xs, list(LENGTHS))
        ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
    for ax in (axes[0], axes[3]):
        ax.set_ylabel("score (0-100)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(4, max(1, len(labels))), fontsize=8, frameon=False)
    fig.suptitle("\n".join(textwrap.wrap(caption + " Bands: our 95 % intervals.", 150)), fontsize=8)
    fig.tight_layout(rect=(0, 0.07, 1, 0.94))
    return fig
