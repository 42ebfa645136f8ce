"""LoCoVQA's results read as curves: each task, mode and metric (the paper's rows of Tables 2-3, then ours) as
accuracy against context length with the random baseline, for `report.py`'s tables and `figures.py`'s plots."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tasks.locovqa.decay import FORMS, Fit, fit, sub_chance

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
DEPTHS = (0.0, 0.25, 0.5, 0.75, 1.0)
# The tasks whose uniform guess has a level (MMStar: 1 / options; needle: 1 / 10). OK-VQA's open answers and MNIST's
# transcriptions have none their metrics honour (the rows' 0, spec §3.6, is no level: the random baseline scores
# 0.25-0.52 on them), and no chance level is better than a wrong one.
GUESS_LEVELS = frozenset({"mmstar", "needle"})


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
        return bool(self.ys) and bool(self.chance) and sub_chance(self.ys, self.chance)


def metric_value(entry: Mapping[str, object], metric: str) -> float | None:
    return _number(entry.get(f"{metric},none"))


def _number(value: object) -> float | None:
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
                chance = _number(data.reference(name, "chance")) if task in GUESS_LEVELS else None
                if subset is None:
                    value = metric_value(entry, metric)
                else:
                    value = (data.breakdowns.get(name, {}).get(metric, {}).get(subset) or {}).get("mean")
                if value is not None:
                    curve.xs.append(length)
                    curve.ys.append(float(value))
                    curve.chance += [chance] if chance is not None else []
            if len(curve.chance) != len(curve.xs):  # a level at every point, or none drawn
                curve.chance = []
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
            out.append(curve)
    return out
