"""MMNeedle's figures for `harness report`: the heat maps of exact accuracy per needle cell (Fig. 2) and the curves
of exact accuracy by needle depth (Fig. 5), colour-blind safe, drawn from what `report.py` gathers."""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field
from typing import Any

from tasks.mmneedle.task_names import paper_order

# Perceptually uniform and readable with any colour-vision deficiency; white stays free for empty cells.
COLOUR_MAP = "cividis"
# Okabe & Ito's colour-blind-safe palette, for the depth curves (markers differ too).
LINE_COLOURS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00"]
MARKERS = ["o", "s", "^", "D", "v", "P"]
# Cells holding fewer needles than this are hatched: their accuracy rests on too few samples to read.
TINY_CELL = 5


@dataclass
class Panel:
    """One positive config's heat map: exact accuracy and needle count per cell (row, column)."""

    m: int
    n: int
    k: int
    accuracy: list[list[float]]  # NaN where no needle was placed
    needles: list[list[int]]
    samples: str = ""  # the task's scored samples
    exact: float | None = None  # the task's exact accuracy
    tiny: list[tuple[int, int]] = field(default_factory=list)  # (row, column), 0-based, with 0 < n < TINY_CELL


def panel(m: int, n: int, k: int, cells: dict[str, dict[str, float]]) -> Panel:
    accuracy = [[math.nan] * n for _ in range(n)]
    needles = [[0] * n for _ in range(n)]
    for key, value in cells.items():
        r, c = (int(x) - 1 for x in key.split(","))
        accuracy[r][c], needles[r][c] = value["mean"], int(value["n"])
    tiny = [(r, c) for r in range(n) for c in range(n) if 0 < needles[r][c] < TINY_CELL]
    return Panel(m, n, k, accuracy, needles, tiny=tiny)


def _hatch(r: int, c: int) -> list[list[tuple[float, float]]]:
    """Diagonal strokes across two corners of cell (r, c), leaving its centre (the label) clear. Drawn in
    data units, so every tiny cell gets the same marks whatever the cell's size on the page (matplotlib's
    hatch patterns are laid in page units and miss small cells)."""
    strokes = [
        ((-0.5, 0.0), (0.0, -0.5)),
        ((-0.5, -0.25), (-0.25, -0.5)),
        ((0.0, 0.5), (0.5, 0.0)),
        ((0.25, 0.5), (0.5, 0.25)),
    ]
    return [[(c + x, r + y) for x, y in stroke] for stroke in strokes]


def _draw_panel(ax: Any, one: Panel, cmap: Any) -> Any:
    from matplotlib.collections import LineCollection

    image = ax.imshow(one.accuracy, cmap=cmap, vmin=0, vmax=1)
    ticks = range(one.n)
    size = 8 if one.n <= 4 else 6.5
    ax.set_xticks(ticks, [str(c + 1) for c in ticks], fontsize=size)
    ax.set_yticks(ticks, [str(r + 1) for r in ticks], fontsize=size)
    ax.set_xticks([x - 0.5 for x in range(1, one.n)], minor=True)
    ax.set_yticks([y - 0.5 for y in range(1, one.n)], minor=True)
    ax.grid(which="minor", color="#bbbbbb", linewidth=0.5)
    ax.tick_params(which="minor", length=0)
    for r in range(one.n):
        for c in range(one.n):
            if one.needles[r][c] == 0:
                continue  # no needle placed here: the cell stays white
            value = one.accuracy[r][c]
            red, green, blue, _ = cmap(value)
            colour = "black" if 0.299 * red + 0.587 * green + 0.114 * blue > 0.5 else "white"
            label = f"{100 * value:.0f}" + (f"\nn={one.needles[r][c]}" if one.n <= 4 else "")
            ax.text(c, r, label, ha="center", va="center", fontsize=size, color=colour, zorder=3)
            if (r, c) in one.tiny:
                ax.add_collection(LineCollection(_hatch(r, c), colors=colour, linewidths=0.8, alpha=0.7))
    exact = f"exact {100 * one.exact:.1f}%, " if isinstance(one.exact, float) and not math.isnan(one.exact) else ""
    ax.set_title(f"M={one.m}, N={one.n}, K={one.k}\n{exact}n={one.samples}", fontsize=9)
    return image


def cell_grid_figure(model: str, panels: list[Panel], caption: str) -> Any:
    """One figure for all configs: rows by K, columns by (N, M) as the paper orders them."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import PercentFormatter

    ks = sorted({p.k for p in panels})
    columns = sorted({(p.n, p.m) for p in panels})
    fig, axes = plt.subplots(
        len(ks),
        len(columns),
        figsize=(1.2 + 3.0 * len(columns), 1.6 + 3.1 * len(ks)),
        squeeze=False,
        layout="constrained",
    )
    cmap = plt.get_cmap(COLOUR_MAP).with_extremes(bad="white")
    by_place = {(p.k, p.n, p.m): p for p in panels}
    image: Any = None  # the last panel's: the colour bar's scale
    for i, k in enumerate(ks):
        for j, (n, m) in enumerate(columns):
            ax = axes[i][j]
            if (k, n, m) in by_place:
                image = _draw_panel(ax, by_place[(k, n, m)], cmap)
            else:
                ax.axis("off")
                ax.text(
                    0.5,
                    0.5,
                    f"M={m}, N={n}, K={k}\nnot run",
                    ha="center",
                    va="center",
                    fontsize=9,
                    transform=ax.transAxes,
                )
        axes[i][0].set_ylabel("row", fontsize=8)
    for ax in axes[-1]:
        ax.set_xlabel("column", fontsize=8)
    bar = fig.colorbar(image, ax=axes, label="exact accuracy", shrink=0.8)
    bar.ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    fig.suptitle(
        f"{model}: MMNeedle exact accuracy (%) per needle cell (row, column), pooled over image index m", fontsize=11
    )
    key = (
        f"Rows: K needles; columns: N x N stitching, then M images. Cell: exact accuracy (%) of the needles "
        f"placed there, n = needles (shown for N <= 4). Hatched corners: n < {TINY_CELL}. White: no needle placed there."
    )
    fig.supxlabel("\n".join(textwrap.wrap(key, 150) + textwrap.wrap(caption, 150)), fontsize=8)
    return fig


# --------------------------------------------------------------------------------------- depth curves

# --------------------------------------------------------------------------------------- depth curves


def _error_bar(value: object) -> float:
    """A depth's stderr as a bar: "N/A" (one needle at that depth: no spread to estimate) draws none."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else math.nan


def depth_figure(model: str, series: dict[int, dict[tuple[int, int], Any]], caption: str, depths: int = 10) -> Any:
    """One panel per K, one curve per config in the paper's order (colour and marker both tell them apart)."""
    import matplotlib.pyplot as plt

    ks = sorted(series)
    fig, axes = plt.subplots(
        1, len(ks), figsize=(0.6 + 4.2 * len(ks), 4.6), squeeze=False, sharey=True, layout="constrained"
    )
    for ax, k in zip(axes[0], ks, strict=True):
        configs = sorted(series[k], key=lambda mn: paper_order(mn[0], mn[1], k))
        for i, (m, n) in enumerate(configs):
            by_depth = series[k][(m, n)]
            xs = sorted(int(x) for x in by_depth)
            dodge = 0.08 * (i - (len(configs) - 1) / 2)  # curves that coincide (at 0, say) stay visible
            ax.errorbar(
                [x + dodge for x in xs],
                [by_depth[str(x)]["mean"] for x in xs],
                yerr=[_error_bar(by_depth[str(x)]["stderr"]) for x in xs],
                marker=MARKERS[i % len(MARKERS)],
                color=LINE_COLOURS[i % len(LINE_COLOURS)],
                capsize=3,
                label=f"M={m}, N={n}",
            )
        ax.set_title(f"K={k}", fontsize=10)
        ax.set_xlabel("needle depth: image index m")
        ax.set_xticks(range(1, depths + 1))
        ax.set_ylim(-0.05, 1.05)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    axes[0][0].set_ylabel("exact accuracy (± standard error)")
    fig.suptitle(f"{model}: MMNeedle exact accuracy by needle depth (positives)", fontsize=11)
    fig.supxlabel("\n".join(textwrap.wrap(caption, 130)), fontsize=8)
    return fig
