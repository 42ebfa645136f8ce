"""Table 2's aggregation of MileBench subset scores, and the published numbers to compare a run with.

The official `score.py` writes one score per subset and no averages; the paper's Table 2 shows, per model, 12 task
scores and two overall scores. The rule that reproduces its rows (spec §3.2, checked against every row in
`tests/tasks/milebench/test_milebench_tasks.py`): Overall Real. is the unweighted mean of the nine realistic task scores
(T-1 ... S-5) and Overall Diag. the mean of N-1, N-2 and I-1. A task score is the unweighted mean of its subsets'
scores (the paper's per-subset table, App. C.3, is not public, so this step cannot be checked). Exceptions the
paper's own numbers show, left as published: GPT-4V's and GPT-4o's Overall Diag. (99.4) is the mean of N-1 and N-2
only, and the Random row matches neither rule (20.9 and 3.8 computed, 22.3 and 5.5 printed).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from pathlib import Path

from builders.milebench.subsets import DIAGNOSTIC_TASKS, REALISTIC_TASKS, SUBSETS, TASK_IDS

OVERALL_REALISTIC = "Overall Real."
OVERALL_DIAGNOSTIC = "Overall Diag."
COLUMNS = (*TASK_IDS, OVERALL_REALISTIC, OVERALL_DIAGNOSTIC)
SUBSETS_OF_TASK: dict[str, tuple[str, ...]] = {t: tuple(s.key for s in SUBSETS if s.task_id == t) for t in TASK_IDS}
PAPER_RESULTS_CSV = Path(__file__).with_name("paper_results.csv")
PAPER_CONTAMINATION_CSV = Path(__file__).with_name("paper_contamination.csv")


def mean_or_none(values: list[float | None]) -> float | None:
    """Unweighted mean; None if any value is None."""
    known = [v for v in values if v is not None]
    if not values or len(known) < len(values):
        return None
    return math.fsum(known) / len(known)


def table2_row(subset_scores: Mapping[str, float | None]) -> dict[str, float | None]:
    """Table 2's columns from per-subset scores (0-100, keyed by subset key); a missing subset makes its task and
    overall None."""
    row: dict[str, float | None] = {
        t: mean_or_none([subset_scores.get(k) for k in SUBSETS_OF_TASK[t]]) for t in TASK_IDS
    }
    row[OVERALL_REALISTIC] = mean_or_none([row[t] for t in REALISTIC_TASKS])
    row[OVERALL_DIAGNOSTIC] = mean_or_none([row[t] for t in DIAGNOSTIC_TASKS])
    return row


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(line for line in handle if not line.startswith("#")))


def load_paper_results(path: Path | str | None = None) -> dict[str, dict[str, float]]:
    """Table 2: model (the paper's name) -> column -> score, in the paper's order."""
    out: dict[str, dict[str, float]] = {}
    for row in _rows(Path(path or PAPER_RESULTS_CSV)):
        out[row["model"]] = {column: float(row[column]) for column in COLUMNS}
    return out


def paper_kinds(path: Path | str | None = None) -> dict[str, str]:
    """Table 2: model -> random | closed | open image | open video."""
    return {row["model"]: row["kind"] for row in _rows(Path(path or PAPER_RESULTS_CSV))}


def load_paper_contamination(path: Path | str | None = None) -> dict[str, dict[str, float]]:
    """Table 3: model -> {regular, adv, delta}."""
    return {
        row["model"]: {k: float(row[k]) for k in ("regular", "adv", "delta")}
        for row in _rows(Path(path or PAPER_CONTAMINATION_CSV))
    }
