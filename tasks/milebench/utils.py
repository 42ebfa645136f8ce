"""MileBench task hooks: each row scored by its subset's official scorer (`scoring.py`), the random baseline's
guess, and the per-level aggregation.

Every metric is on the paper's 0-100 scale (accuracy x 100, ROUGE-L F x 100). `score` is the subset's Table 6
metric, also written under its official name (`accuracy` or `rouge_l_f`); the groups aggregate `score`.
`score_few`, `score_medium` and `score_many` are `score` over the rows of one image-count level (the official
`image_quantity_level-Accuracy`); a row of another level leaves them empty, and a task with no row of a level
reports N/A there (the official code writes 0).
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Sequence
from typing import Any

from tasks.milebench import scoring

LEVEL_METRICS = {"Few": "score_few", "Medium": "score_medium", "Many": "score_many"}


def row_scores(doc: dict[str, Any], response: str) -> dict[str, float | None]:
    """The official decision on one row, on the 0-100 scale, under the metric names of its family."""
    family = doc["metric"]
    if family == "multiple_choice":
        correct, _ = scoring.multiple_choice(response, doc["answer"], doc["choices"])
        value = 100.0 * correct
        out: dict[str, float | None] = {
            "accuracy": value,
            "accuracy_empty_is_wrong": 100.0
            * scoring.multiple_choice_empty_is_wrong(response, doc["answer"], doc["choices"]),
        }
    elif family == "rouge_l":
        value = 100.0 * scoring.rouge_l_f(response, doc["answer"])
        out = {"rouge_l_f": value}
    elif family == "needle":
        value = 100.0 * scoring.needle(response, doc["answer"])
        out = {"accuracy": value}
    elif family == "substring":
        value = 100.0 * scoring.substring(response, doc["answer"])
        out = {"accuracy": value}
    else:
        raise ValueError(f"row {doc.get('id')!r}: unknown MileBench scorer {family!r}")
    out["score"] = value
    for level, name in LEVEL_METRICS.items():
        out[name] = value if doc["image_quantity_level"] == level else None
    return out


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, float | None]:
    return row_scores(doc, results[0])


def mean_of_present(values: Sequence[float | None]) -> float:
    """The mean of the rows that have a value (a level's rows); NaN (N/A) when none has."""
    present = [v for v in values if v is not None]
    return math.fsum(present) / len(present) if present else math.nan


# ------------------------------------------------------------------------------ random baseline

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")


def random_answer(doc: dict[str, Any], rng: random.Random) -> str:
    """A guess drawn from what the row shows, in the form its scorer reads.

    Multiple choice: one option, as its letter and text where the prompt letters them (GPR1200: the text); needle:
    seven random digits; ROUGE-L and MMCoQA: a few words of the row's context.
    """
    family = doc["metric"]
    if family == "multiple_choice":
        choices = doc["choices"] or [""]
        index = rng.randrange(len(choices))
        lettered = "\nA. " in doc["context"]
        return f"{scoring.option_key(index)}. {choices[index]}" if lettered else str(choices[index])
    if family == "needle":
        return "".join(rng.choice("0123456789") for _ in range(7))
    words = _WORD.findall(doc["context"].replace("<image>", " ")) or ["unknown"]
    return " ".join(rng.choice(words) for _ in range(8 if family == "rouge_l" else 3))
