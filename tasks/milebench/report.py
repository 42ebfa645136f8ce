"""MileBench's section of `harness report` (`benchmark.py` declares it; every MileBench task and group
names that declaration).

For each model: Table 2's layout (the 12 task columns, Overall Real., Overall Diag.) with a row per set the run
covers (the test set, the Combined-image Set, the adversarial set) and, when the model is one the paper evaluated
(matched by its checkpoint or API model name: `llava-hf/llava-1.5-7b-hf` is the paper's LLaVA-1.5-7B), the
paper's row beneath; the image-count levels; Table 3's contamination check when both the test and the adversarial
set ran; and every subset's score with the samples the left truncation cut. Scores are on the paper's 0-100 scale.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from builders.milebench.subsets import DIAGNOSTIC_TASKS, LEVELS, REALISTIC_TASKS, SUBSETS, TASK_IDS
from harness.outputs.report.verdict import Paper, VerdictRule, compare, explanation, mode_of
from harness.outputs.report.verdict_family import Cell, Family
from harness.outputs.results.estimates import Estimate, estimate_of
from harness.outputs.results.model_results import ModelResults
from harness.outputs.results.provenance import DataOrigin
from harness.outputs.results.results_file import TaskEntry
from tasks.milebench.aggregation import (
    COLUMNS,
    OVERALL_DIAGNOSTIC,
    OVERALL_REALISTIC,
    load_paper_contamination,
    load_paper_results,
)
from tasks.milebench.paper_models import PAPER_MODELS
from tasks.milebench.view_hooks import SETS

# API and Hub names of the paper's models (its App. C.1, with the checkpoints, is not public: these are the ones
# its text names, and the usual Hub ports of the open models), as its declared table holds them.
PAPER_NAMES = {name: model.name for model in PAPER_MODELS.models for name in model.known_as}


def _release(origin: DataOrigin) -> str | None:
    return "the release as published, the paper's own test set" if origin.source_kind != "fixture" else None


VERDICTS = VerdictRule(
    tolerance=5.0,
    why_tolerance="5 points on the paper's 0-100 scale",
    same_items=_release,
    fresh="rows other than the release's",
)


def _squash(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def paper_model_for(*names: str) -> str | None:
    """The paper's name of a model given its run names (alias, checkpoint, API model), or None.

    A name matches when its last path part is one of `PAPER_NAMES`, or equals a paper model's name ignoring case,
    punctuation and a trailing `-hf` (`llava-hf/llava-1.5-7b-hf` is LLaVA-1.5-7B, `Qwen/Qwen-VL-Chat` Qwen-VL-Chat).
    """
    known = {_squash(k): v for k, v in PAPER_NAMES.items()}
    papers = {_squash(model.name): model.name for model in PAPER_MODELS.models}
    for name in names:
        last = _squash(Path(name.rstrip("/")).name) if name else ""
        if not last:
            continue
        if last in known:
            return known[last]
        for key in (last, last.removesuffix("hf")):
            if key in papers:
                return papers[key]
    return None


def run_names(model: str, data: ModelResults) -> list[str]:
    """The model's name in the report and the checkpoints / API models its results files record."""
    names = [model.split(" (")[0]]
    for source in data.sources.values():
        args = source.get("config", {}).get("model_args")
        if isinstance(args, dict):
            names += [str(args.get(key, "")) for key in ("pretrained", "model")]
    return names


def _number(entry: TaskEntry | None, metric: str = "score") -> float | None:
    value = (entry or {}).get(f"{metric},none")
    return float(value) if isinstance(value, int | float) and not math.isnan(value) else None


def _cell(value: float | None) -> str:
    return "N/A" if value is None else f"{value:.1f}"


def table2_rows(data: ModelResults) -> dict[str, dict[str, float | None]]:
    """Set ("", "_combined", "_adv") -> Table 2 column -> our score, for the sets the run has groups of."""
    out: dict[str, dict[str, float | None]] = {}
    for suffix in SETS:
        row: dict[str, float | None] = {}
        for task_id in TASK_IDS:
            name = f"milebench{suffix}_{task_id.replace('-', '').lower()}"
            if name in data.groups:
                row[task_id] = _number(data.groups[name])
        for column, name in ((OVERALL_REALISTIC, "realistic"), (OVERALL_DIAGNOSTIC, "diagnostic")):
            if f"milebench{suffix}_{name}" in data.groups:
                row[column] = _number(data.groups[f"milebench{suffix}_{name}"])
        if row:
            out[suffix] = row
    return out


def paper_samples(column: str) -> int:
    """The paper's samples behind a Table 2 column: its subsets' (Table 6), all realistic or diagnostic ones for
    the Overall columns."""
    tasks = {OVERALL_REALISTIC: REALISTIC_TASKS, OVERALL_DIAGNOSTIC: DIAGNOSTIC_TASKS}.get(column, (column,))
    return sum(s.samples for s in SUBSETS if s.task_id in tasks)


def _column_estimate(data: ModelResults, suffix: str, column: str) -> Estimate:
    name = {OVERALL_REALISTIC: "realistic", OVERALL_DIAGNOSTIC: "diagnostic"}.get(
        column, column.replace("-", "").lower()
    )
    return estimate_of(data, f"milebench{suffix}_{name}", "score", 100)


def _subset_task(key: str, suffix: str) -> str:
    return f"milebench_{key}{suffix}"


def _table2(
    model: str, data: ModelResults, rows: dict[str, dict[str, float | None]], paper_model: str | None
) -> list[str]:
    """Table 2's layout: a row per set the run covers and, for a paper model, the paper's row and the verdicts."""
    lines = [
        "Table 2's layout (0-100); N/A: a member of the group is missing or N/A.",
        "",
        "| | " + " | ".join(COLUMNS) + " |",
        "|---|" + "---|" * len(COLUMNS),
    ]
    for suffix, row in rows.items():
        cells = [_cell(row[c]) if c in row else "not run" for c in COLUMNS]
        lines.append(f"| {model} ({SETS[suffix]}) | " + " | ".join(cells) + " |")
    family = None
    mode = mode_of(VERDICTS, data.data())
    if paper_model:
        paper = load_paper_results()[paper_model]
        lines.append(f"| paper: {paper_model} | " + " | ".join(_cell(paper[c]) for c in COLUMNS) + " |")
        if "" in rows:
            family = Family(mode)
            marked = [
                family.add(compare(_column_estimate(data, "", c), Paper(paper[c], paper_samples(c)), mode))
                for c in COLUMNS
            ]
            lines.append("| ours - paper [95 %] (test set) | " + " | ".join(_difference(c) for c in marked) + " |")
            lines.append("| verdict (test set) | " + " | ".join(c.mark for c in marked) + " |")
    lines.append("")
    lines += (
        [
            f"The paper's row is its Table 2 for **{paper_model}** (the test set); its samples: its Table 6 counts "
            f"of the column's subsets. {explanation(mode)}"
        ]
        if paper_model
        else ["The paper did not evaluate this model (no published row to put beside it)."]
    ) + [""]
    return lines + (family.tally() if family else [])


def _difference(cell: Cell) -> str:
    """The difference and its interval of a verdict's cell (Table 2 gives ours and the paper's their own rows)."""
    return cell.comparison.difference_text()


def _levels(data: ModelResults) -> list[str]:
    """The image-count levels of each set the run covers (mean over subsets)."""
    levels = {
        suffix: {
            level: _number(data.groups.get(f"milebench{suffix}_{level.lower()}"), f"score_{level.lower()}")
            for level in LEVELS
        }
        for suffix in SETS
        if any(f"milebench{suffix}_{level.lower()}" in data.groups for level in LEVELS)
    }
    if not levels:
        return []
    return [
        "| image-count level (mean over subsets) | " + " | ".join(LEVELS) + " |",
        "|---|---|---|---|",
        *(f"| {SETS[s]} | " + " | ".join(_cell(v.get(level)) for level in LEVELS) + " |" for s, v in levels.items()),
        "",
    ]


def _contamination(
    model: str, data: ModelResults, rows: dict[str, dict[str, float | None]], paper_model: str | None
) -> list[str]:
    """Table 3's contamination check, where the run has both the test and the adversarial set."""
    if not ("" in rows and "_adv" in rows):
        return []
    regular, adv = rows[""].get(OVERALL_REALISTIC), rows["_adv"].get(OVERALL_REALISTIC)
    delta = None if regular is None or adv is None else regular - adv
    lines = [
        "Contamination check (Table 3): Overall Real. on the test set and on the adversarial set.",
        "",
        "| | Regular | ADV | Δ |",
        "|---|---|---|---|",
        f"| {model} | {_cell(regular)} | {_cell(adv)} | {_cell(delta)} |",
    ]
    published = load_paper_contamination().get(paper_model or "")
    if published:
        lines.append(
            f"| paper: {paper_model} | {published['regular']:.1f} | {published['adv']:.1f} | {published['delta']:.1f} |"
        )
        mode = mode_of(VERDICTS, data.data())
        family = Family(mode)
        pair = [
            family.add(
                compare(
                    _column_estimate(data, suffix, OVERALL_REALISTIC),
                    Paper(published[key], paper_samples(OVERALL_REALISTIC)),
                    mode,
                )
            )
            for suffix, key in (("", "regular"), ("_adv", "adv"))
        ]
        lines += [
            f"| ours - paper [95 %] | {_difference(pair[0])} | {_difference(pair[1])} | |",
            f"| verdict | {pair[0].mark} | {pair[1].mark} | |",
            "",
            *family.tally()[:-1],
        ]
    return [*lines, ""]


# Table 2's first row is the paper's own random guess: the `random` baseline guesses too (a uniform choice among a
# question's options, random digits for a needle), so its run stands beside that row, with the verdicts a paper
# model's run gets.
RANDOM_ROW = "Random"


def paper_row_for(model: str, data: ModelResults) -> str | None:
    """The paper's row for this run: its paper model's, or Table 2's Random row for a run of the random-guess
    baseline."""
    found = paper_model_for(*run_names(model, data))
    return RANDOM_ROW if found is None and _guesses_at_random(data) else found


def _guesses_at_random(data: ModelResults) -> bool:
    """Whether the run's backend answers with the task's random guess (`BackendSpec.reads_random_answer`): a name
    from a results file that no backend declares is none (`backend_spec` imports nothing for it)."""
    from harness.models.registry import backend_spec

    backends = {source.get("config", {}).get("model") for source in data.sources.values()}
    return bool(backends) and all(isinstance(b, str) and backend_spec(b).reads_random_answer for b in backends)


def section(model: str, data: ModelResults, out_dir: Path) -> list[str]:
    """Markdown lines for one model's MileBench tasks: Table 2's layout, the image-count levels, Table 3's
    contamination check, every subset."""
    paper_model = paper_row_for(model, data)
    rows = table2_rows(data)
    lines = ["### MileBench", ""]
    if rows:
        lines += _table2(model, data, rows, paper_model)
    return lines + _levels(data) + _contamination(model, data, rows, paper_model) + _subset_table(data)


def _subset_table(data: ModelResults) -> list[str]:
    present = [s for s in SETS if any(_subset_task(sub.key, s) in data.results for sub in SUBSETS)]
    if not present:
        return []
    lines = [
        "| subset | task | metric | " + " | ".join(SETS[s] for s in present) + " |",
        "|---|---|---|" + "---|" * len(present),
    ]
    truncated = 0
    for subset in SUBSETS:
        cells = []
        for suffix in present:
            task = _subset_task(subset.key, suffix)
            if task not in data.results:
                cells.append("")
                continue
            counters = data.counters(task)
            cut = counters.get("n_truncated", 0)
            truncated += cut
            cells.append(_cell(_number(data.results[task])) + (f" ({cut} cut)" if cut else ""))
        if any(cells):
            metric = "ROUGE-L" if subset.family == "rouge_l" else "accuracy"
            lines.append(f"| {subset.name} | {subset.task_id} | {metric} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"{truncated} sample(s) were cut to fit the model's context by the paper's left truncation "
        "(each sample's record in `journal_<task>.jsonl` says what was dropped)."
        if truncated
        else "No sample needed truncating.",
        "",
    ]
    return lines


def headline_metrics(names: list[str]) -> list[tuple[str, str]]:
    """The rows MileBench adds to the table of several models: Overall Real. and Overall Diag. of each set."""
    rows = []
    for suffix in SETS:
        for name in (f"milebench{suffix}_realistic", f"milebench{suffix}_diagnostic"):
            if name in names:
                rows.append((name, "score"))
    return rows
