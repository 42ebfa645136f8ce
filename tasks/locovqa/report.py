"""LoCoVQA's section of `harness report` (declared by every LoCoVQA task: `report: !function report.section`).

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
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.outputs.figure_batch import figure
from harness.outputs.figures import LINE_COLOURS, MARKERS, run_names, slug
from harness.outputs.provenance import data_caption
from harness.outputs.verdict import compare_correlation, data_problem, explanation, tally
from tasks.locovqa.decay import FORMS, Fit, fit, sub_chance

SCALE = 1  # scores are proportions (0-1); `harness report` shows them as percentages beside the others

LEAF = re.compile(r"^locovqa_(okvqa|mmstar|mnist|needle)_(cmp|int)_(\d+)$")
MODES = ("cmp", "int")
SUBSETS = {
    "seedbench": "SEEDBench",
    "mmbench": "MMBench",
    "mmmu": "MMMU",
    "mathvista": "MathVista",
    "scienceqa": "ScienceQA",
    "ai2d": "AI2D",
}
# (row, task, metric, subset): the paper's rows of Tables 2-3 in order, then ours.
SERIES = [
    ("MMStar", "mmstar", "accuracy", None),
    *[(name, "mmstar", "accuracy_by_subset", key) for key, name in SUBSETS.items()],
    ("OK-VQA", "okvqa", "exact_match", None),
    ("BERT", "okvqa", "bertscore_minilm_cos", None),
    ("ROUGE", "okvqa", "rougeL_f1", None),
    ("MNIST", "mnist", "accuracy", None),
    ("Needle", "needle", "accuracy", None),
]
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
DEPTHS = (0.0, 0.25, 0.5, 0.75, 1.0)


@dataclass
class Series:
    """One curve: y against x (context length, or digit count for Haystack-k) with the random baseline."""

    row: str
    mode: str
    xs: list[float] = field(default_factory=list)
    ys: list[float] = field(default_factory=list)
    chance: list[float] = field(default_factory=list)

    def fits(self) -> dict[str, Fit | None]:
        return {form: fit(self.xs, self.ys, form) for form in FORMS}

    @property
    def below_chance(self) -> bool:
        return bool(self.ys) and sub_chance(self.ys, self.chance)


def _value(entry: dict[str, Any], metric: str) -> float | None:
    return _number(entry.get(f"{metric},none"))


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not math.isnan(value) else None


def leaves(data: Any) -> dict[tuple[str, str], dict[int, str]]:
    """(task, mode) -> {length: leaf task name} for every LoCoVQA leaf in the results."""
    out: dict[tuple[str, str], dict[int, str]] = {}
    for name in data.results:
        match = LEAF.match(name)
        if match:
            out.setdefault((match.group(1), match.group(2)), {})[int(match.group(3))] = name
    return out


def series(data: Any) -> list[Series]:
    """Every curve the results hold, in the paper's row order, cmp before int; Haystack-k rows after MNIST."""
    found = leaves(data)
    out: list[Series] = []
    for row, task, metric, subset in SERIES:
        for mode in MODES:
            curve = Series(row, mode)
            for length, name in sorted(found.get((task, mode), {}).items()):
                entry = data.results[name]
                chance = _number(data.reference(name, "chance")) or 0.0
                if subset is None:
                    value = _value(entry, metric)
                else:
                    value = (data.breakdowns.get(name, {}).get(metric, {}).get(subset) or {}).get("mean")
                if value is not None:
                    curve.xs.append(length)
                    curve.ys.append(float(value))
                    curve.chance.append(chance)
            if curve.xs:
                out.append(curve)
        if row == "MNIST":
            out += _haystacks(data, found)
    return out


def _haystacks(data: Any, found: dict[tuple[str, str], dict[int, str]]) -> list[Series]:
    """Haystack-k: MNIST accuracy against the number of digits at length k (the paper's rows for k = 9..36)."""
    out = []
    for mode in MODES:
        for length, name in sorted(found.get(("mnist", mode), {}).items()):
            by_digits = data.breakdowns.get(name, {}).get("accuracy_by_digits", {})
            if len(by_digits) < 2:
                continue
            curve = Series(f"Haystack-{length}", mode)
            for digits in sorted(by_digits, key=int):
                curve.xs.append(int(digits))
                curve.ys.append(float(by_digits[digits]["mean"]))
                curve.chance.append(0.0)
            out.append(curve)
    return out


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
        chance = sum(c.chance) / len(c.chance) if c.chance else 0.0
        lines.append(
            f"| {c.row} | {c.mode} | " + " | ".join(_fmt(by_length.get(n)) for n in lengths) + f" | {chance:.3f} |"
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


def error_table(data: Any) -> list[str]:
    """Figure 9: non-responses (empty answers) and answers without <answer> tags, per task, mode and length."""
    lines = ["| task | mode | length | n | non-response | non-template |", "|---|---|---|---|---|---|"]
    for (task, mode), by_length in sorted(leaves(data).items()):
        if task not in ("okvqa", "mmstar"):
            continue
        for length, name in sorted(by_length.items()):
            entry = data.results[name]
            n = data.counters(name).get("n_scored", "")
            cells = [
                str(int(v)) if (v := _value(entry, m)) is not None else "" for m in ("non_response", "non_template")
            ]
            lines.append(f"| {task} | {mode} | {length} | {n} | " + " | ".join(cells) + " |")
    return [*lines, ""] if len(lines) > 2 else []


def _nearest_depth(depth: float) -> int:
    """The index of the depth in `DEPTHS` nearest `depth` (the first of two as near)."""
    return min(range(len(DEPTHS)), key=lambda i: abs(DEPTHS[i] - depth))


def needle_depths(data: Any) -> dict[str, dict[int, list[float | None]]]:
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


def section(model: str, data: Any, out_dir: Path) -> list[str]:
    curves = series(data)
    lines = ["### LoCoVQA", "", f"*{data.provenance_line()}*", ""]
    if not curves:
        return [*lines, "No LoCoVQA leaf task with a score.", ""]
    lines += [
        "Accuracy (0-1) by visual context length; chance is the random baseline (MMStar: 1 / options, needle: "
        "1/10, OK-VQA and MNIST: 0).",
        "",
        *accuracy_table(curves),
    ]
    lines += [
        "Decay fits (spec §3.6): r² of `exp` (ln y on length, the paper's Tables 2-3), `log` (y on ln length) "
        "and `exp_offset` (a·e^(−b·n)+c); stars p ≤ .05/.01/.001; ↓ accuracy rises with length; † more than "
        "half the points below chance. Haystack-k: MNIST accuracy against the digit count at length k.",
        "",
        *fit_table(curves),
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


def across_models(models: dict[str, Any], out_dir: Path) -> list[str]:
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
        "| series | " + " | ".join(f"{m} ({mode[0]})" for m, mode in columns) + " |",
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
    if figure(out_dir / "locovqa_decay.png", decay_figure, curves, caption):
        lines += ["![LoCoVQA accuracy against context length, every model](locovqa_decay.png)", ""]
    return lines


PAPER_MODELS = {  # the paper's model -> squashed name fragments of its checkpoints and API names
    "LLaVA-1.5": ("llava15", "llavav15"),
    "LLaVA-1.6": ("llava16", "llavav16", "llavanext"),
    "Moondream2": ("moondream2",),
    "PaliGemma": ("paligemma",),
    "Mantis": ("mantis",),
    "GPT-4V": ("gpt4v", "gpt4vision", "gpt4turbo"),
    "Gemini 1.0": ("gemini10", "geminiprovision"),
    "Gemini 1.5": ("gemini15",),
}


def paper_r2() -> dict[tuple[str, str, str], str]:
    """(series, paper model, mode) -> the r² as Tables 2-3 print it (`paper_r2.csv`)."""
    import csv

    with open(Path(__file__).with_name("paper_r2.csv"), encoding="utf-8") as handle:
        return {(r["series"], r["model"], r["mode"]): r["r2_printed"] for r in csv.DictReader(handle)}


def paper_model_for(model: str, data: Any) -> str | None:
    """The paper's name of a run's model, from its name or checkpoint (`llava-hf/llava-1.5-7b-hf` is LLaVA-1.5)."""
    squashed = [re.sub(r"[^a-z0-9]", "", name.lower()) for name in run_names(model, data)]
    return next((paper for paper, keys in PAPER_MODELS.items() if any(k in s for k in keys for s in squashed)), None)


def printed_r(text: str) -> float | None:
    """The signed r of an r² as Tables 2-3 print it (`.924***`, `.923↓`: ↓ accuracy rises with length)."""
    match = re.match(r"^\s*(1\.000|\d*\.\d+)(↓?)", text or "")
    if not match:
        return None
    return math.sqrt(float(match.group(1))) * (1 if match.group(2) else -1)


def fit_r(found: Fit | None) -> float | None:
    if found is None or math.isnan(found.r2):
        return None
    return math.sqrt(max(found.r2, 0.0)) * (1 if found.rising else -1)


def paper_table(models: dict[str, Any]) -> list[str]:
    """The paper's r² beside ours for each model of the folder that the paper evaluated, with the verdict on the
    two correlations (Fisher's z; the paper's fit taken over as many lengths as ours)."""
    published = paper_r2()
    lines = []
    for model, data in sorted(models.items()):
        paper = paper_model_for(model, data)
        if paper is None:
            continue
        problem = data_problem(data.data())
        ours = {(c.row, c.mode): c for c in series(data)}
        modes = sorted({mode for (_, m, mode) in published if m == paper}, key=MODES.index)
        lines += [
            f"**{model}** is the paper's {paper}: our r² (exp) beside the paper's (Tables 2-3), then the "
            f"verdict on the two correlations: {explanation()}",
            "",
            "| series | " + " | ".join(f"{mode} ours | {mode} paper" for mode in modes) + " |",
            "|---|" + "---|" * (2 * len(modes)),
        ]
        verdicts = []
        for row in dict.fromkeys(r for (r, m, _) in published if m == paper):
            cells = []
            for mode in modes:
                curve = ours.get((row, mode))
                found = fit(curve.xs, curve.ys, "exp") if curve else None
                printed = published.get((row, paper, mode), "")
                mark = ""
                if printed:
                    points = len(curve.xs) if curve else 0
                    verdict = compare_correlation(fit_r(found), points, printed_r(printed), points, problem)
                    verdicts.append(verdict)
                    mark = f" {verdict.mark}"
                cells += [found.label() if found else "", printed + mark]
            lines.append(f"| {row} | " + " | ".join(cells) + " |")
        lines += ["", tally(verdicts), ""]
    return lines


def series_colour(model_index: int, mode: str) -> str:
    """A colour per model and mode: cmp and int of one model are told apart by colour as well as by line style."""
    return LINE_COLOURS[(2 * model_index + MODES.index(mode)) % len(LINE_COLOURS)]


def decay_figure(curves: dict[str, list[Series]], caption: str) -> Any:
    """Figure 1: accuracy against context length per panel, every model and mode (cmp solid, int dashed, each its
    own colour), its fitted exponential (thin) and the random baseline (dotted, "chance"); each panel's y axis
    names its metric."""
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
    fig.suptitle("\n".join(textwrap.wrap(caption + " Thin lines: the fitted exponential.", 150)), fontsize=8)
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


# `harness view`: the sample table's axes (build columns).
SAMPLE_AXES = [
    ("task", "task"),
    ("mode", "mode"),
    ("length", "context_length"),
    ("needle depth", "needle_depth"),
    ("subset", "subset"),
]
