"""MMLongBench's numbers as `harness report` sets them out: ours per category (and Avg) and per dataset at each
length, from a model's results, with their standard errors; the paper's sample counts behind each number; and which
of the paper's models a run is (its checkpoint's name)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from pathlib import Path

from harness.models.facts.paper_models import PaperScore
from harness.outputs.results.estimates import Estimate, estimate_of
from harness.outputs.results.model_results import ModelResults
from harness.outputs.results.results_file import TaskEntry
from tasks.mmlongbench.aggregation import AVERAGE, CATEGORIES
from tasks.mmlongbench.paper_models import PAPER_MODELS

SUMM_FALLBACK = "rougeLsum_f1"  # a Summ task's only metric without the judge
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

    A checkpoint matches a paper model (one of `models`, default the 46 of Figures 22-26, as `paper_models.py`
    declares them) when, ignoring case
    and punctuation, its last path part starts with the paper's name; the longest such name wins
    (`Qwen2-VL-72B-Instruct` is `Qwen2-VL-72B`, not `-7B`).
    """
    candidates = [_squash(Path(n.rstrip("/")).name) for n in names if n]
    best: str | None = None
    for paper in [model.name for model in PAPER_MODELS.models] if models is None else models:
        key = _squash(paper)
        if any(c.startswith(key) for c in candidates) and (best is None or len(key) > len(_squash(best))):
            best = paper
    return best


def metric_value(entry: TaskEntry | None, metric: str = "score") -> float | None:
    value = (entry or {}).get(f"{metric},none")
    return float(value) if isinstance(value, int | float) and not math.isnan(value) else None


def category_scores(data: ModelResults, metric: str = "score") -> dict[tuple[str, str], float | None]:
    """(category or Avg, length) -> our `metric` where the run has that group (None: N/A)."""
    out: dict[tuple[str, str], float | None] = {}
    for length in LENGTHS:
        for category in CATEGORIES:
            name = f"mmlongbench_{category.lower()}_{length}"
            if name in data.groups:
                out[(category, length)] = metric_value(data.groups[name], metric)
        if f"mmlongbench_{length}" in data.groups:
            out[(AVERAGE, length)] = metric_value(data.groups[f"mmlongbench_{length}"], metric)
    return out


# A paper task's name: another version's (`mmlongbench_v1_1_...`, `mmlongbench_vlmevalkit_...`) is not one.
_PAPER_LEAF = re.compile(r"mmlongbench_(?:vrag|niah|icl|summ|docvqa)_(\w+)_(8k|16k|32k|64k|128k)")


def dataset_scores(data: ModelResults, metric: str = "score") -> dict[tuple[str, str], tuple[float | None, str]]:
    """(dataset, length) -> (our value, its metric) for every MMLongBench leaf task run: `metric` where the task has
    it, else `score`, else (a Summ task without the judge) ROUGE-Lsum."""
    out: dict[tuple[str, str], tuple[float | None, str]] = {}
    for task, entry in data.results.items():
        match = _PAPER_LEAF.fullmatch(task)
        if not match:
            continue
        found = next((m for m in (metric, "score") if f"{m},none" in entry), SUMM_FALLBACK)
        out[(match.group(1), match.group(2))] = (metric_value(entry, found), found)
    return out


def paper_score(paper_model: str | None) -> PaperScore | None:
    """How the paper averaged `paper_model` where not as the strict `score` (`PaperModel.paper_score`), or None."""
    run = next((m for m in PAPER_MODELS.models if m.name == paper_model), None)
    return run.paper_score if run is not None else None


def has_metric(data: ModelResults, metric: str) -> bool:
    """Whether any MMLongBench task or group of the results has `metric` (a file written before it existed has not)."""
    return any(f"{metric},none" in entry for entry in [*data.results.values(), *data.groups.values()])


def left_out_rows(data: ModelResults, metric: str) -> tuple[int, int]:
    """(rows `metric` leaves out, rows `score` counts) over the paper's leaf tasks of the results."""
    left = counted = 0
    for task in data.results:
        if _PAPER_LEAF.fullmatch(task):
            every, kept = (estimate_of(data, task, m, 100).n for m in ("score", metric))
            counted += every or 0
            left += (every or 0) - (kept or 0)
    return left, counted


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
# The rows of one sampled id (App. D; the official sample keeps every depth or permutation row of an id): the
# paper's n = 600 of ViQuAE is 100 ids. DocVQA's clusters are documents, whose count the paper does not give: each
# question is taken as its own (the paper's side of a DocVQA verdict is then as precise as it can be).
ROWS_PER_ID = {
    "infoseek": 3,
    "viquae": 6,
    "vh_single": 6,
    "vh_multi": 3,
    "mmniah_ret_text": 6,
    "mmniah_ret_image": 6,
    "mmniah_count_text": 3,
    "mmniah_count_image": 3,
    "mmniah_reason_text": 3,
    "mmniah_reason_image": 6,
}


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


def paper_ids(row: str) -> int | None:
    """The paper's sampled ids (clusters) behind a dataset's, a category's or Avg's number at one length."""
    if row in PAPER_SAMPLES:
        return PAPER_SAMPLES[row] // ROWS_PER_ID.get(row, 1)
    if row in CATEGORIES:
        return sum(paper_ids(d) or 0 for d in _members(row))
    if row in (AVERAGE, NO_SUMM):
        return sum(paper_ids(c) or 0 for c in CATEGORIES if row == AVERAGE or c != "Summ")
    return None


def metric_stderr(entry: TaskEntry | None, metric: str = "score") -> float | None:
    return metric_value(entry, f"{metric}_stderr")


def group_name(row: str, length: str) -> str:
    """The group of a category (or Avg) at one length."""
    return f"mmlongbench_{length}" if row == AVERAGE else f"mmlongbench_{row.lower()}_{length}"


def category_estimates(data: ModelResults, metric: str = "score") -> dict[tuple[str, str], Estimate]:
    """(category or Avg, length) -> our `metric` with its errors, rows and clusters, as the group recorded them."""
    return {
        (row, length): estimate_of(data, group_name(row, length), metric, 100)
        for length in LENGTHS
        for row in ROWS
        if group_name(row, length) in data.groups
    }


def dataset_task(dataset: str, length: str) -> str:
    return f"mmlongbench_{category_of(dataset)}_{dataset}_{length}"


def no_summ_average(values: dict[tuple[str, str], float | None], length: str) -> float | None:
    """The mean of VRAG, NIAH, ICL and DocVQA at one length, where all four have a value."""
    found = [values.get((c, length)) for c in CATEGORIES if c != "Summ"]
    known = [v for v in found if v is not None]
    return None if len(known) < len(found) else sum(known) / len(known)


def category_of(dataset: str) -> str:
    return next((c.lower() for c in CATEGORIES if dataset in _members(c)), "")
