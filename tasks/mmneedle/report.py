"""MMNeedle's section of `harness report` (declared by every MMNeedle task: `report: !function report.section`).

As in the paper: a table per config with the positives' existence / index / exact accuracies (and the
individual accuracies for K > 1) beside the negatives' existence accuracy; a heat map of exact accuracy
per needle cell (row, column), pooled over images, for each positive task with N > 1 (Fig. 2); and exact
accuracy by needle depth (image index m) for the M = 10 configs (Fig. 5, computed per depth).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

_CONFIG = re.compile(r"mmneedle_m(\d+)_n(\d+)_k(\d+)_(pos|neg)$")
# The paper's palette: red (0) -> amber -> green (1).
PAPER_COLOURS = ["#F0496E", "#EBB839", "#0CD79F"]


def section(model: str, data: Any, out_dir: Path) -> list[str]:
    """Markdown lines for one model's MMNeedle tasks (`data`: a `harness.report.ModelResults`); plots are
    written to `out_dir`."""
    lines = table(data.results)
    plots = _plots(model, data.breakdowns, out_dir)
    if plots:
        lines += ["### MMNeedle plots", ""]
        lines += [f"![{title}]({name})" for title, name in plots]
        lines.append("")
    return lines


def _value(entry: dict[str, Any] | None, metric: str) -> str:
    if not entry or f"{metric},none" not in entry:
        return ""
    value, stderr = entry[f"{metric},none"], entry.get(f"{metric}_stderr,none")
    if not isinstance(value, float):
        return str(value)
    return f"{100 * value:.1f} ± {100 * stderr:.1f}" if isinstance(stderr, float) else f"{100 * value:.1f}"


def table(results: dict[str, dict[str, Any]]) -> list[str]:
    """The paper's layout: per config, positives' existence/index/exact (and individual accuracies
    for K > 1) and negatives' existence, in percent ± standard error."""
    configs = sorted({m.group(1, 2, 3) for m in map(_CONFIG.match, results) if m},
                     key=lambda c: (int(c[2]), int(c[0]), int(c[1])))
    if not configs:
        return []
    lines = ["| config | n pos | existence | index | exact | indiv. index | indiv. exact | n neg | existence (neg) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for m, n, k in configs:
        pos = results.get(f"mmneedle_m{m}_n{n}_k{k}_pos")
        neg = results.get(f"mmneedle_m{m}_n{n}_k{k}_neg")
        cells = [f"M={m} N={n} K={k}", str(pos.get("n_scored", "")) if pos else "",
                 *(_value(pos, x) for x in ("existence_acc", "index_acc", "exact_acc", "individual_index_acc",
                                            "individual_exact_acc")),
                 str(neg.get("n_scored", "")) if neg else "", _value(neg, "existence_acc")]
        lines.append("| " + " | ".join(cells) + " |")
    return ["### MMNeedle, as the paper reports it (%, official scorers; positives and negatives separately)", "",
            *lines, ""]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)


def heatmap(cells: dict[str, dict[str, float]], n: int, title: str, path: Path) -> None:
    import matplotlib.pyplot as plt
    from matplotlib.colors import LinearSegmentedColormap

    grid = [[math.nan] * n for _ in range(n)]
    counts = [[0] * n for _ in range(n)]
    for key, value in cells.items():
        r, c = (int(x) for x in key.split(","))
        grid[r - 1][c - 1] = value["mean"]
        counts[r - 1][c - 1] = int(value["n"])
    size = max(3.6, 1.2 + 0.6 * n)
    fig, ax = plt.subplots(figsize=(size + 1.4, size + 0.4))
    image = ax.imshow(grid, cmap=LinearSegmentedColormap.from_list("mmneedle", PAPER_COLOURS), vmin=0, vmax=1)
    ax.set_xticks(range(n), [str(c) for c in range(1, n + 1)])
    ax.set_yticks(range(n), [str(r) for r in range(1, n + 1)])
    ax.set_xlabel("column")
    ax.set_ylabel("row")
    ax.set_title(title, fontsize=9)
    for r in range(n):
        for c in range(n):
            label = "–" if counts[r][c] == 0 else f"{grid[r][c]:.2f}\nn={counts[r][c]}"
            ax.text(c, r, label, ha="center", va="center", fontsize=7 if n <= 4 else 5)
    fig.colorbar(image, ax=ax, label="exact accuracy", fraction=0.046, pad=0.04)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def depth_plot(series: dict[str, dict[str, dict[str, float]]], title: str, path: Path, depths: int = 10) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4))
    for label, by_depth in sorted(series.items()):
        xs = sorted(int(k) for k in by_depth)
        ys = [by_depth[str(x)]["mean"] for x in xs]
        errors = [by_depth[str(x)]["stderr"] for x in xs]
        ax.errorbar(xs, ys, yerr=errors, marker="o", capsize=3, label=label)
    ax.set_xlabel("needle depth: image index m")
    ax.set_ylabel("exact accuracy")
    ax.set_ylim(-0.05, 1.05)
    ax.set_xticks(range(1, depths + 1))
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _plots(model: str, breakdowns: dict[str, Any], out_dir: Path) -> list[tuple[str, str]]:
    plots: list[tuple[str, str]] = []
    depth_series: dict[int, dict[str, Any]] = {}
    for task, breakdown in sorted(breakdowns.items()):
        match = _CONFIG.match(task)
        if not match or match.group(4) != "pos":
            continue
        m, n, k = (int(match.group(i)) for i in (1, 2, 3))
        cells = breakdown.get("exact_acc_by_cell")
        if cells and n > 1:
            name = f"heatmap_{_slug(model)}_{task}.png"
            title = f"{model}: {task}\nexact accuracy per needle cell (row, column), pooled over m"
            heatmap(cells, n, title, out_dir / name)
            plots.append((f"{task} heat map", name))
        depths = breakdown.get("exact_acc_by_depth")
        if depths and m > 1:
            depth_series.setdefault(k, {})[f"M={m}, N={n}"] = depths
    for k, series in sorted(depth_series.items()):
        name = f"depth_{_slug(model)}_k{k}.png"
        depth_plot(series, f"{model}: exact accuracy by needle depth (K={k}, positives)", out_dir / name)
        plots.append((f"accuracy by depth, K={k}", name))
    return plots
