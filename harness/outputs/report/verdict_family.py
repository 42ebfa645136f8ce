"""One table's verdicts beside a paper, judged together (`Family`): each cell's mark from its `Comparison`, the ✗
marks adjusted for the number of cells (Holm by default, Benjamini-Hochberg with `harness report --adjust bh`), and
the tally under the table with the number of cells, the count of ✗ chance alone gives and the probability of seeing
as many (docs/statistics.md, "Multiplicity").

A ✓ is not adjusted: claiming that every ✓ cell agrees is an intersection-union test, valid at its level without
adjustment (Berger 1982). A ≈ cell prints beside its mark the smallest gap it rules out (`Comparison.rules_out_text`).
A cell's mark is known once its whole table is: a section adds each cell (`Family.add`, whose `Cell` prints as the
cell's text and mark) and prints them after the last one is added.
"""

from __future__ import annotations

import contextlib
import math
from collections import Counter
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from harness.outputs.report.verdict import (
    AGREE,
    ALPHA,
    DISAGREE,
    INCONCLUSIVE,
    MARKS,
    NOT_COMPARABLE,
    Comparison,
    Mode,
)
from harness.uncertainty.comparisons import adjust_pvalues, chance_of_at_least, expected_by_chance

# `harness report --adjust`: the name a user types -> (statsmodels' method, how the tally names it)
ADJUSTMENTS = {
    "holm": ("holm", "Holm-adjusted (family-wise 5 %)"),
    "bh": ("fdr_bh", "Benjamini-Hochberg-adjusted (false discovery rate 5 %)"),
}
_ADJUSTMENT: ContextVar[str] = ContextVar("verdict_adjustment", default="holm")


@contextlib.contextmanager
def adjusted_by(method: str) -> Iterator[None]:
    """Within the block, tables adjust their ✗ marks by `method` (a key of `ADJUSTMENTS`)."""
    if method not in ADJUSTMENTS:
        raise ValueError(f"unknown adjustment {method!r}; known: {', '.join(ADJUSTMENTS)}")
    token = _ADJUSTMENT.set(method)
    try:
        yield
    finally:
        _ADJUSTMENT.reset(token)


@dataclass(frozen=True)
class Verdict:
    kind: str
    why: str = ""  # for `not comparable`: what is missing
    p_adjusted: float = math.nan

    @property
    def mark(self) -> str:
        return MARKS[self.kind]


def judge(comparisons: list[Comparison], method: str = "holm") -> list[Verdict]:
    """Each comparison's verdict, its test of disagreement adjusted over the comparable ones by `method`."""
    tested = [i for i, c in enumerate(comparisons) if c.comparable]
    adjusted = adjust_pvalues([comparisons[i].p_disagree for i in tested], ADJUSTMENTS[method][0])
    p_of = dict(zip(tested, (float(p) for p in adjusted), strict=True))
    verdicts = []
    for i, comparison in enumerate(comparisons):
        if not comparison.comparable:
            verdicts.append(Verdict(NOT_COMPARABLE, comparison.why))
        elif comparison.equivalent:
            verdicts.append(Verdict(AGREE, p_adjusted=p_of[i]))
        elif p_of[i] < ALPHA:
            verdicts.append(Verdict(DISAGREE, p_adjusted=p_of[i]))
        else:
            verdicts.append(Verdict(INCONCLUSIVE, p_adjusted=p_of[i]))
    return verdicts


class Family:
    """The cells of one table, judged together once the last is added."""

    def __init__(self, mode: Mode | None = None, method: str | None = None) -> None:
        self.mode = mode
        self.method = method or _ADJUSTMENT.get()
        self.comparisons: list[Comparison] = []
        self._verdicts: list[Verdict] | None = None

    def add(self, comparison: Comparison, decimals: int = 1) -> Cell:
        if self._verdicts is not None:
            raise RuntimeError("a cell added to a table whose verdicts were already given")
        self.comparisons.append(comparison)
        return Cell(self, len(self.comparisons) - 1, decimals)

    def verdicts(self) -> list[Verdict]:
        if self._verdicts is None:
            self._verdicts = judge(self.comparisons, self.method)
        return self._verdicts

    def tally(self) -> list[str]:
        """Two lines under the table: the marks counted, and what chance alone gives."""
        verdicts = self.verdicts()
        counts = Counter(v.kind for v in verdicts)
        why = Counter(v.why for v in verdicts if v.kind == NOT_COMPARABLE and v.why)
        text = " · ".join(f"{MARKS[k]} {k} {counts.get(k, 0)}" for k in (AGREE, DISAGREE, INCONCLUSIVE, NOT_COMPARABLE))
        if why:
            text += " (not comparable: " + "; ".join(f"{reason} ({n})" for reason, n in why.most_common()) + ")"
        return [f"Verdict beside the paper: {text}.", "", self.chance_line(), ""]

    def chance_line(self) -> str:
        """The number of cells tested, the ✗ chance alone gives, the chance of as many, and the adjustment."""
        tested = [c for c in self.comparisons if c.comparable]
        if not tested:
            return "Chance: no cell could be tested."
        m = len(tested)
        raw = sum(1 for c in tested if c.p_disagree < ALPHA)
        said = (
            f"Chance: {m} cell{'s' if m != 1 else ''} tested at 5 % each, so about "
            f"{expected_by_chance(m, ALPHA):.1f} ✗ would come from chance alone where no cell truly disagrees; "
        )
        if raw:
            said += (
                f"{raw} reached 5 % before adjustment (the chance of {raw} or more by chance alone: "
                f"{chance_of_at_least(raw, m, ALPHA):.2g}); "
            )
        else:
            said += "none reached 5 % before adjustment; "
        return said + f"the ✗ marks are {ADJUSTMENTS[self.method][1]}."


@dataclass(frozen=True)
class Cell:
    """A table cell: its comparison's text and, once the table is complete, its mark."""

    family: Family
    index: int
    decimals: int = 1

    @property
    def comparison(self) -> Comparison:
        return self.family.comparisons[self.index]

    @property
    def verdict(self) -> Verdict:
        return self.family.verdicts()[self.index]

    @property
    def mark(self) -> str:
        """The verdict's mark; beside ≈ the smallest gap the cell rules out (`≈ within ±6.5`), where it has one."""
        verdict = self.verdict
        within = self.comparison.rules_out_text(self.decimals) if verdict.kind == INCONCLUSIVE else ""
        return f"{verdict.mark} {within}" if within else verdict.mark

    def __str__(self) -> str:
        return f"{self.comparison.text(self.decimals)} {self.mark}"
