"""MMLongBench's section of `harness report` (`benchmark.BENCHMARK` declares it; every task of the paper names that
declaration).

For each model: the five categories and their average per length, as the paper's Figures 22-26 lay them
out, with the paper's published number beside ours when the model is one the paper evaluated (matched by
its checkpoint name: `Qwen/Qwen2.5-VL-7B-Instruct` is the paper's `Qwen2.5-VL-7B`); the per-dataset
scores the same way; and a figure of score against length, one panel per category, with the paper's
curve dashed beside ours (`length_figure`). `across_models` draws every model of the results folder on one such
figure. Scores are on the paper's 0-100 scale; the numbers are `tasks.mmlongbench.scores`'.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from harness.outputs.figure_batch import figure
from harness.outputs.figures import run_names, slug
from harness.outputs.model_results import ModelResults
from harness.outputs.provenance import data_caption
from harness.outputs.verdict import Verdict, compare, data_problem, explanation, tally
from tasks.mmlongbench.aggregation import AVERAGE, CATEGORIES, load_paper_results
from tasks.mmlongbench.length_figure import length_figure
from tasks.mmlongbench.scores import (  # noqa: F401 (the report's numbers, read by name from here too)
    DATASET_ORDER,
    LENGTHS,
    NO_SUMM,
    PAPER_SAMPLES,
    ROWS,
    category_of,
    category_scores,
    category_stderrs,
    dataset_scores,
    metric_stderr,
    metric_value,
    no_summ_average,
    paper_model_for,
    paper_samples,
)
from tasks.mmlongbench.version_report import past_128k

Key = tuple[str, str]  # (category, Avg or dataset; length)


@dataclass
class Beside:
    """The paper's numbers a model's are set beside: none when the paper did not evaluate the model. Each
    comparison's verdict is kept for the table's tally."""

    paper_model: str | None
    problem: str | None  # why the data does not compare with the paper's, if it does not
    published: dict[tuple[str, str, int], float | None] = field(default_factory=dict)
    verdicts: list[Verdict] = field(default_factory=list)

    def paper(self, row: str, length: str) -> float | None:
        return self.published.get((self.paper_model or "", row, LENGTHS[length]))

    def cell(self, ours: float | None, paper: float | None, stderr: float | None, samples: int | None) -> str:
        """Our value, and beside it the paper's and the verdict on the two."""
        text = "N/A" if ours is None else f"{ours:.1f}"
        if self.paper_model is None:
            return text
        verdict = compare(ours, stderr, paper, samples, 100, self.problem)
        self.verdicts.append(verdict)
        return text + " (" + ("N/A" if paper is None else f"{paper:.1f}") + f") {verdict.mark}"

    def tally(self) -> list[str]:
        """The verdicts of the table just made, counted (nothing without a paper model); the next table starts afresh."""
        verdicts, self.verdicts = self.verdicts, []
        return [tally(verdicts), ""] if self.paper_model else []


def _cell(ours: float | None, paper: float | None, has_paper: bool, verdict: Verdict | None = None) -> str:
    """Our value, and beside it the paper's and the verdict (`ablation_report`'s tables)."""
    text = "N/A" if ours is None else f"{ours:.1f}"
    if has_paper:
        text += " (" + ("N/A" if paper is None else f"{paper:.1f}") + ")"
        if verdict is not None:
            text += f" {verdict.mark}"
    return text


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header), *("| " + " | ".join(r) + " |" for r in rows)]


def _intro(beside: Beside) -> list[str]:
    if beside.paper_model is None:
        return ["The paper did not evaluate this model (no published numbers to put beside these).", ""]
    return [
        f"Beside each score, in parentheses: the paper's for **{beside.paper_model}** (Figures 22-26), then the "
        f"verdict: {explanation()} The paper's samples: {PAPER_SAMPLES['viquae']} to "
        f"{PAPER_SAMPLES['stanford_cars']} per dataset and length (a category: its datasets' together).",
        "",
    ]


def _no_summ_row(ours: dict[Key, float | None], errors: dict[Key, float | None], lengths: list[str], beside: Beside):
    """Without the judge Summ is N/A, so Avg is too: the mean of the other four, under its own name (None: no length
    lacks Avg for want of Summ alone)."""
    no_summ = {
        length: value
        for length in lengths
        if (AVERAGE, length) in ours
        and ours[(AVERAGE, length)] is None
        and (value := no_summ_average(ours, length)) is not None
    }
    if not no_summ:
        return None
    cells = []
    for length in lengths:
        if length not in no_summ:
            cells.append("")
            continue
        paper = no_summ_average({(c, length): beside.paper(c, length) for c in CATEGORIES}, length)
        se = [errors.get((c, length)) for c in CATEGORIES if c != "Summ"]
        known = [e for e in se if e is not None]
        stderr = None if len(known) < len(se) else math.sqrt(sum(e * e for e in known)) / len(known)
        cells.append(beside.cell(no_summ[length], paper, stderr, paper_samples(NO_SUMM)))
    return [NO_SUMM, *cells]


def _category_table(data: ModelResults, lengths: list[str], beside: Beside) -> list[str]:
    """Each category and Avg per length (the paper's Figures 22-26)."""
    ours, errors = category_scores(data), category_stderrs(data)
    rows = [
        [
            row,
            *(
                beside.cell(ours[(row, n)], beside.paper(row, n), errors.get((row, n)), paper_samples(row))
                if (row, n) in ours
                else "not run"
                for n in lengths
            ),
        ]
        for row in ROWS
    ]
    no_summ = _no_summ_row(ours, errors, lengths, beside)
    note = (
        f" *{NO_SUMM}*: the mean of VRAG, NIAH, ICL and DocVQA, as a run without the judge has them; not the "
        "paper's Avg, which includes Summ"
        + (" (beside it, the paper's same four categories averaged)" if beside.paper_model else "")
        + "."
        if no_summ
        else ""
    )
    return [
        *_table(["category", *lengths], [*rows, *([no_summ] if no_summ else [])]),
        "",
        "N/A: a member of the group is missing or N/A (Summ needs the judge's Fluency-F1: run with "
        "`--judge_model`)." + note,
        "",
        *beside.tally(),
    ]


def _dataset_row(data: ModelResults, dataset: str, lengths: list[str], beside: Beside) -> list[str]:
    scores = dataset_scores(data)
    metric = next(scores[(dataset, n)][1] for n in lengths if (dataset, n) in scores)
    cells = []
    for length in lengths:
        if (dataset, length) not in scores:
            cells.append("")
        elif metric != "score":  # the paper publishes scores only
            cells.append(_cell(scores[(dataset, length)][0], None, False))
        else:
            entry = data.results.get(f"mmlongbench_{category_of(dataset)}_{dataset}_{length}")
            paper, samples = beside.paper(dataset, length), PAPER_SAMPLES.get(dataset)
            cells.append(beside.cell(scores[(dataset, length)][0], paper, metric_stderr(entry), samples))
    return [dataset, metric, *cells]


def _dataset_table(data: ModelResults, lengths: list[str], beside: Beside) -> list[str]:
    """Each dataset's paper metric per length."""
    scores = dataset_scores(data)
    datasets = [d for d in DATASET_ORDER if any(key[0] == d for key in scores)]
    rows = [_dataset_row(data, dataset, lengths, beside) for dataset in datasets]
    return [*_table(["dataset", "metric", *lengths], rows), "", *beside.tally()]


def _figure_lines(model: str, data: ModelResults, out_dir: Path, beside: Beside) -> list[str]:
    """Score against length, ours beside the paper's curve."""
    name = f"mmlongbench_length_{slug(model)}.png"
    paper = beside.paper_model
    paper_series = {paper: {(row, n): beside.paper(row, n) for row in ROWS for n in LENGTHS}} if paper else {}
    if figure(out_dir / name, length_figure, {model: category_scores(data)}, paper_series, data.provenance_line()):
        return [f"![MMLongBench score against length, {model}]({name})", ""]
    return []


def section(model: str, data: ModelResults, out_dir: Path) -> list[str]:
    """Markdown lines for one model's MMLongBench tasks; the figure goes to `out_dir`."""
    ours, per_dataset = category_scores(data), dataset_scores(data)
    others = past_128k(data)  # ours past 128K: no reference (the other versions declare their own sections)
    if not ours and not per_dataset and others:
        return others
    paper_model = paper_model_for(*run_names(model, data))
    beside = Beside(paper_model, data_problem(data.data()), load_paper_results() if paper_model else {})
    lengths = [length for length in LENGTHS if any(key[1] == length for key in [*ours, *per_dataset])]
    lines = ["### MMLongBench", "", *_intro(beside)]
    if ours:
        lines += _category_table(data, lengths, beside)
    if per_dataset:
        lines += _dataset_table(data, lengths, beside)
    if ours:
        lines += _figure_lines(model, data, out_dir, beside)
    return lines + others


def across_models(models: Mapping[str, ModelResults], out_dir: Path) -> list[str]:
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
