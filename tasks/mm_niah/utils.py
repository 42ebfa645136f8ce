"""MM-NIAH's task hooks: the official scorer per row (`scoring.py`), the official heat-map score, the random guess.

Each row's reply is `.strip()`ped as `eval_internvl.py` does before writing it, then scored by `is_correct`.
Metrics: `acc`, the mean of the per-row decisions (soft accuracy for counting); `score`, the paper's number for a
task: the mean over the eleven length bins of the official per-bin scores (each the mean over five depth bins,
an empty cell counting 0, records under 1K left out), with its own interval (`score_interval.py`); and the heat map itself, `acc_by_length_depth` (each
cell's plain accuracy, keyed `length|depth`).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from typing import Any

from harness.running.task.metric_errors import with_interval
from tasks.mm_niah.score_interval import score_interval
from tasks.mm_niah.scoring import DEPTH_LABELS, LENGTH_LABELS, heat_cell, is_correct, length_scores


def cell_label(x: int, y: int) -> str:
    """A heat-map cell's key: the length bin's label (`<1k` for bin 0) and the depth bin's."""
    length = LENGTH_LABELS[x - 1] if x > 0 else "<1k"
    return f"{length}|{DEPTH_LABELS[min(y, len(DEPTH_LABELS) - 1)]}"


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
    """The official decision on the stripped reply; a row without an answer (the test split's are private) is
    N/A: the reply is kept in the samples for the authors' leaderboard, nothing is scored."""
    if doc["answer_kind"] == "hidden":
        return {"acc": math.nan, "score": [], "acc_by_length_depth": []}
    response = results[0].strip()
    value = float(is_correct(json.loads(doc["answer"]), response, counting=doc["task"] == "counting"))
    x, y = heat_cell(doc["context_length"], doc["placed_depth"])
    return {"acc": value, "score": [x, y, value], "acc_by_length_depth": [[cell_label(x, y), value]]}


def score_interval_of_rows(
    cells: Sequence[Sequence[float]], keys: Sequence[tuple[str, ...]]
) -> tuple[float, float] | None:
    """The score's interval (`score_interval.py`) over the rows' cluster keys (the haystack)."""
    return score_interval(cells, ["|".join(k) for k in keys])


@with_interval(score_interval_of_rows)
def official_score(cells: Sequence[Sequence[float]]) -> float:
    """The task's official score: the mean of `length_scores` over the eleven length bins; its interval the one of
    `score_interval.py` (for the score of the cells the rows fill), recorded beside its bootstrap errors."""
    scored = [cell for cell in cells if cell]  # a row without an answer has none
    if not scored:
        return math.nan
    scores = length_scores([(int(x), int(y), float(v)) for x, y, v in scored])
    return sum(scores) / len(scores)


def random_answer(doc: dict[str, Any], rng: random.Random) -> str:
    """A guess in the form the scorer reads, from what the row shows: an option's letter; a list of small counts,
    one per needle; a word of the context."""
    options = len(doc["choices"]) or doc["num_choice_images"]
    if options:
        return chr(ord("A") + rng.randrange(options))
    if doc["task"] == "counting":
        return json.dumps([rng.randrange(4) for _ in range(max(1, len(doc["needles"])))])
    words = [w.strip(".,;:!?") for w in doc["context"].replace("<image>", " ").split()]
    return rng.choice([w for w in words if w] or ["none"])
