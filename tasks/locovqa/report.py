"""LoCoVQA's section of `harness report` (`benchmark.py` declares it; every LoCoVQA task names that declaration).

Per model: accuracy against context length for each task and mode (MMStar per source benchmark, OK-VQA by its
three metrics), the decay fits of every series in the paper's rows (Tables 2-3: MMStar, its six subsets, OK-VQA,
BERT, ROUGE, Haystack-k; ours added: MNIST and Needle against length), the error counts of Figure 9 and the needle
accuracy by depth (Figure 7). `across_models` puts every model of the results folder into one table of r² (the
shape of Tables 2-3, one column per model and mode) and one figure of accuracy against length with the fitted
exponential and the random baseline (Figure 1). Scores are on a 0-1 scale.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.outputs.report.figure_batch import figure
from harness.outputs.report.figures import run_names, slug
from harness.outputs.report.verdict import Mode, VerdictRule, compare_direction, mode_of
from harness.outputs.report.verdict_family import Cell, Family
from harness.outputs.results.model_results import ModelResults
from harness.outputs.results.provenance import DataOrigin, data_caption
from tasks.locovqa.decay import FORMS, Fit, fit
from tasks.locovqa.decay_slope import within_item_slope
from tasks.locovqa.figures import decay_figure, needle_figure
from tasks.locovqa.intervals import CurveInterval, curve_intervals, curve_points, interval_text, point_bands
from tasks.locovqa.paper_models import TABLE_1
from tasks.locovqa.series import DEPTHS, MODES, Series, leaves, metric_value, series

NO_LEVEL = "—"  # a series whose uniform guess has no level (`series.GUESS_LEVELS`)


def _generated(origin: DataOrigin) -> str | None:
    return None  # the generator draws its own items and distractors: never the paper's rows


VERDICTS = VerdictRule(
    tolerance=0.1,  # not used: the verdict meets the direction of the paper's decay (`compare_direction`)
    why_tolerance="none: the verdict is on the direction of the decay",
    same_items=_generated,
    fresh="the builder's own draws of items and distractors (the paper's are not published)",
)


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def accuracy_table(curves: list[Series]) -> list[str]:
    lengths = sorted({int(x) for c in curves if not c.row.startswith("Haystack") for x in c.xs})
    lines = [
        "| series | mode | " + " | ".join(f"n={n}" for n in lengths) + " | chance |",
        "|---|---|" + "---|" * (len(lengths) + 1),
    ]
    for c in curves:
        if c.row.startswith("Haystack"):
            continue
        by_length = dict(zip(c.xs, c.ys, strict=True))
        chance = f"{sum(c.chance) / len(c.chance):.3f}" if c.chance else NO_LEVEL
        lines.append(
            f"| {c.row} | {c.mode} | " + " | ".join(_fmt(by_length.get(n)) for n in lengths) + f" | {chance} |"
        )
    return [*lines, ""]


def fit_table(curves: list[Series]) -> list[str]:
    modes = [m for m in MODES if any(c.mode == m for c in curves)]
    head = " | ".join(f"{m} {form}" for m in modes for form in FORMS)
    lines = [f"| series | {head} |", "|---|" + "---|" * (len(modes) * len(FORMS))]
    rows: dict[str, dict[str, Series]] = {}
    for c in curves:
        rows.setdefault(c.row, {})[c.mode] = c
    for row, by_mode in rows.items():
        cells = []
        for mode in modes:
            curve = by_mode.get(mode)
            fits = curve.fits() if curve else {}
            for form in FORMS:
                found = fits.get(form)
                cell = found.label() if found else ""
                if found and curve is not None and curve.below_chance:
                    cell += " †"
                cells.append(cell)
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def _rate_text(bootstrap: CurveInterval, rate: float) -> str:
    bounds = bootstrap.rate_bounds()
    return f"{rate:+.4f}" + (f" [{bounds[0]:+.4f}, {bounds[1]:+.4f}]" if bounds else "")


def decay_table(curves: list[Series], intervals: dict[tuple[str, str], CurveInterval]) -> list[str]:
    """The `exp` fit of each curve with its item-bootstrap intervals: r² and the decay rate."""
    lines = []
    for curve in curves:
        bootstrap = intervals.get((curve.row, curve.mode))
        found = fit(curve.xs, curve.ys, "exp")
        if bootstrap is None or found is None or math.isnan(found.r2):
            continue
        lines.append(
            f"| {curve.row} | {curve.mode} | {found.label()} {interval_text(bootstrap.r2_bounds())} | "
            f"{_rate_text(bootstrap, found.slope)} | {bootstrap.items} |"
        )
    if not lines:
        return []
    return [
        "The `exp` fit with 95 % intervals from an item bootstrap of the whole curve (items resampled with all their "
        "lengths, the curve refitted 1000 times; docs/statistics.md): r² as Tables 2-3 print it (↓ rising; an "
        "interval from falling to rising reads `[.80 … .30↓]`), and the decay rate b of y = A·e^(b·n) per image.",
        "",
        "| series | mode | r² (exp) [95 %] | rate b per image [95 %] | items |",
        "|---|---|---|---|---|",
        *lines,
        "",
    ]


def error_table(data: ModelResults) -> list[str]:
    """Figure 9: non-responses (empty answers) and answers without <answer> tags, per task, mode and length."""
    lines = ["| task | mode | length | n | non-response | non-template |", "|---|---|---|---|---|---|"]
    for (task, mode), by_length in sorted(leaves(data).items()):
        if task not in ("okvqa", "mmstar"):
            continue
        for length, name in sorted(by_length.items()):
            entry = data.results[name]
            n = data.counters(name).get("n_scored", "")
            cells = [
                str(int(v)) if (v := metric_value(entry, m)) is not None else ""
                for m in ("non_response", "non_template")
            ]
            lines.append(f"| {task} | {mode} | {length} | {n} | " + " | ".join(cells) + " |")
    return [*lines, ""] if len(lines) > 2 else []


def _nearest_depth(depth: float) -> int:
    """The index of the depth in `DEPTHS` nearest `depth` (the first of two as near)."""
    return min(range(len(DEPTHS)), key=lambda i: abs(DEPTHS[i] - depth))


def needle_depths(data: ModelResults) -> dict[str, dict[int, list[float | None]]]:
    """mode -> length -> accuracy at depths 0%, 25%, 50%, 75%, 100% (positions binned to the nearest)."""
    out: dict[str, dict[int, list[float | None]]] = {}
    for (task, mode), by_length in leaves(data).items():
        if task != "needle":
            continue
        for length, name in by_length.items():
            positions = data.breakdowns.get(name, {}).get("accuracy_by_position", {})
            bins: dict[int, list[tuple[float, int]]] = {}
            for position, cell in positions.items():
                depth = int(position) / (length - 1) if length > 1 else 0.0
                bins.setdefault(_nearest_depth(depth), []).append((cell["mean"] * cell["n"], cell["n"]))
            out.setdefault(mode, {})[length] = [
                sum(s for s, _ in bins[i]) / sum(n for _, n in bins[i]) if i in bins else None
                for i in range(len(DEPTHS))
            ]
    return out


def section(model: str, data: ModelResults, out_dir: Path) -> list[str]:
    curves = series(data)
    lines = ["### LoCoVQA", "", f"*{data.provenance_line()}*", ""]
    if not curves:
        return [*lines, "No LoCoVQA leaf task with a score.", ""]
    lines += [
        "Accuracy (0-1) by visual context length; chance is a uniform guess's level where it has one (MMStar: "
        "1 / options, needle: 1/10); OK-VQA's open answers and MNIST's transcriptions have none (—): the random "
        "baseline's own scores show what a guess gets there.",
        "",
        *accuracy_table(curves),
    ]
    lines += [
        "Decay fits (spec §3.6): r² of `exp` (ln y on length, the paper's Tables 2-3), `log` (y on ln length) "
        "and `exp_offset` (a·e^(−b·n)+c); stars p ≤ .05/.01/.001; ↓ accuracy rises with length; † more than "
        "half the points below chance (where there is one). Haystack-k: MNIST accuracy against the digit count at length k.",
        "",
        *fit_table(curves),
        *decay_table(curves, curve_intervals(data)),
    ]
    errors = error_table(data)
    if errors:
        lines += [
            "Errors (Figure 9): empty answers and answers without `<answer>` tags (both counted, not penalised "
            "beyond their score).",
            "",
            *errors,
        ]
    depths = needle_depths(data)
    if depths:
        name = f"locovqa_needle_{slug(model)}.png"
        if figure(out_dir / name, needle_figure, model, depths, data.provenance_line()):
            lines += [f"![LoCoVQA needle accuracy by depth and length, {model}]({name})", ""]
    return lines


def across_models(models: Mapping[str, ModelResults], out_dir: Path) -> list[str]:
    """Every model's decay on one figure (Figure 1) and one r² table (Tables 2-3), one column per model and mode."""
    curves = {model: series(data) for model, data in sorted(models.items())}
    curves = {m: c for m, c in curves.items() if c}
    if not curves:
        return []
    columns = [(m, mode) for m, cs in curves.items() for mode in MODES if any(c.mode == mode for c in cs)]
    rows = list(dict.fromkeys(c.row for cs in curves.values() for c in cs))
    lines = [
        "## LoCoVQA across models",
        "",
        "r² of the exponential fit (ln accuracy on context length), as Tables 2-3 print it: stars p ≤ "
        ".05/.01/.001, ↓ accuracy rises with length, † sub-chance.",
        "",
        "| series | " + " | ".join(column_name(m, models[m], mode) for m, mode in columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for row in rows:
        cells = []
        for model, mode in columns:
            curve = next((c for c in curves[model] if c.row == row and c.mode == mode), None)
            found = fit(curve.xs, curve.ys, "exp") if curve else None
            cells.append((found.label() + (" †" if curve.below_chance else "")) if found and curve else "")
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    caption = "Every model of this results folder. " + data_caption([models[m] for m in curves])
    lines += ["", *paper_table({m: models[m] for m in curves})]
    bands = {m: point_bands(models[m], c) for m, c in curves.items()}
    if figure(out_dir / "locovqa_decay.png", decay_figure, curves, caption, bands):
        lines += ["![LoCoVQA accuracy against context length, every model](locovqa_decay.png)", ""]
    return lines


# The paper's model as Tables 2-3 name it -> the squashed name fragments of its checkpoints and API names, from the
# one declaration (`paper_models.TABLE_1`: both Mantis variants are Tables 2-3's one "Mantis").
PAPER_MODELS = {
    name: tuple(key for row in TABLE_1 if row.results_name == name for key in row.model.known_as)
    for name in dict.fromkeys(row.results_name for row in TABLE_1)
}


def _not_run(name: str) -> dict[str, str]:
    """The settings (`cmp`, `int`) the paper did not run for its model `name`, and why (`PaperModel.not_run`: Section
    4's single-image models ran the composed setting only), where every model of that name left it out."""
    out = {}
    for mode in MODES:
        whys = [row.model.not_run_why(f"locovqa_mmstar_{mode}_1") for row in TABLE_1 if row.results_name == name]
        if whys and all(whys):
            out[mode] = str(whys[0])
    return out


NOT_RUN = {name: _not_run(name) for name in PAPER_MODELS}


def column_name(model: str, data: ModelResults, mode: str) -> str:
    """An r² table's header: the paper's model and setting as Tables 2-3 print them, then the run, where the paper ran
    the model; else the run and setting."""
    paper = paper_model_for(model, data)
    return f"{paper} ({mode[0]}): {model}" if paper else f"{model} ({mode[0]})"


def paper_r2() -> dict[tuple[str, str, str], str]:
    """(series, paper model, mode) -> the r² as Tables 2-3 print it (`paper_r2.csv`)."""
    import csv

    with open(Path(__file__).with_name("paper_r2.csv"), encoding="utf-8") as handle:
        return {(r["series"], r["model"], r["mode"]): r["r2_printed"] for r in csv.DictReader(handle)}


def paper_model_for(model: str, data: ModelResults) -> str | None:
    """The paper's name of a run's model, from its name or checkpoint (`llava-hf/llava-1.5-7b-hf` is LLaVA-1.5)."""
    squashed = [re.sub(r"[^a-z0-9]", "", name.lower()) for name in run_names(model, data)]
    return next((paper for paper, keys in PAPER_MODELS.items() if any(k in s for k in keys for s in squashed)), None)


def printed_r(text: str) -> float | None:
    """The signed r of an r² as Tables 2-3 print it (`.924***`, `.923↓`: ↓ accuracy rises with length)."""
    match = re.match(r"^\s*(1\.000|\d*\.\d+)(↓?)", text or "")
    if not match:
        return None
    return math.sqrt(float(match.group(1))) * (1 if match.group(2) else -1)


def signed_r2(r: float | None) -> float | None:
    """r² with the sign of r: negative where accuracy falls with length, positive where it rises (the paper's ↓)."""
    return None if r is None else math.copysign(r * r, r)


def fit_r(found: Fit | None) -> float | None:
    if found is None or math.isnan(found.r2):
        return None
    return math.sqrt(max(found.r2, 0.0)) * (1 if found.rising else -1)


def _explanation(mode: Mode) -> str:
    return (
        "our r² (exp) with its 95 % interval from the item bootstrap of the whole curve, a description of the "
        "curve's shape (not tested: its interval does not cover the population r²), then our decay, the within-item "
        "slope of the score per unit of length with its 95 % interval (clustered on the item, its quantiles from "
        "permuting each item's scores over its lengths: exact for a flat curve at any number of items), beside the "
        f"paper's r² (Tables 2-3), then the verdict ({mode.kind}: {mode.why}) on "
        "the direction the paper's significant fit shows (its stars; ↓ rising): ✓ our slope's interval lies on the "
        "paper's side of 0; ✗ our slope goes the other way (its p against a flat curve, adjusted for the table's "
        "cells); ≈ neither (our interval contains 0, or the ✗ did not survive the adjustment); – not comparable "
        "(the reason is counted under the table)."
    )


def _per(row: str) -> str:
    return "digit" if row.startswith("Haystack") else "image"


def _direction(printed: str) -> int | None:
    """The direction of the paper's fit where its printed r² carries a significance star: -1 falling, +1 rising."""
    r = printed_r(printed)
    return None if r is None or "*" not in printed else (1 if r > 0 else -1)


def paper_table(models: Mapping[str, ModelResults]) -> list[str]:
    """The paper's r² beside ours for each model of the folder that the paper evaluated (ours with its item-bootstrap
    interval, a description, and our within-item slope), with the verdict on the direction of the decay."""
    published = paper_r2()
    lines = []
    for model, data in sorted(models.items()):
        paper = paper_model_for(model, data)
        if paper is None:
            continue
        mode = mode_of(VERDICTS, data.data())
        ours = {(c.row, c.mode): c for c in series(data)}
        intervals = curve_intervals(data)
        slopes = {key: within_item_slope(points) for key, points in curve_points(data).items()}
        ran = {m for (_, name, m) in published if name == paper}
        # A setting the paper left out for this model (a single-image model's int) that the run has: N/A beside ours.
        left = {m: why for m, why in NOT_RUN.get(paper, {}).items() if any(c.mode == m for c in ours.values())}
        modes = sorted(ran | set(left), key=MODES.index)
        family = Family(mode)
        rows = []
        for row in dict.fromkeys(r for (r, m, _) in published if m == paper):
            cells: list[object] = []
            for mode_name in modes:
                curve = ours.get((row, mode_name))
                found = fit(curve.xs, curve.ys, "exp") if curve else None
                bootstrap = intervals.get((row, mode_name))
                bounds = bootstrap.r2_bounds() if bootstrap else None
                slope = slopes.get((row, mode_name))
                printed = published.get((row, paper, mode_name), "")
                shown = (found.label() + " " + interval_text(bounds)).strip() if found else ""
                cells.append(f"{shown}; slope {slope.text(_per(row))}" if found and slope else shown)
                if mode_name in left:
                    cells.append("N/A")
                elif printed:
                    value = slope.slope if slope else (math.nan if found else None)  # a curve without item rows
                    low, high = (slope.low, slope.high) if slope else (None, None)
                    p_flat = slope.p_flat if slope else math.nan
                    cell = family.add(compare_direction(value, low, high, p_flat, _direction(printed), mode))
                    cells.append(_Printed(printed, cell))
                else:
                    cells.append("")
            rows.append((row, cells))
        lines += [
            f"**{model}** is the paper's {paper}: {_explanation(mode)}",
            "",
            "| series | " + " | ".join(f"{m} ours | {m} paper" for m in modes) + " |",
            "|---|" + "---|" * (2 * len(modes)),
            *(f"| {row} | " + " | ".join(str(c) for c in cells) + " |" for row, cells in rows),
            "",
            *(f"N/A ({m}): the paper did not run {paper} in this setting: {why}." for m, why in left.items()),
            *family.tally(),
        ]
    return lines


@dataclass(frozen=True)
class _Printed:
    """The paper's printed r² and the verdict on ours beside it, once the table is judged."""

    printed: str
    cell: Cell

    def __str__(self) -> str:
        return f"{self.printed} {self.cell.verdict.mark}"
