"""The paper's aggregation of MMLongBench dataset scores into categories (spec §5.8), as the official
`figure_scripts/utils.py` (`custom_avgs`, `process_df`) computes it at commit 26197d2, and the
published numbers (Figures 22-26) to compare with.

Scores are on the 0-100 scale; a dataset score is the mean of its rows x 100 (VH folded at 50, see
`scoring.vh_reported_accuracy`). Every group is an unweighted mean of its members computed from
unrounded values; a missing member (None, e.g. Claude's > 100-image cells) makes the group None,
as pandas `mean(skipna=False)` does officially, and that None propagates up to Avg.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from pathlib import Path

# MM-NIAH text-needle and image-needle files are averaged first ("average score for each subset
# separately and report their mean"), so Reason's 150 (T) rows weigh as much as its 300 (I) rows.
MMNIAH_PAIRS: dict[str, tuple[str, str]] = {
    "mmniah_ret": ("mmniah_ret_text", "mmniah_ret_image"),
    "mmniah_count": ("mmniah_count_text", "mmniah_count_image"),
    "mmniah_reason": ("mmniah_reason_text", "mmniah_reason_image"),
}

# Category -> members; a nested pair is one member, the mean of its two files. NIAH thus has five
# equal weights: VH-Single, VH-Multi, MM-NIAH-Ret, -Count, -Reason.
CATEGORIES: dict[str, tuple[str | tuple[str, str], ...]] = {
    "VRAG": ("infoseek", "viquae"),
    "NIAH": ("vh_single", "vh_multi", *MMNIAH_PAIRS.values()),
    "ICL": ("stanford_cars", "food101", "sun397", "inat2021"),
    "Summ": ("govreport", "multilexsum"),
    "DocVQA": ("mmlongbench_doc", "longdocurl", "slidevqa"),
}
AVERAGE = "Avg"

# Task names of the published results CSV (Figures 22-26) -> our keys.
PAPER_TASK_KEYS: dict[str, str] = {
    "InfoSeek": "infoseek",
    "ViQuAE": "viquae",
    "VH-Single": "vh_single",
    "VH-Multi": "vh_multi",
    "MM-NIAH-Ret (T)": "mmniah_ret_text",
    "MM-NIAH-Ret (I)": "mmniah_ret_image",
    "MM-NIAH-Count (T)": "mmniah_count_text",
    "MM-NIAH-Count (I)": "mmniah_count_image",
    "MM-NIAH-Reason (T)": "mmniah_reason_text",
    "MM-NIAH-Reason (I)": "mmniah_reason_image",
    "Stanford Cars": "stanford_cars",
    "Food101": "food101",
    "SUN397": "sun397",
    "Inat2021": "inat2021",
    "GovReport": "govreport",
    "Multi-LexSum": "multilexsum",
    "MMLongBench-Doc": "mmlongbench_doc",
    "LongDocURL": "longdocurl",
    "SlideVQA": "slidevqa",
    "VRAG": "VRAG",
    "NIAH": "NIAH",
    "ICL": "ICL",
    "Summ": "Summ",
    "DocVQA": "DocVQA",
    "Avg.": AVERAGE,
}
PAPER_LENGTHS = (8192, 16384, 32768, 65536, 131072)
PAPER_RESULTS_CSV = Path(__file__).with_name("paper_results.csv")
NOT_AVAILABLE = "N/A"

PaperResults = dict[tuple[str, str, int], float | None]


def mean_or_none(values: list[float | None]) -> float | None:
    """Unweighted mean; None if any value is None (pandas `mean(skipna=False)`). Empty -> ValueError."""
    if not values:
        raise ValueError("mean of no values")
    present = [v for v in values if v is not None]
    if len(present) < len(values):
        return None
    return math.fsum(present) / len(present)


def _member_score(member: str | tuple[str, str], scores: Mapping[str, float | None]) -> float | None:
    if isinstance(member, tuple):
        return mean_or_none([scores.get(name) for name in member])
    return scores.get(member)


def category_scores(dataset_scores: Mapping[str, float | None]) -> dict[str, float | None]:
    """The three MM-NIAH pair scores, the five categories and Avg from per-dataset scores (0-100).

    Keys: `mmniah_ret`, `mmniah_count`, `mmniah_reason`, `VRAG`, `NIAH`, `ICL`, `Summ`, `DocVQA`,
    `Avg`. A dataset absent from `dataset_scores` counts as None. Nothing is rounded: Avg is the
    mean of the unrounded categories, as official.
    """
    out: dict[str, float | None] = {pair: _member_score(files, dataset_scores) for pair, files in MMNIAH_PAIRS.items()}
    for category, members in CATEGORIES.items():
        out[category] = mean_or_none([_member_score(m, dataset_scores) for m in members])
    out[AVERAGE] = mean_or_none([out[category] for category in CATEGORIES])
    return out


def load_paper_results(path: Path | str | None = None) -> PaperResults:
    """The published scores (source,model,task,length_tokens,score CSV; default `paper_results.csv`
    beside this module) keyed by (model, dataset key or category, length_tokens); "N/A" -> None.

    Model names are the paper's ("GPT-4o", "Qwen2.5-VL-72B"); task names are mapped through
    `PAPER_TASK_KEYS` (an unknown task or a duplicate key raises ValueError).
    """
    results: PaperResults = {}
    with open(path or PAPER_RESULTS_CSV, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            task = row["task"]
            if task not in PAPER_TASK_KEYS:
                raise ValueError(f"unknown task {task!r} in the paper results")
            key = (row["model"], PAPER_TASK_KEYS[task], int(row["length_tokens"]))
            if key in results:
                raise ValueError(f"duplicate paper result for {key}")
            results[key] = None if row["score"] == NOT_AVAILABLE else float(row["score"])
    return results


def paper_models(results: PaperResults) -> list[str]:
    """The models of `results` in the order they first appear (the paper's table order)."""
    return list(dict.fromkeys(model for model, _, _ in results))


def paper_dataset_scores(results: PaperResults, model: str, length: int) -> dict[str, float | None]:
    """The published per-dataset scores of one model at one length (only datasets, no categories)."""
    datasets = [key for key in PAPER_TASK_KEYS.values() if key not in CATEGORIES and key != AVERAGE]
    return {name: results[(model, name, length)] for name in datasets if (model, name, length) in results}
