"""MM-NIAH beside MMLongBench's MM-NIAH sets (issue 65, item 4): where the same model's results also hold
MMLongBench's `*niah_mmniah_<task>_<needle>_<length>` tasks, the report sets their scores beside this benchmark's
official score per task and per length bin, one task (text or image needles) to a pair of rows.

They are not the same measurement, and not the same items: MMLongBench's release files are MM-NIAH *test* records
(`NIAH/<task>-<needle>_test_K*.jsonl`) re-cut to its lengths (100-word OBELICS passages and images added or removed
until its own count reaches the length, images resized to a 1024-px longer edge), each id at 6 depths or 3
permutations, under its own prompt and scorers; the MM-NIAH scores here are the validation split's (the test
split's answers are private), each record as released. So the two compare as different samples of the same kinds
of needles, never item by item. The table says so (`tasks/mm_niah/README.md`, *Beside MMLongBench*).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from harness.outputs.results.model_results import ModelResults
from tasks.mm_niah.scoring import LENGTH_LABELS

# MMLongBench's leaf names (tasks/mmlongbench): its versions' prefixes, its short names for MM-NIAH's tasks.
MMLONGBENCH_TASK = re.compile(
    r"^mmlongbench_(?:(v1_1|vlmevalkit_as_paper|vlmevalkit)_)?niah_mmniah_(ret|count|reason)_(text|image)_(\d+[km])$"
)
SETS = {
    None: "MMLongBench (paper)",
    "v1_1": "MMLongBench V1.1",
    "vlmevalkit": "MMLongBench (VLMEvalKit's rows and scorers)",
    "vlmevalkit_as_paper": "MMLongBench (VLMEvalKit's rows, the paper's scorers)",
}
MM_NIAH_TASK = {"ret": "retrieval", "count": "counting", "reason": "reasoning"}
PerLength = Callable[[ModelResults, str], list[float] | None]


def length_key(label: str) -> int:
    """`8k` -> 8, `1m` -> 1024: MM-NIAH's bins and MMLongBench's lengths on one axis."""
    return int(label[:-1]) * (1024 if label.endswith("m") else 1)


def mmlongbench_scores(data: ModelResults) -> dict[str, dict[str, dict[str, float]]]:
    """MM-NIAH task (`retrieval_text`) -> MMLongBench set -> length -> its `score` (0-100), from the newest run
    that has it."""
    found: dict[str, dict[str, dict[str, float]]] = {}
    for _, run in data.runs:  # oldest first: a later run's value replaces an earlier one
        results: dict[str, Any] = dict(run.get("results") or {})
        for name, entry in results.items():
            match = MMLONGBENCH_TASK.match(name)
            value = entry.get("score,none") if isinstance(entry, dict) else None
            if match and isinstance(value, int | float) and not math.isnan(value):
                version, task, needle, length = match.groups()
                by_set = found.setdefault(f"{MM_NIAH_TASK[task]}_{needle}", {})
                by_set.setdefault(SETS[version], {})[length] = float(value)
    return found


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}"


def _mm_niah_row(data: ModelResults, task: str, lengths: list[str], per_length: PerLength) -> list[str]:
    """MM-NIAH's row: the validation split's official score and per-bin scores, or why there are none."""
    val = f"mm_niah_{task}_val"
    score = data.results.get(val, {}).get("score,none")
    if isinstance(score, float) and not math.isnan(score):
        by_bin = dict(zip(LENGTH_LABELS, per_length(data, val) or [], strict=False))
        n = data.counters(val).get("n_scored", "")
        cells = [_pct(100 * by_bin[k]) if k in by_bin else "" for k in lengths]
        return [task, f"MM-NIAH val, as released (n={n})", f"{100 * score:.1f}", *cells]
    why = "N/A: the test split's answers are private" if f"mm_niah_{task}_test" in data.results else "not run"
    return [task, f"MM-NIAH val ({why})", "", *[""] * len(lengths)]


def beside_lines(data: ModelResults, per_length: PerLength) -> list[str]:
    """The side-by-side table, or nothing where the model has no MMLongBench MM-NIAH run. `per_length(data, task)`
    gives MM-NIAH's official per-bin scores (0-1, in `LENGTH_LABELS` order) or None."""
    found = mmlongbench_scores(data)
    if not found:
        return []
    theirs = {length for by_set in found.values() for values in by_set.values() for length in values}
    lengths = sorted(set(LENGTH_LABELS) | theirs, key=length_key)
    order = [f"{t}_{n}" for n in ("text", "image") for t in MM_NIAH_TASK.values()]
    lines = [
        "### MM-NIAH beside MMLongBench's MM-NIAH sets (same model, %)",
        "",
        "The same kinds of needles, not the same items, measured two ways. *MM-NIAH*: validation records as "
        "released (1K-72K tokens by MM-NIAH's count), the official prompt and `is_correct` (soft accuracy for "
        "counting); *overall* is the paper's score, a length column K its bin from K up to its next bin "
        f"({', '.join(k.upper() for k in LENGTH_LABELS)}; the mean over five depth bins, an empty cell 0). "
        "*MMLongBench*: its release's records of MM-NIAH's "
        "**test** split, each haystack rebuilt to the column's length by MMLongBench's own count, its own prompt "
        "and scorers (the paper's: SubEM, the option letter, the total count's accuracy), `score` per length. "
        "MM-NIAH's K is 1,000 tokens, MMLongBench's 1,024. The splits "
        "differ, so no item is shared: compare the two as different samples.",
        "",
        "| task | set | overall | " + " | ".join(k.upper() for k in lengths) + " |",
        "|---|---|---|" + "---|" * len(lengths),
    ]
    for task in sorted(found, key=order.index):
        lines.append("| " + " | ".join(_mm_niah_row(data, task, lengths, per_length)) + " |")
        for name, values in sorted(found[task].items(), key=lambda item: list(SETS.values()).index(item[0])):
            cells = [_pct(values.get(k)) for k in lengths]
            lines.append("| " + " | ".join([task, f"{name}, fitted to each length", "", *cells]) + " |")
    return [*lines, ""]
