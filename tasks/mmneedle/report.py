"""MMNeedle's section of `harness report` (`benchmark.py` declares it; every MMNeedle task names that declaration).

As in the paper: a table per config with the positives' existence / index / exact accuracies (and the
individual accuracies for K > 1) beside the negatives' existence accuracy, with the share of answers in
the requested format beside each existence (a model that emits garbage "finds" every needle). Then one
figure per model with the heat map of exact accuracy per needle cell (row, column), pooled over images,
for every positive config with N > 1 (Fig. 2), and one with exact accuracy by needle depth (image index m)
for the M = 10 configs (Fig. 5, computed per depth). Configs are ordered everywhere as the paper's tables
order them: by K, then N, then M. Figures are colour-blind safe and carry the data's provenance.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harness.outputs.report.figure_batch import figure
from harness.outputs.report.figures import run_names
from harness.outputs.report.verdict import Paper, VerdictRule, compare, explanation, mode_of
from harness.outputs.report.verdict_family import Family
from harness.outputs.results.estimates import estimate_of, interval_text
from harness.outputs.results.model_results import ModelResults
from harness.outputs.results.provenance import DataOrigin
from tasks.mmneedle.figures import Panel, cell_grid_figure, depth_figure, panel
from tasks.mmneedle.paper_models import PAPER_MODELS as PAPER
from tasks.mmneedle.task_names import config_of, paper_order

DPI = 150  # the heat maps' cell labels stay legible


def section(model: str, data: ModelResults, out_dir: Path) -> list[str]:
    """Markdown lines for one model's MMNeedle tasks (`data`: a `harness.outputs.results.model_results.ModelResults`); figures are
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


def _value(data: ModelResults, task: str, metric: str) -> str:
    """A proportion as a percentage with its 95 % interval (Wilson's on the effective n, docs/statistics.md)."""
    entry = data.results.get(task)
    if not entry or f"{metric},none" not in entry:
        return ""
    value = entry[f"{metric},none"]
    if not isinstance(value, float):
        return str(value)
    return interval_text(estimate_of(data, task, metric, 1), 100)


def _scored(data: ModelResults, task: str) -> str:
    return str(data.counters(task).get("n_scored", "")) if task in data.results else ""


def table(data: ModelResults) -> list[str]:
    """The paper's layout: per config, positives' existence (with the share of well-formed answers beside
    it), index, exact (and individual accuracies for K > 1) and negatives' existence, in percent with 95 %
    intervals."""
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
                _value(data, pos, x)
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
            _value(data, neg, "existence_acc"),
            _value(data, neg, "format_valid_rate"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return [
        "### MMNeedle, as the paper reports it (%, official scorers; positives and negatives separately)",
        "",
        "*format valid*: answers in the requested format. A positive's existence counts every answer "
        'other than "-1", malformed ones included: read it beside its format validity. Each value: percent '
        "[95 % interval] (Wilson's on the effective n: the needles of one answer, the samples sharing a stitched "
        "image counted as the clustered error says).",
        "",
        *lines,
        "",
    ]


# ------------------------------------------------------------------------------------ beside the paper

# The paper's model -> squashed fragments of the checkpoints and API names it ran as: its declared table.
PAPER_MODELS = {model.name: model.known_as for model in PAPER.models}
# The samples behind each published number: "K=1 evaluated on first 1000 pos/neg, K=2/5 on first 100 pos/neg".
PAPER_SAMPLES = {1: 1000, 2: 100, 5: 100}


def paper_model_for(model: str, data: ModelResults) -> str | None:
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


def _official_metadata(origin: DataOrigin) -> str | None:
    if origin.mode == "official":
        return "the authors' metadata (`--official-metadata`): the paper's own samples of each config"
    return None


VERDICTS = VerdictRule(
    tolerance=5.0,
    why_tolerance="5 points on the paper's 0-100 tables",
    same_items=_official_metadata,
    fresh="samples regenerated by the builder (its seed, not the authors' metadata): new draws of the paper's configs",
)


def beside_paper(model: str, data: ModelResults) -> list[str]:
    """Our exact accuracy (positives) and existence accuracy (negatives) beside the paper's for its model, with the
    verdict per cell and the count per table."""
    paper_model = paper_model_for(model, data)
    configs = sorted(
        {parsed[:3] for task in data.results if (parsed := config_of(task))}, key=lambda c: paper_order(*c)
    )
    if paper_model is None or not configs:
        return []
    published = load_paper_results()
    mode = mode_of(VERDICTS, data.data())
    family = Family(mode)
    rows: list[tuple[str, list[object]]] = []
    for m, n, k in configs:
        cells: list[object] = []
        for kind, metric, paper_metric in (("pos", "exact_acc", "Exact"), ("neg", "existence_acc", "Existence")):
            task = f"mmneedle_m{m}_n{n}_k{k}_{kind}"
            paper = published.get((paper_model, m, n, k, "positive" if kind == "pos" else "negative", paper_metric))
            if task not in data.results:
                cells.append("not run")
                continue
            ours = estimate_of(data, task, metric, 1).rescaled(100)  # the paper's tables are in percent
            cells.append(family.add(compare(ours, Paper(paper, PAPER_SAMPLES.get(k)), mode)))
        rows.append((f"M={m} N={n} K={k}", cells))
    return [
        f"### MMNeedle beside the paper's {paper_model} (%)",
        "",
        f"The paper's numbers: Tables 2-5, 8-12; its samples: the first 1000 positives or negatives per config for "
        f"K = 1, 100 for K = 2 and 5. {explanation(mode)}",
        "",
        "| config | exact (positives) | existence (negatives) |",
        "|---|---|---|",
        *(f"| {config} | " + " | ".join(str(c) for c in cells) + " |" for config, cells in rows),
        "",
        *family.tally(),
    ]


# ------------------------------------------------------------------------------------- cell heat maps


def cell_panels(data: ModelResults) -> list[Panel]:
    """A panel for every positive config with N > 1 (N = 1 has a single cell), in the paper's order."""
    panels = []
    for task in data.results:
        config = config_of(task)
        if not config or config[3] != "pos" or config[1] == 1:
            continue
        one = panel(*config[:3], (data.breakdowns.get(task) or {}).get("exact_acc_by_cell") or {})
        exact = data.results[task].get("exact_acc,none")  # "N/A" where it is NaN
        one.samples, one.exact = _scored(data, task), exact if isinstance(exact, int | float) else None
        panels.append(one)
    return sorted(panels, key=lambda p: paper_order(p.m, p.n, p.k))


def depth_series(breakdowns: dict[str, Any]) -> dict[int, dict[tuple[int, int], dict[str, dict[str, float]]]]:
    """K -> (M, N) -> exact accuracy by image index, for the positive configs with M > 1."""
    series: dict[int, dict[tuple[int, int], dict[str, dict[str, float]]]] = {}
    for task, breakdown in breakdowns.items():
        config = config_of(task)
        depths = (breakdown or {}).get("exact_acc_by_depth")
        if config and config[3] == "pos" and config[0] > 1 and depths:
            series.setdefault(config[2], {})[(config[0], config[1])] = depths
    return series


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)
