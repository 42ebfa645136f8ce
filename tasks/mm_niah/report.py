"""MM-NIAH's section of `harness report` (`benchmark.py` declares it; every MM-NIAH task names that declaration).

As the paper reports it: per task, the official score (the mean over the eleven length bins of calculate_scores.py's
per-bin scores) with the per-bin scores (paper Tables 3-8 and, over the six tasks, Table 2), then one heat map per
task of accuracy by context length and needle depth (paper Fig. 4). Beside the paper's model, its published numbers
with a verdict per cell: the paper's are on the test split (private answers), ours on the validation split, so
they compare as fresh samples drawn the same way, never as the same items. Where the same model ran MMLongBench's
MM-NIAH leaves, their scores per length beside these (`beside_mmlongbench.py`).
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path
from typing import Any

from harness.outputs.report.figure_batch import figure
from harness.outputs.report.figures import run_names
from harness.outputs.report.verdict import Comparison, Paper, VerdictRule, compare, explanation, mode_of
from harness.outputs.report.verdict_family import Family
from harness.outputs.results.estimates import estimate_of, interval_text
from harness.outputs.results.model_results import ModelResults
from harness.outputs.results.provenance import DataOrigin
from tasks.mm_niah.beside_mmlongbench import beside_lines
from tasks.mm_niah.paper_models import PAPER_MODELS as PAPER
from tasks.mm_niah.scoring import DEPTH_LABELS, LENGTH_LABELS

TASKS = ("retrieval_text", "counting_text", "reasoning_text", "retrieval_image", "counting_image", "reasoning_image")
DPI = 150


def _never_the_same_items(origin: DataOrigin) -> str | None:
    return None  # the paper's tables are on the test split, whose answers the release does not hold


VERDICTS = VerdictRule(
    tolerance=5.0,
    why_tolerance="5 points on the paper's 0-100 tables",
    same_items=_never_the_same_items,
    fresh="the validation split: other records built the same way as the test split the paper's tables report",
)


def headline_metrics(names: list[str]) -> list[tuple[str, str]]:
    """The cross-model table's rows: each task's official score, then the split groups' overall."""
    order = {f"mm_niah_{t}_{s}": (j, i) for j, s in enumerate(("val", "test")) for i, t in enumerate(TASKS)}
    tasks = sorted((n for n in names if n in order), key=order.__getitem__)
    groups = [g for g in ("mm_niah_val", "mm_niah_test") if g in names]
    return [(name, "score") for name in tasks + groups]


def length_scores(data: ModelResults, task: str) -> list[float] | None:
    """The official per-length-bin scores from the heat map's cells: per bin, the mean over the five depth bins,
    an empty cell counting 0 (calculate_scores.py); None without the breakdown."""
    cells = (data.breakdowns.get(task) or {}).get("acc_by_length_depth")
    if not cells:
        return None
    return [sum(_mean(cells, f"{length}|{depth}") or 0.0 for depth in DEPTH_LABELS) / 5 for length in LENGTH_LABELS]


def filled_cells(data: ModelResults, task: str) -> str:
    """How many of the heat map's cells (lengths x depths) the rows fill, `k/55`: the score counts an empty cell 0, so
    a partial grid's score is low by the cells it leaves empty (issue 88); empty without the breakdown."""
    cells = (data.breakdowns.get(task) or {}).get("acc_by_length_depth")
    if not cells:
        return ""
    grid = [f"{length}|{depth}" for length in LENGTH_LABELS for depth in DEPTH_LABELS]
    return f"{sum(_mean(cells, key) is not None for key in grid)}/{len(grid)}"


def _mean(cells: dict[str, Any], key: str) -> float | None:
    cell = cells.get(key)
    value = cell.get("mean") if isinstance(cell, dict) else None
    return float(value) if isinstance(value, int | float) and not math.isnan(value) else None


def table(data: ModelResults) -> list[str]:
    tasks = [name for name, _ in headline_metrics(list(data.results)) if name not in ("mm_niah_val", "mm_niah_test")]
    if not tasks:
        return []
    lines = [
        "### MM-NIAH, as the paper reports it (%, official scorer)",
        "",
        "*score*: the paper's number, the mean over the length bins of each bin's mean over five depth bins (an empty "
        "cell counts 0; records under 1K left out), with its 95 % interval for the score of the cells the rows fill "
        "(docs/statistics.md); *acc*: the mean of the per-row decisions (soft accuracy for "
        "counting), with its 95 % interval; *cells*: the heat map's cells the rows fill (the score counts the others "
        "0). The test split's answers are private: its tasks are N/A here.",
        "",
        "| task | n | cells | score | acc | " + " | ".join(LENGTH_LABELS) + " |",
        "|---|---|---|---|---|" + "---|" * len(LENGTH_LABELS),
    ]
    for task in tasks:
        entry = data.results.get(task, {})
        score = entry.get("score,none")
        per_length = length_scores(data, task)
        cells = [
            task.removeprefix("mm_niah_"),
            str(data.counters(task).get("n_scored", "")),
            filled_cells(data, task),
            interval_text(estimate_of(data, task, "score", 1), 100)
            if isinstance(score, float) and not math.isnan(score)
            else "N/A",
            interval_text(estimate_of(data, task, "acc", 1), 100) if isinstance(entry.get("acc,none"), float) else "",
            *([f"{100 * v:.1f}" for v in per_length] if per_length else [""] * len(LENGTH_LABELS)),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return [*lines, "", *empty_cells_lines(data, tasks)]


def empty_cells_lines(data: ModelResults, tasks: list[str]) -> list[str]:
    """Where the rows leave heat-map cells empty, a line per task saying how many and the most its score can then be:
    the official score counts an empty cell 0, so k filled cells of 55 cap it at k/55 whatever the replies (issue 98).
    Nothing where every cell is filled."""
    lines = []
    for task in tasks:
        filled, _, total = filled_cells(data, task).partition("/")
        if filled.isdigit() and total.isdigit() and int(filled) < int(total):
            k, grid = int(filled), int(total)
            lines.append(
                f"- {task.removeprefix('mm_niah_')}: {grid - k} of the heat map's {grid} cells are empty and count 0, "
                f"so its score is at most {100 * k / grid:.1f}"
            )
    if not lines:
        return []
    why = (
        "**Empty cells count 0 in the official score**: a run whose rows leave cells empty scores at most its filled "
        "cells' share, however well it answers, so it sits below a full grid's score (the paper's); its interval is for "
        "the score of the cells it fills, not a full grid's (docs/statistics.md)."
    )
    return [why, "", *lines, ""]


def load_paper_results() -> dict[tuple[str, str, str], float | None]:
    """(model, task or `all`, length bin or `overall`) -> the published % (`paper_results.csv`, Tables 2-8)."""
    with open(Path(__file__).with_name("paper_results.csv"), encoding="utf-8") as handle:
        return {
            (r["model"], r["task"], r["length"]): (float(r["value"]) if r["value"] else None)
            for r in csv.DictReader(handle)
        }


def paper_model_for(model: str, data: ModelResults) -> str | None:
    squashed = [re.sub(r"[^a-z0-9]", "", name.lower()) for name in run_names(model, data)]
    return next((m.name for m in PAPER.models if any(k in n for k in m.known_as for n in squashed)), None)


def empty_cells_gap(cells: str, paper: float | None) -> str:
    """Why a task gets no verdict beside the paper, or "": its empty cells count 0 where the paper's grid is full, so
    they alone would put its score about empty/55 of the paper's below it; past the verdicts' tolerance that gap is
    the empty cells', not the replies' (a 6-row run: 50 of 55 empty). A cell or two empty of a full split is kept."""
    filled, _, grid = cells.partition("/")
    if not (filled.isdigit() and grid.isdigit()) or paper is None:
        return ""
    empty = int(grid) - int(filled)
    if empty * paper / int(grid) <= VERDICTS.tolerance:
        return ""
    return f"{empty} of {grid} heat-map cells empty, counted 0 (the paper's grid is full)"


def beside_paper(model: str, data: ModelResults) -> list[str]:
    """Our validation score per task (and overall) beside the paper's for its model, a verdict per cell."""
    paper_model = paper_model_for(model, data)
    tasks = [t for t in TASKS if f"mm_niah_{t}_val" in data.results]
    if paper_model is None or not tasks:
        return []
    published = load_paper_results()
    mode = mode_of(VERDICTS, data.data())
    family = Family(mode)
    rows = []
    for task in tasks:
        ours = estimate_of(data, f"mm_niah_{task}_val", "score", 1).rescaled(100)
        paper = Paper(published.get((paper_model, task, "overall")))
        why = empty_cells_gap(filled_cells(data, f"mm_niah_{task}_val"), paper.value)
        rows.append(
            (task, family.add(Comparison(ours.value, paper.value, why=why) if why else compare(ours, paper, mode)))
        )
    return [
        f"### MM-NIAH beside the paper's {paper_model} (%)",
        "",
        f"The paper's numbers: Tables 3-8 (test split); ours: the validation split. {explanation(mode)}",
        "",
        "| task | score (val) vs paper (test) |",
        "|---|---|",
        *(f"| {task} | {cell} |" for task, cell in rows),
        "",
        *family.tally(),
    ]


def heat_map_figure(model: str, panels: list[tuple[str, list[list[float]]]], caption: str) -> Any:
    """One heat map per task: depth bins down (0 at the top, as the paper), length bins across, accuracy 0-1."""
    import matplotlib.pyplot as plt

    columns = min(3, len(panels))
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.2 * rows), squeeze=False)
    for ax in axes.flat[len(panels) :]:
        ax.axis("off")
    for ax, (title, grid) in zip(axes.flat, panels, strict=False):
        image = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        ax.set_title(title, fontsize=9)
        ax.set_xticks(range(len(LENGTH_LABELS)), LENGTH_LABELS, rotation=45, fontsize=7)
        ax.set_yticks(range(len(DEPTH_LABELS)), DEPTH_LABELS, fontsize=7)
    fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.8, label="accuracy")
    fig.suptitle(f"MM-NIAH, {model}: accuracy by context length and needle depth (empty cells blank)", fontsize=10)
    fig.text(0.01, 0.01, caption, fontsize=6)
    return fig


def heat_panels(data: ModelResults) -> list[tuple[str, list[list[float]]]]:
    panels = []
    for task in TASKS:
        for split in ("val", "test"):
            cells = (data.breakdowns.get(f"mm_niah_{task}_{split}") or {}).get("acc_by_length_depth")
            if cells:
                grid = [[_mean(cells, f"{x}|{y}") for x in LENGTH_LABELS] for y in DEPTH_LABELS]
                panels.append((f"{task} ({split})", [[math.nan if v is None else v for v in row] for row in grid]))
    return panels


def section(model: str, data: ModelResults, out_dir: Path) -> list[str]:
    lines = table(data) + beside_paper(model, data) + beside_lines(data, length_scores)
    panels = heat_panels(data)
    name = "mm_niah_heat_" + re.sub(r"[^A-Za-z0-9_.-]+", "_", model) + ".png"
    caption = data.provenance_line()
    if panels and figure(out_dir / name, heat_map_figure, model, panels, caption, dpi=DPI):
        lines += [
            "### MM-NIAH heat maps",
            "",
            f"*{caption}*",
            "",
            f"![accuracy by context length and depth]({name})",
            "",
        ]
    return lines
