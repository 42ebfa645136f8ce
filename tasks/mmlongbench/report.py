"""MMLongBench's section of `harness report` (declared by every MMLongBench task: `report: !function report.section`).

For each model: the five categories and their average per length, as the paper's Figures 22-26 lay them
out, with the paper's published number beside ours when the model is one the paper evaluated (matched by
its checkpoint name: `Qwen/Qwen2.5-VL-7B-Instruct` is the paper's `Qwen2.5-VL-7B`); the per-dataset
scores the same way; and a figure of score against length, one panel per category, with the paper's
curve dashed beside ours. `across_models` draws every model of the results folder on one such figure.
Scores are on the paper's 0-100 scale.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.outputs.figure_batch import figure
from harness.outputs.figures import LINE_COLOURS, MARKERS, run_names, slug
from harness.outputs.provenance import data_caption
from harness.outputs.verdict import Verdict, compare, data_problem, explanation, tally
from tasks.mmlongbench.aggregation import AVERAGE, CATEGORIES, load_paper_results, paper_models
from tasks.mmlongbench.view_hooks import (  # noqa: F401 (`harness view` reads a benchmark's hooks in its report module)
    AXIS_ORDER,
    GROUP_GRID,
    SAMPLE_AXES,
    SAMPLE_SIBLINGS,
    sample_marks,
    task_axes,
    viewer_row,
)

SCALE = 100  # scores on the paper's 0-100 scale, as `harness report` shows every score

LENGTHS = {"8k": 8192, "16k": 16384, "32k": 32768, "64k": 65536, "128k": 131072}
ROWS = [*CATEGORIES, AVERAGE]
# The paper's table order: VRAG, NIAH (MM-NIAH text before image), ICL, Summ, DocVQA.
DATASET_ORDER = [
    d for item in CATEGORIES.values() for member in item for d in (member if isinstance(member, tuple) else (member,))
]


def _squash(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def paper_model_for(*names: str, models: Iterable[str] | None = None) -> str | None:
    """The paper's name of a model given its run name(s) (alias, checkpoint path or id), or None.

    A checkpoint matches a paper model (one of `models`, default the 46 of Figures 22-26) when, ignoring case
    and punctuation, its last path part starts with the paper's name; the longest such name wins
    (`Qwen2-VL-72B-Instruct` is `Qwen2-VL-72B`, not `-7B`).
    """
    candidates = [_squash(Path(n.rstrip("/")).name) for n in names if n]
    best: str | None = None
    for paper in paper_models(load_paper_results()) if models is None else models:
        key = _squash(paper)
        if any(c.startswith(key) for c in candidates) and (best is None or len(key) > len(_squash(best))):
            best = paper
    return best


def _number(entry: dict[str, Any] | None, metric: str = "score") -> float | None:
    value = (entry or {}).get(f"{metric},none")
    return float(value) if isinstance(value, int | float) and not math.isnan(value) else None


def category_scores(data: Any) -> dict[tuple[str, str], float | None]:
    """(category or Avg, length) -> our score where the run has that group (None: N/A)."""
    out: dict[tuple[str, str], float | None] = {}
    for length in LENGTHS:
        for category in CATEGORIES:
            name = f"mmlongbench_{category.lower()}_{length}"
            if name in data.groups:
                out[(category, length)] = _number(data.groups[name])
        if f"mmlongbench_{length}" in data.groups:
            out[(AVERAGE, length)] = _number(data.groups[f"mmlongbench_{length}"])
    return out


def dataset_scores(data: Any) -> dict[tuple[str, str], tuple[float | None, str]]:
    """(dataset, length) -> (our paper-metric value, the metric) for every MMLongBench leaf task run."""
    out: dict[tuple[str, str], tuple[float | None, str]] = {}
    for task, entry in data.results.items():
        match = re.fullmatch(r"mmlongbench_[a-z]+_(\w+)_(\d+k)", task)
        if not match:
            continue
        metric = "score" if "score,none" in entry else "rougeLsum_f1"
        out[(match.group(1), match.group(2))] = (_number(entry, metric), metric)
    return out


# The paper's samples per dataset at each length (App. D: 100 sampled per dataset, times its depths or
# permutations; 50 per MM-NIAH (T) and (I) file): 4,050 per length. A category's: the sum over its datasets.
PAPER_SAMPLES = {
    "infoseek": 300,
    "viquae": 600,
    "vh_single": 600,
    "vh_multi": 300,
    "mmniah_ret_text": 300,
    "mmniah_ret_image": 300,
    "mmniah_count_text": 150,
    "mmniah_count_image": 150,
    "mmniah_reason_text": 150,
    "mmniah_reason_image": 300,
    "stanford_cars": 100,
    "food101": 100,
    "sun397": 100,
    "inat2021": 100,
    "govreport": 100,
    "multilexsum": 100,
    "mmlongbench_doc": 100,
    "longdocurl": 100,
    "slidevqa": 100,
}
NO_SUMM = "Avg. (no Summ)"  # the mean of the four categories a run without the judge has: not the paper's Avg


def _members(category: str) -> list[str]:
    return [d for member in CATEGORIES[category] for d in (member if isinstance(member, tuple) else (member,))]


def paper_samples(row: str) -> int | None:
    """The paper's samples behind a dataset's, a category's or Avg's number at one length."""
    if row in PAPER_SAMPLES:
        return PAPER_SAMPLES[row]
    if row in CATEGORIES:
        return sum(PAPER_SAMPLES[d] for d in _members(row))
    if row in (AVERAGE, NO_SUMM):
        return sum(paper_samples(c) or 0 for c in CATEGORIES if row == AVERAGE or c != "Summ")
    return None


def _cell(ours: float | None, paper: float | None, has_paper: bool, verdict: Verdict | None = None) -> str:
    text = "N/A" if ours is None else f"{ours:.1f}"
    if has_paper:
        text += " (" + ("N/A" if paper is None else f"{paper:.1f}") + ")"
        if verdict is not None:
            text += f" {verdict.mark}"
    return text


def _stderr(entry: dict[str, Any] | None, metric: str = "score") -> float | None:
    return _number(entry, f"{metric}_stderr")


def category_stderrs(data: Any) -> dict[tuple[str, str], float | None]:
    """(category or Avg, length) -> the standard error of our score, as the group recorded it."""
    out: dict[tuple[str, str], float | None] = {}
    for length in LENGTHS:
        for category in CATEGORIES:
            out[(category, length)] = _stderr(data.groups.get(f"mmlongbench_{category.lower()}_{length}"))
        out[(AVERAGE, length)] = _stderr(data.groups.get(f"mmlongbench_{length}"))
    return out


def no_summ_average(values: dict[tuple[str, str], float | None], length: str) -> float | None:
    """The mean of VRAG, NIAH, ICL and DocVQA at one length, where all four have a value."""
    found = [values.get((c, length)) for c in CATEGORIES if c != "Summ"]
    known = [v for v in found if v is not None]
    return None if len(known) < len(found) else sum(known) / len(known)


def section(model: str, data: Any, out_dir: Path) -> list[str]:
    """Markdown lines for one model's MMLongBench tasks; the figure goes to `out_dir`."""
    paper_model = paper_model_for(*run_names(model, data))
    published = load_paper_results() if paper_model else {}
    paper_key = paper_model or ""  # without a paper model nothing is published to look up
    ours = category_scores(data)
    errors = category_stderrs(data)
    per_dataset = dataset_scores(data)
    lengths = [length for length in LENGTHS if any(key[1] == length for key in [*ours, *per_dataset])]
    problem = data_problem(data.data())
    lines = ["### MMLongBench", ""]
    if paper_model:
        lines += [
            f"Beside each score, in parentheses: the paper's for **{paper_model}** (Figures 22-26), then the "
            f"verdict: {explanation()} The paper's samples: {PAPER_SAMPLES['viquae']} to "
            f"{PAPER_SAMPLES['stanford_cars']} per dataset and length (a category: its datasets' together).",
            "",
        ]
    else:
        lines += ["The paper did not evaluate this model (no published numbers to put beside these).", ""]
    # Without the judge Summ is N/A, so Avg is too: the mean of the other four is shown under its own name.
    no_summ = {
        length: no_summ_average(ours, length)
        for length in lengths
        if (AVERAGE, length) in ours and ours[(AVERAGE, length)] is None
    }
    no_summ = {length: value for length, value in no_summ.items() if value is not None}
    if ours:
        verdicts = []
        lines += ["| category | " + " | ".join(lengths) + " |", "|---|" + "---|" * len(lengths)]
        for row in ROWS:
            cells = []
            for length in lengths:
                if (row, length) not in ours:
                    cells.append("not run")
                    continue
                paper = published.get((paper_key, row, LENGTHS[length]))
                verdict = (
                    compare(ours[(row, length)], errors.get((row, length)), paper, paper_samples(row), 100, problem)
                    if paper_model
                    else None
                )
                verdicts += [verdict] if verdict else []
                cells.append(_cell(ours[(row, length)], paper, bool(paper_model), verdict))
            lines.append(f"| {row} | " + " | ".join(cells) + " |")
        if no_summ:
            cells = []
            for length in lengths:
                if length not in no_summ:
                    cells.append("")
                    continue
                paper = no_summ_average(
                    {(c, length): published.get((paper_key, c, LENGTHS[length])) for c in CATEGORIES}, length
                )
                se = [errors.get((c, length)) for c in CATEGORIES if c != "Summ"]
                known = [e for e in se if e is not None]
                stderr = None if len(known) < len(se) else math.sqrt(sum(e * e for e in known)) / len(known)
                verdict = (
                    compare(no_summ[length], stderr, paper, paper_samples(NO_SUMM), 100, problem)
                    if paper_model
                    else None
                )
                verdicts += [verdict] if verdict else []
                cells.append(_cell(no_summ[length], paper, bool(paper_model), verdict))
            lines.append(f"| {NO_SUMM} | " + " | ".join(cells) + " |")
        lines += [
            "",
            "N/A: a member of the group is missing or N/A (Summ needs the judge's Fluency-F1: run with "
            "`--judge_model`)."
            + (
                f" *{NO_SUMM}*: the mean of VRAG, NIAH, ICL and DocVQA, as a run without the "
                "judge has them; not the paper's Avg, which includes Summ"
                + (" (beside it, the paper's same four categories averaged)" if paper_model else "")
                + "."
                if no_summ
                else ""
            ),
            "",
        ]
        if paper_model:
            lines += [tally(verdicts), ""]
    if per_dataset:
        verdicts = []
        lines += ["| dataset | metric | " + " | ".join(lengths) + " |", "|---|---|" + "---|" * len(lengths)]
        for dataset in [d for d in DATASET_ORDER if any(key[0] == d for key in per_dataset)]:
            metric = next(per_dataset[(dataset, length)][1] for length in lengths if (dataset, length) in per_dataset)
            cells = []
            for length in lengths:
                if (dataset, length) not in per_dataset:
                    cells.append("")
                    continue
                value = per_dataset[(dataset, length)][0]
                paper = published.get((paper_key, dataset, LENGTHS[length])) if metric == "score" else None
                verdict = None
                if paper_model and metric == "score":
                    entry = data.results.get(f"mmlongbench_{_category_of(dataset)}_{dataset}_{length}")
                    verdict = compare(value, _stderr(entry), paper, PAPER_SAMPLES.get(dataset), 100, problem)
                    verdicts.append(verdict)
                cells.append(_cell(value, paper, bool(paper_model) and metric == "score", verdict))
            lines.append(f"| {dataset} | {metric} | " + " | ".join(cells) + " |")
        lines.append("")
        if paper_model:
            lines += [tally(verdicts), ""]
    if ours:
        name = f"mmlongbench_length_{slug(model)}.png"
        series = {model: ours}
        paper_series = (
            {
                paper_model: {
                    (row, length): published.get((paper_key, row, LENGTHS[length]))
                    for row in ROWS
                    for length in LENGTHS
                }
            }
            if paper_model
            else {}
        )
        if figure(out_dir / name, length_figure, series, paper_series, data.provenance_line()):
            lines += [f"![MMLongBench score against length, {model}]({name})", ""]
    return lines


def _category_of(dataset: str) -> str:
    return next((c.lower() for c in CATEGORIES if dataset in _members(c)), "")


def across_models(models: dict[str, Any], out_dir: Path) -> list[str]:
    """Every model of the results folder on one score-against-length figure (with the paper's curves of the
    models it evaluated)."""
    series = {model: category_scores(data) for model, data in sorted(models.items())}
    series = {m: s for m, s in series.items() if any(v is not None for v in s.values())}
    if len(series) < 2:
        return []
    published = load_paper_results()
    paper = {}
    for model, data in sorted(models.items()):
        name = paper_model_for(*run_names(model, data))
        if name:
            paper[name] = {
                (row, length): published.get((name, row, LENGTHS[length])) for row in ROWS for length in LENGTHS
            }
    caption = "Every model of this results folder. " + data_caption([models[m] for m in series])
    if not figure(out_dir / "mmlongbench_length_all.png", length_figure, series, paper, caption):
        return []
    return [
        "## MMLongBench across models",
        "",
        "![MMLongBench score against length, every model](mmlongbench_length_all.png)",
        "",
    ]


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
) -> Any:
    """One panel per category (and Avg): score against length, ours solid, the paper's dashed."""
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
    fig.suptitle("\n".join(textwrap.wrap(caption, 150)), fontsize=8)
    fig.tight_layout(rect=(0, 0.07, 1, 0.94))
    return fig
