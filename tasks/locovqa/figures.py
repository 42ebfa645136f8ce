"""LoCoVQA's figures for `harness report`: accuracy against context length with the fitted exponential and the
random baseline (Figure 1), and the needle's accuracy by depth and length (Figure 7)."""

from __future__ import annotations

import math
import textwrap
from typing import Any

from harness.outputs.report.figures import LINE_COLOURS, MARKERS
from tasks.locovqa.decay import fit
from tasks.locovqa.series import DEPTHS, MODES, Series

# (row, panel title, what its y axis is)
PANELS = [
    ("OK-VQA", "OK-VQA exact match", "exact match"),
    ("BERT", "OK-VQA BERTScore (MiniLM cos)", "BERTScore (MiniLM cosine)"),
    ("ROUGE", "OK-VQA ROUGE-L", "ROUGE-L F1"),
    ("MMStar", "MMStar", "accuracy"),
    ("MMBench", "MMStar: MMBench", "accuracy"),
    ("MNIST", "MNIST transcription", "accuracy"),
    ("Needle", "Needle", "accuracy"),
]
# The random baseline's line; not "random", the name of the `random` model's own curves.
CHANCE_LABEL = "chance"


def series_colour(model_index: int, mode: str) -> str:
    """A colour per model and mode: cmp and int of one model are told apart by colour as well as by line style."""
    return LINE_COLOURS[(2 * model_index + MODES.index(mode)) % len(LINE_COLOURS)]


Bands = dict[tuple[str, str], list[tuple[float, float] | None]]  # (row, mode) -> each point's 95 % interval


def decay_figure(curves: dict[str, list[Series]], caption: str, bands: dict[str, Bands] | None = None) -> Any:
    """Figure 1: accuracy against context length per panel, every model and mode (cmp solid, int dashed, each its
    own colour) with each point's 95 % band (`bands`: model -> its curves' intervals), its fitted exponential
    (thin) and the random baseline (dotted, "chance"); each panel's y axis names its metric."""
    import matplotlib.pyplot as plt

    panels = [
        (row, title, metric) for row, title, metric in PANELS if any(c.row == row for cs in curves.values() for c in cs)
    ]
    cols = min(3, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig, grid = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), squeeze=False)
    axes = list(grid.flat)
    for ax, (row, title, metric) in zip(axes, panels, strict=False):
        chance_drawn = False
        for i, (model, model_curves) in enumerate(curves.items()):
            for curve in (c for c in model_curves if c.row == row):
                colour = series_colour(i, curve.mode)
                style = "-" if curve.mode == "cmp" else "--"
                ax.plot(
                    curve.xs,
                    curve.ys,
                    style,
                    marker=MARKERS[i % len(MARKERS)],
                    color=colour,
                    label=f"{model} ({curve.mode})",
                )
                band = (bands or {}).get(model, {}).get((curve.row, curve.mode))
                if band and any(b is not None for b in band):
                    low = [math.nan if b is None else b[0] for b in band]
                    high = [math.nan if b is None else b[1] for b in band]
                    ax.fill_between(curve.xs, low, high, color=colour, alpha=0.12, linewidth=0)
                found = fit(curve.xs, curve.ys, "exp")
                if found is not None and not math.isnan(found.r2):
                    grid_x = [min(curve.xs) + k * (max(curve.xs) - min(curve.xs)) / 50 for k in range(51)]
                    ax.plot(grid_x, [found.predict(x) for x in grid_x], style, color=colour, linewidth=0.8, alpha=0.6)
                if not chance_drawn and curve.chance:
                    ax.plot(curve.xs, curve.chance, ":", color="black", label=CHANCE_LABEL)
                    chance_drawn = True
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("visual context length")
        ax.set_ylabel(metric)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    for ax in axes[len(panels) :]:
        ax.axis("off")
    handles: dict[str, Any] = {}
    labels: dict[str, str] = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(lab, h)
            labels[lab] = lab
    fig.legend(
        list(handles.values()),
        list(labels),
        loc="lower center",
        ncol=min(4, max(1, len(labels))),
        fontsize=8,
        frameon=False,
    )
    key = " Thin lines: the fitted exponential; bands: each point's 95 % interval."
    fig.suptitle("\n".join(textwrap.wrap(caption + key, 150)), fontsize=8)
    fig.tight_layout(rect=(0, 0.08, 1, 0.93))
    return fig


def needle_figure(model: str, depths: dict[str, dict[int, list[float | None]]], caption: str) -> Any:
    """Figure 7: one model's needle accuracy by depth (rows, 0% = first image / top-left) and context length
    (columns); a cell no needle fell in stays white, and the figure says so."""
    import matplotlib.pyplot as plt
    import numpy as np

    modes = [m for m in MODES if m in depths]
    fig, axes = plt.subplots(1, len(modes), figsize=(4.5 * len(modes), 4.0), squeeze=False)
    colours = plt.get_cmap("cividis").with_extremes(bad="white")
    for ax, mode in zip(axes[0], modes, strict=True):
        lengths = sorted(depths[mode])
        grid = np.array([[math.nan if v is None else v for v in depths[mode][n]] for n in lengths]).T
        shown = ax.imshow(grid, cmap=colours, vmin=0, vmax=1, aspect="auto")
        ax.set_xticks(range(len(lengths)), [str(n) for n in lengths])
        ax.set_yticks(range(len(DEPTHS)), [f"{int(d * 100)}%" for d in DEPTHS])
        ax.set_xlabel("visual context length")
        ax.set_ylabel("needle depth")
        ax.set_title(f"needle ({mode})", fontsize=9)
        fig.colorbar(shown, ax=ax, label="accuracy")
    key = (
        "White: no needle at that depth for that length (a context of n images has only n positions, binned to "
        "the nearest depth)."
    )
    title = f"{model}: LoCoVQA needle accuracy by depth and context length"
    fig.suptitle("\n".join([title, *textwrap.wrap(key, 110), *textwrap.wrap(caption, 110)]), fontsize=8)
    fig.tight_layout(rect=(0, 0, 1, 0.84))
    return fig
