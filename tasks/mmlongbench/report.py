"""MMLongBench's section of `harness report` (`benchmark.BENCHMARK` declares it; every task of the paper names that
declaration).

For each model: the five categories and their average per length, as the paper's Figures 22-26 lay them
out, with the paper's published number beside ours when the model is one the paper evaluated (matched by
its checkpoint name: `Qwen/Qwen2.5-VL-7B-Instruct` is the paper's `Qwen2.5-VL-7B`); where the paper averaged the
model otherwise than the strict `score` (its API models: eval_api.py left empty answers out, `PaperModel.paper_score`),
ours is that average, the one compared, and the strict score is shown beside it after `·`; the per-dataset
scores the same way; and a figure of score against length, one panel per category, with the paper's
curve dashed beside ours (`length_figure`). `across_models` draws every model of the results folder on one such
figure. Scores are on the paper's 0-100 scale; the numbers are `tasks.mmlongbench.scores`'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.outputs.report.figure_batch import figure
from harness.outputs.report.figures import run_names, slug
from harness.outputs.report.verdict import Comparison, Mode, Paper, VerdictRule, compare, explanation, mode_of
from harness.outputs.report.verdict_family import Family
from harness.outputs.results.estimates import Estimate, estimate_of, interval_text, mean_of
from harness.outputs.results.model_results import ModelResults
from harness.outputs.results.provenance import DataOrigin, data_caption
from tasks.mmlongbench.aggregation import AVERAGE, CATEGORIES, load_paper_results
from tasks.mmlongbench.length_figure import length_figure
from tasks.mmlongbench.length_trend import trend_section
from tasks.mmlongbench.paper_models import PAPER_MODELS
from tasks.mmlongbench.scores import (  # noqa: F401 (the report's numbers, read by name from here too)
    DATASET_ORDER,
    LENGTHS,
    NO_SUMM,
    PAPER_SAMPLES,
    ROWS,
    category_estimates,
    category_of,
    category_scores,
    dataset_scores,
    dataset_task,
    has_metric,
    left_out_rows,
    metric_value,
    no_summ_average,
    paper_ids,
    paper_model_for,
    paper_samples,
    paper_score,
)
from tasks.mmlongbench.version_report import past_128k

Key = tuple[str, str]  # (category, Avg or dataset; length)


def _official_sample(origin: DataOrigin) -> str | None:
    if origin.rows == "paper" and origin.source_kind != "fixture":
        return "the release's official sample, the rows the paper ran (`rows: paper`)"
    return None


VERDICTS = VerdictRule(
    tolerance=5.0,
    why_tolerance="5 points on the paper's 0-100 scale",
    same_items=_official_sample,
    fresh="rows other than the release's official sample",
)


@dataclass
class Beside:
    """The paper's numbers a model's are set beside: none when the paper did not evaluate the model. Each table's
    cells are judged together (`Family`), and counted under it."""

    paper_model: str | None
    mode: Mode
    published: dict[tuple[str, str, int], float | None] = field(default_factory=dict)
    metric: str = "score"  # ours, as the paper averaged the model (`paper_score`); else the strict `score`
    family: Family = field(init=False)

    def __post_init__(self) -> None:
        self.family = Family(self.mode)

    def paper(self, row: str, length: str) -> float | None:
        return self.published.get((self.paper_model or "", row, LENGTHS[length]))

    def not_run(self, row: str, length: str) -> str | None:
        """Why the paper's official run left out a task of the row (a dataset, a category or an average) at `length`
        for this model (`PaperModel.not_run`), or None."""
        run = next((m for m in PAPER_MODELS.models if m.name == self.paper_model), None)
        if run is None:
            return None
        if row in DATASET_ORDER:
            datasets = [row]
        elif row in (AVERAGE, NO_SUMM):
            datasets = [d for d in DATASET_ORDER if row == AVERAGE or category_of(d) != "summ"]
        else:
            datasets = [d for d in DATASET_ORDER if category_of(d) == row.lower()]
        return next(filter(None, (run.not_run_why(dataset_task(d, length)) for d in datasets)), None)

    def cell(self, ours: Estimate, paper: float | None, row: str, length: str) -> object:
        """Ours with its interval; beside the paper's: ours (the paper's), the difference and the verdict; where the
        official run never ran the row for this model, ours beside N/A and why, never a verdict."""
        if self.paper_model is None:
            return interval_text(ours)
        left_out = self.not_run(row, length) if paper is None else None
        if left_out is not None:
            return self.family.add(Comparison(ours.value, None, why=f"the paper did not run it ({left_out})"))
        return self.family.add(compare(ours, Paper(paper, paper_samples(row), paper_ids(row)), self.mode))

    @property
    def shows_strict(self) -> bool:
        """Whether the strict score goes beside ours (ours is then the paper's own average, not it)."""
        return self.metric != "score"

    def with_strict(self, cell: object, strict: Estimate | None) -> object:
        """The cell, and after `·` the strict score where ours is another (`shows_strict`)."""
        if not self.shows_strict:
            return cell
        return WithStrict(cell, None if strict is None else strict.value)

    def tally(self) -> list[str]:
        """The verdicts of the table just made, counted (nothing without a paper model); the next table starts afresh."""
        family, self.family = self.family, Family(self.mode)
        return family.tally() if self.paper_model else []


@dataclass(frozen=True)
class WithStrict:
    """A cell with the strict score after it: `51.2 (50.3) +0.9 [-2.1, +3.9] ✓ · strict 47.0`."""

    cell: object
    strict: float | None

    def __str__(self) -> str:
        return f"{self.cell} · strict " + ("N/A" if self.strict is None else f"{self.strict:.1f}")


def _cell(ours: float | None, paper: float | None, has_paper: bool) -> str:
    """Our value, and beside it the paper's (`ablation_report`'s tables)."""
    text = "N/A" if ours is None else f"{ours:.1f}"
    if has_paper:
        text += " (" + ("N/A" if paper is None else f"{paper:.1f}") + ")"
    return text


def _table(header: list[str], rows: Sequence[Sequence[object]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(str(c) for c in r) + " |" for r in rows),
    ]


def _intro(beside: Beside, data: ModelResults) -> list[str]:
    if beside.paper_model is None:
        return [
            "The paper did not evaluate this model (no published numbers to put beside these). Each score: "
            "[95 % interval], Wilson's on the effective n (an id's depth rows counted as the clustered error says).",
            "",
        ]
    return [
        f"Beside each score: the paper's for **{beside.paper_model}** (Figures 22-26). {explanation(beside.mode)} "
        f"The paper's samples: {PAPER_SAMPLES['viquae']} rows ({paper_ids('viquae')} ids) to "
        f"{PAPER_SAMPLES['stanford_cars']} per dataset and length (a category: its datasets' together).",
        *_paper_score_line(beside, data),
        "",
    ]


def _paper_score_line(beside: Beside, data: ModelResults) -> list[str]:
    """How ours is the paper's average of this model, where that is not the strict score (`PaperModel.paper_score`)."""
    declared = paper_score(beside.paper_model)
    if declared is None:
        return []
    if not beside.shows_strict:
        return [
            f"The paper's average of this model is not the strict score: {declared.why}. These results have no "
            f"`{declared.metric}` (written before it was recorded), so the strict score, which counts those rows as "
            "wrong, stands in for it."
        ]
    left, counted = left_out_rows(data, beside.metric)
    return [
        f"Ours is the paper's average of this model (`{beside.metric}`): {declared.why}, which leaves out {left} of "
        f"the {counted} scored rows here. After `·`: the strict score (`score`: every scored row, an empty answer "
        "scored wrong)."
    ]


def _no_summ_row(
    ours: dict[Key, Estimate], strict_of: dict[Key, Estimate], lengths: list[str], beside: Beside
) -> list[object] | None:
    """Without the judge Summ is N/A, so Avg is too: the mean of the other four, under its own name (None: no length
    lacks Avg for want of Summ alone)."""
    cells: list[object] = []
    for length in lengths:
        average = ours.get((AVERAGE, length))
        four = [ours.get((c, length)) for c in CATEGORIES if c != "Summ"]
        mean = mean_of([e for e in four if e is not None]) if all(e is not None for e in four) else None
        if average is None or average.value is not None or mean is None:
            cells.append("")
            continue
        paper = no_summ_average({(c, length): beside.paper(c, length) for c in CATEGORIES}, length)
        strict = [strict_of.get((c, length)) for c in CATEGORIES if c != "Summ"]
        strict_mean = mean_of([e for e in strict if e is not None]) if all(e is not None for e in strict) else None
        cells.append(beside.with_strict(beside.cell(mean, paper, NO_SUMM, length), strict_mean))
    return [NO_SUMM, *cells] if any(cells) else None


def _category_table(data: ModelResults, lengths: list[str], beside: Beside) -> list[str]:
    """Each category and Avg per length (the paper's Figures 22-26)."""
    ours, strict = category_estimates(data, beside.metric), category_estimates(data)
    rows: list[list[object]] = [
        [
            row,
            *(
                beside.with_strict(beside.cell(ours[(row, n)], beside.paper(row, n), row, n), strict.get((row, n)))
                if (row, n) in ours
                else "not run"
                for n in lengths
            ),
        ]
        for row in ROWS
    ]
    no_summ = _no_summ_row(ours, strict, lengths, beside)
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


def _dataset_row(data: ModelResults, dataset: str, lengths: list[str], beside: Beside) -> list[object]:
    scores = dataset_scores(data, beside.metric)
    metric = next(scores[(dataset, n)][1] for n in lengths if (dataset, n) in scores)
    cells: list[object] = []
    for length in lengths:
        if (dataset, length) not in scores:
            cells.append("")
            continue
        task = dataset_task(dataset, length)
        ours = estimate_of(data, task, metric, 100)
        if metric not in ("score", beside.metric):  # the paper publishes scores only
            cells.append(interval_text(ours))
        else:
            cell = beside.cell(ours, beside.paper(dataset, length), dataset, length)
            cells.append(beside.with_strict(cell, estimate_of(data, task, "score", 100)))
    return [dataset, metric, *cells]


def _dataset_table(data: ModelResults, lengths: list[str], beside: Beside) -> list[str]:
    """Each dataset's paper metric per length."""
    scores = dataset_scores(data, beside.metric)
    datasets = [d for d in DATASET_ORDER if any(key[0] == d for key in scores)]
    rows = [_dataset_row(data, dataset, lengths, beside) for dataset in datasets]
    return [*_table(["dataset", "metric", *lengths], rows), "", *beside.tally()]


def bands(data: ModelResults, metric: str = "score") -> dict[Key, tuple[float, float]]:
    """(category or Avg, length) -> the 95 % interval of our `metric`, the band the length figure draws."""
    return {key: found for key, estimate in category_estimates(data, metric).items() if (found := estimate.interval())}


def compared_metric(paper_model: str | None, data: ModelResults) -> str:
    """Ours as the paper averaged `paper_model` (`PaperModel.paper_score`) where the results have it, else `score`."""
    declared = paper_score(paper_model)
    return declared.metric if declared is not None and has_metric(data, declared.metric) else "score"


def _figure_lines(model: str, data: ModelResults, out_dir: Path, beside: Beside) -> list[str]:
    """Score against length, ours (with its 95 % band) beside the paper's curve."""
    name = f"mmlongbench_length_{slug(model)}.png"
    paper = beside.paper_model
    paper_series = {paper: {(row, n): beside.paper(row, n) for row in ROWS for n in LENGTHS}} if paper else {}
    series, band = {model: category_scores(data, beside.metric)}, {model: bands(data, beside.metric)}
    if figure(out_dir / name, length_figure, series, paper_series, data.provenance_line(), band):
        return [f"![MMLongBench score against length, {model}]({name})", ""]
    return []


def section(model: str, data: ModelResults, out_dir: Path) -> list[str]:
    """Markdown lines for one model's MMLongBench tasks; the figure goes to `out_dir`."""
    ours, per_dataset = category_scores(data), dataset_scores(data)
    others = past_128k(data)  # ours past 128K: no reference (the other versions declare their own sections)
    if not ours and not per_dataset and others:
        return others
    paper_model = paper_model_for(*run_names(model, data))
    published = load_paper_results() if paper_model else {}
    beside = Beside(paper_model, mode_of(VERDICTS, data.data()), published, compared_metric(paper_model, data))
    lengths = [length for length in LENGTHS if any(key[1] == length for key in [*ours, *per_dataset])]
    lines = ["### MMLongBench", "", *_intro(beside, data)]
    if ours:
        lines += _category_table(data, lengths, beside)
    if per_dataset:
        lines += _dataset_table(data, lengths, beside)
        lines += trend_section(data, lengths)
    if ours:
        lines += _figure_lines(model, data, out_dir, beside)
    return lines + others


def across_models(models: Mapping[str, ModelResults], out_dir: Path) -> list[str]:
    """Every model of the results folder on one score-against-length figure (with the paper's curves of the
    models it evaluated)."""
    metric = {model: compared_metric(paper_model_for(*run_names(model, data)), data) for model, data in models.items()}
    series = {model: category_scores(data, metric[model]) for model, data in sorted(models.items())}
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
    band = {model: bands(models[model], metric[model]) for model in series}
    if not figure(out_dir / "mmlongbench_length_all.png", length_figure, series, paper, caption, band):
        return []
    return [
        "## MMLongBench across models",
        "",
        "![MMLongBench score against length, every model](mmlongbench_length_all.png)",
        "",
    ]
