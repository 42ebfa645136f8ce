"""MMNeedle's section of `harness report` (declared by every MMNeedle task: `report: !function report.section`).

As in the paper: a table per config with the positives' existence / index / exact accuracies (and the
individual accuracies for K > 1) beside the negatives' existence accuracy, with the share of answers in
the requested format beside each existence (a model that emits garbage "finds" every needle). Then one
figure per model with the heat map of exact accuracy per needle cell (row, column), pooled over images,
for every positive config with N > 1 (Fig. 2), and one with exact accuracy by needle depth (image index m)
for the M = 10 configs (Fig. 5, computed per depth). Configs are ordered everywhere as the paper's tables
order them: by K, then N, then M. Figures are colour-blind safe and carry the data's provenance.
"""

from __future__ import annotations

import math
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.outputs.figure_batch import figure
from harness.outputs.figures import run_names
from harness.outputs.verdict import compare, data_problem, explanation, tally

SCALE = 1  # scores are proportions (0-1); `harness report` shows them as percentages beside the others

_CONFIG = re.compile(r"mmneedle_m(\d+)_n(\d+)_k(\d+)_(pos|neg)$")
# Perceptually uniform and readable with any colour-vision deficiency; white stays free for empty cells.
COLOUR_MAP = "cividis"
# Okabe & Ito's colour-blind-safe palette, for the depth curves (markers differ too).
LINE_COLOURS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00"]
MARKERS = ["o", "s", "^", "D", "v", "P"]
# Cells holding fewer needles than this are hatched: their accuracy rests on too few samples to read.
TINY_CELL = 5
DPI = 150  # the heat maps' cell labels stay legible


def config_of(task: str) -> tuple[int, int, int, str] | None:
    """(M, N, K, "pos" or "neg") of an MMNeedle task name."""
    match = _CONFIG.match(task)
    return (int(match.group(1)), int(match.group(2)), int(match.group(3)), match.group(4)) if match else None


def paper_order(m: int, n: int, k: int) -> tuple[int, int, int]:
    """The paper's tables go by K, then N (stitching), then M: 1x1 M=10, 2x2 M=1, 2x2 M=10, ..."""
    return k, n, m


def section(model: str, data: Any, out_dir: Path) -> list[str]:
    """Markdown lines for one model's MMNeedle tasks (`data`: a `harness.outputs.model_results.ModelResults`); figures are
    written to `out_dir`."""
    lines = table(data) + beside_paper(model, data)
    caption = data.provenance_line()
    plots = []
    panels = cell_panels(data)
    if panels:
        name = f"mmneedle_cells_{_slug(model)}.png"
        if figure(out_dir / name, cell_grid_figure, model, panels, caption, dpi=DPI):
            plots.append(("exact accuracy per needle cell, every config with N > 1", name))
    series = depth_series(data.breakdowns)
    if series:
        name = f"mmneedle_depth_{_slug(model)}.png"
        if figure(out_dir / name, depth_figure, model, series, caption, dpi=DPI):
            plots.append(("exact accuracy by needle depth, M = 10", name))
    if plots:
        lines += ["### MMNeedle figures", "", f"*{caption}*", ""]
        lines += [f"![{title}]({name})" for title, name in plots]
        lines.append("")
    return lines


def headline_metrics(names: list[str]) -> list[tuple[str, str]]:
    """The cross-model table's rows: each config's exact accuracy on positives and existence accuracy on
    negatives (the paper's hallucination measure), in the paper's order. Groups pool nothing."""
    tasks = [(parsed, name) for name in names if (parsed := config_of(name))]
    tasks.sort(key=lambda item: (*paper_order(*item[0][:3]), item[0][3] == "neg"))
    return [(name, "exact_acc" if config[3] == "pos" else "existence_acc") for config, name in tasks]


# ---------------------------------------------------------------------------------------------- table


def _value(entry: dict[str, Any] | None, metric: str) -> str:
    if not entry or f"{metric},none" not in entry:
        return ""
    value, stderr = entry[f"{metric},none"], entry.get(f"{metric}_stderr,none")
    if not isinstance(value, float):
        return str(value)
    return f"{100 * value:.1f} ± {100 * stderr:.1f}" if isinstance(stderr, float) else f"{100 * value:.1f}"


def _scored(data: Any, task: str) -> str:
    return str(data.counters(task).get("n_scored", "")) if task in data.results else ""


def table(data: Any) -> list[str]:
    """The paper's layout: per config, positives' existence (with the share of well-formed answers beside
    it), index, exact (and individual accuracies for K > 1) and negatives' existence, in percent ± standard
    error."""
    configs = sorted(
        {parsed[:3] for task in data.results if (parsed := config_of(task))}, key=lambda c: paper_order(*c)
    )
    if not configs:
        return []
    lines = [
        "| config | n pos | existence | format valid | index | exact | indiv. index | indiv. exact | n neg | "
        "existence (neg) | format valid (neg) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for m, n, k in configs:
        pos, neg = f"mmneedle_m{m}_n{n}_k{k}_pos", f"mmneedle_m{m}_n{n}_k{k}_neg"
        cells = [
            f"M={m} N={n} K={k}",
            _scored(data, pos),
            *(
                _value(data.results.get(pos), x)
                for x in (
                    "existence_acc",
                    "format_valid_rate",
                    "index_acc",
                    "exact_acc",
                    "individual_index_acc",
                    "individual_exact_acc",
                )
            ),
            _scored(data, neg),
            _value(data.results.get(neg), "existence_acc"),
            _value(data.results.get(neg), "format_valid_rate"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return [
        "### MMNeedle, as the paper reports it (%, official scorers; positives and negatives separately)",
        "",
        "*format valid*: answers in the requested format. A positive's existence counts every answer "
        'other than "-1", malformed ones included: read it beside its format validity.',
        "",
        *lines,
        "",
    ]


# ------------------------------------------------------------------------------------ beside the paper

# The paper's model -> squashed fragments of the checkpoints and API names it ran as (the most specific first).
PAPER_MODELS = {
    "GPT-4o": ("gpt4o",),
    "GPT-4V": ("gpt4vision", "gpt4turbo", "gpt4v"),
    "Gemini Pro 1.5": ("gemini15",),
    "Gemini Pro 1.0": ("gemini10", "geminiprovision"),
    "Claude 3 Opus": ("claude3opus",),
    "CogVLM2-Llama-3": ("cogvlm2llama3",),
    "CogVLM-17B": ("cogvlmchat", "cogvlm17b"),
    "IDEFICS2-8B": ("idefics28b",),
    "Fuyu-8B": ("fuyu8b",),
    "LLaVA-Llama-3": ("llavallama3", "llama3llavanext"),
    "InstructBLIP-Vicuna-13B": ("instructblipvicuna13b",),
    "InstructBLIP-Flan-T5-XXL": ("instructblipflant5xxl",),
    "mPLUG-Owl-v2": ("mplugowl2", "mplugowlv2"),
}
# The samples behind each published number: "K=1 evaluated on first 1000 pos/neg, K=2/5 on first 100 pos/neg".
PAPER_SAMPLES = {1: 1000, 2: 100, 5: 100}


def paper_model_for(model: str, data: Any) -> str | None:
    """The paper's name of a run's model, from its name or checkpoint (`HuggingFaceM4/idefics2-8b` is IDEFICS2-8B)."""
    squashed = [re.sub(r"[^a-z0-9]", "", name.lower()) for name in run_names(model, data)]
    return next((paper for paper, keys in PAPER_MODELS.items() if any(k in n for k in keys for n in squashed)), None)


def load_paper_results() -> dict[tuple[str, int, int, int, str, str], float | None]:
    """(model, M, N, K, "positive" | "negative", metric) -> the published % (`paper_results.csv`: Tables 2-5 and
    8-16; None where the paper prints "-")."""
    import csv

    with open(Path(__file__).with_name("paper_results.csv"), encoding="utf-8") as handle:
        return {
            (r["model"], int(r["M"]), int(r["N"]), int(r["K"]), r["samples"], r["metric"]): (
                float(r["value"]) if r["value"] else None
            )
            for r in csv.DictReader(handle)
        }


def beside_paper(model: str, data: Any) -> list[str]:
    """Our exact accuracy (positives) and existence accuracy (negatives) beside the paper's for its model, with the
    verdict per cell and the count per table."""
    paper_model = paper_model_for(model, data)
    configs = sorted(
        {parsed[:3] for task in data.results if (parsed := config_of(task))}, key=lambda c: paper_order(*c)
    )
    if paper_model is None or not configs:
        return []
    published = load_paper_results()
    problem = data_problem(data.data())
    lines = [
        f"### MMNeedle beside the paper's {paper_model} (%)",
        "",
        f"Ours, then the paper's (Tables 2-5, 8-12) in parentheses, then the verdict: {explanation()} The paper's "
        "samples: the first 1000 positives or negatives per config for K = 1, 100 for K = 2 and 5.",
        "",
        "| config | exact (positives) | existence (negatives) |",
        "|---|---|---|",
    ]
    verdicts = []
    for m, n, k in configs:
        cells = []
        for kind, metric, paper_metric in (("pos", "exact_acc", "Exact"), ("neg", "existence_acc", "Existence")):
            entry = data.results.get(f"mmneedle_m{m}_n{n}_k{k}_{kind}")
            paper = published.get((paper_model, m, n, k, "positive" if kind == "pos" else "negative", paper_metric))
            if entry is None:
                cells.append("not run")
                continue
            ours, stderr = (_percent(entry.get(f"{metric}{suffix},none")) for suffix in ("", "_stderr"))
            found = compare(ours, stderr, paper, PAPER_SAMPLES.get(k), 100, problem)
            verdicts.append(found)
            cells.append(
                ("N/A" if ours is None else f"{ours:.1f}")
                + " ("
                + ("-" if paper is None else f"{paper:.1f}")
                + f") {found.mark}"
            )
        lines.append(f"| M={m} N={n} K={k} | " + " | ".join(cells) + " |")
    return [*lines, "", tally(verdicts), ""]


def _percent(value: Any) -> float | None:
    return (
        100 * float(value)
        if isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)
        else None
    )


# ------------------------------------------------------------------------------------- cell heat maps


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


def cell_panels(data: Any) -> list[Panel]:
    """A panel for every positive config with N > 1 (N = 1 has a single cell), in the paper's order."""
    panels = []
    for task in data.results:
        config = config_of(task)
        if not config or config[3] != "pos" or config[1] == 1:
            continue
        one = panel(*config[:3], (data.breakdowns.get(task) or {}).get("exact_acc_by_cell") or {})
        one.samples, one.exact = _scored(data, task), data.results[task].get("exact_acc,none")
        panels.append(one)
    return sorted(panels, key=lambda p: paper_order(p.m, p.n, p.k))


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


def depth_series(breakdowns: dict[str, Any]) -> dict[int, dict[tuple[int, int], dict[str, dict[str, float]]]]:
    """K -> (M, N) -> exact accuracy by image index, for the positive configs with M > 1."""
    series: dict[int, dict[tuple[int, int], dict[str, dict[str, float]]]] = {}
    for task, breakdown in breakdowns.items():
        config = config_of(task)
        depths = (breakdown or {}).get("exact_acc_by_depth")
        if config and config[3] == "pos" and config[0] > 1 and depths:
            series.setdefault(config[2], {})[(config[0], config[1])] = depths
    return series


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
                yerr=[by_depth[str(x)]["stderr"] for x in xs],
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


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)


# ------------------------------------------------------------------------------------- the viewer's hooks

# `harness view`: the sample table's axes (build columns), and which results breakdown each axis indexes, so that a
# cell of the heat map opens the samples whose needle lies in it.
SAMPLE_AXES = [
    ("M", "M"),
    ("N", "N"),
    ("K", "K"),
    ("depth", "needle_index"),
    ("row", "needle_row"),
    ("col", "needle_col"),
]
SAMPLE_CELLS = {"exact_acc_by_cell": "cell", "exact_acc_by_depth": "depth"}
_GUESS = re.compile(r"(\d+)\s*,\s*(\d+)\s*,\s*(\d+)")


def _needles(values: Any) -> list[int]:
    return [int(v) for v in (values if isinstance(values, list) else [values]) if isinstance(v, int) and v > 0]


def sample_axes(task: str, columns: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """M, N, K; each needle's depth (image index m), row, column and cell "row,col" (a negative has none)."""
    depth, rows, cols = (columns.get(c, []) for c in ("needle_index", "needle_row", "needle_col"))
    cells = [
        [f"{r},{c}" for r, c in zip(_needles(rs), _needles(cs), strict=False)]
        for rs, cs in zip(rows, cols, strict=True)
    ]
    return {
        "M": columns.get("M", []),
        "N": columns.get("N", []),
        "K": columns.get("K", []),
        "depth": [_needles(d) for d in depth],
        "cell": cells,
        "row": [_needles(r) for r in rows],
        "col": [_needles(c) for c in cols],
    }


def sample_marks(doc: dict[str, Any], response: Any) -> list[dict[str, Any]]:
    """The cells to outline on the stitched images: each needle's (gold) and each "m, r, c" the answer names
    (guess), with the image (0-based), row and column (1-based) and the grid's N."""
    n, m = int(doc.get("N") or 1), int(doc.get("M") or 1)
    marks = [
        {"kind": "gold", "image": i - 1, "row": r, "col": c, "n": n}
        for i, r, c in zip(
            _needles(doc.get("needle_index")),
            _needles(doc.get("needle_row")),
            _needles(doc.get("needle_col")),
            strict=False,
        )
    ]
    for index, row, col in (tuple(int(x) for x in found) for found in _GUESS.findall(str(response or ""))):
        if 1 <= index <= m and 1 <= row <= n and 1 <= col <= n:
            marks.append({"kind": "guess", "image": index - 1, "row": row, "col": col, "n": n})
    return marks
