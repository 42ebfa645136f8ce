"""Whether a number of ours agrees with the one a paper published beside it, and a tally per table.

Ours agrees when the two differ by no more than what sampling explains at 95%: |ours - paper| <= 1.96 * sqrt(se_ours²
+ se_paper²), where se_ours is the run's own standard error (the results file's `_stderr`) and se_paper the standard
error of a mean of values in [0, 1] over the paper's sample size: sqrt(p (1 - p) / n). For a proportion (accuracy,
exact match) that is its standard error; for a bounded score with partial credit (ROUGE, ANLS) it is the largest
standard error a mean of that value can have, so the test leans to "agree". A cell is *not comparable* when the
run's data is not the paper's (synthetic, limited: `harness.outputs.provenance`), or when a side has no value, no
standard error, or no sample size.

A correlation (LoCoVQA's r² of the decay fit) is compared the same way on Fisher's z = atanh(r), whose standard
error over n points is 1 / sqrt(n - 3).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.outputs.provenance import TaskData

Z95 = 1.96
AGREE, DISAGREE, NOT_COMPARABLE = "agree", "disagree", "not comparable"
MARKS = {AGREE: "✓", DISAGREE: "✗", NOT_COMPARABLE: "–"}


@dataclass(frozen=True)
class Verdict:
    kind: str
    why: str = ""  # for `not comparable`: what is missing

    @property
    def mark(self) -> str:
        return MARKS[self.kind]


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def compare(
    ours: object,
    ours_se: object,
    paper: object,
    paper_n: int | None,
    scale: float = 1.0,
    data_problem: str | None = None,
) -> Verdict:
    """Our value (with its standard error) against the paper's (over `paper_n` samples); both on a 0-`scale` scale
    (1 for proportions, 100 for the papers' percentages). `data_problem`: why the run's data is not the paper's."""
    if data_problem:
        return Verdict(NOT_COMPARABLE, data_problem)
    ours_v, ours_s, paper_v = _number(ours), _number(ours_se), _number(paper)
    if ours_v is None or paper_v is None:
        return Verdict(NOT_COMPARABLE, "no value" if ours_v is None else "no published value")
    if ours_s is None:
        return Verdict(NOT_COMPARABLE, "no standard error")
    if not paper_n:
        return Verdict(NOT_COMPARABLE, "the paper's sample size is not known")
    p = min(max(paper_v / scale, 0.0), 1.0)
    paper_s = math.sqrt(p * (1 - p) / paper_n) * scale
    allowed = Z95 * math.sqrt(ours_s**2 + paper_s**2)
    return Verdict(AGREE if abs(ours_v - paper_v) <= allowed + 1e-12 else DISAGREE)


def compare_correlation(
    ours_r: float | None, ours_points: int, paper_r: float | None, paper_points: int, data_problem: str | None = None
) -> Verdict:
    """Two correlation coefficients (signed r) of fits over `ours_points` and `paper_points` points."""
    if data_problem:
        return Verdict(NOT_COMPARABLE, data_problem)
    if ours_r is None or paper_r is None or math.isnan(ours_r) or math.isnan(paper_r):
        return Verdict(NOT_COMPARABLE, "no value" if ours_r is None or math.isnan(ours_r) else "no published value")
    if ours_points <= 3 or paper_points <= 3:
        return Verdict(NOT_COMPARABLE, "too few points for a standard error")

    def z(r: float) -> float:
        return math.atanh(max(-0.999999, min(0.999999, r)))

    allowed = Z95 * math.sqrt(1 / (ours_points - 3) + 1 / (paper_points - 3))
    return Verdict(AGREE if abs(z(ours_r) - z(paper_r)) <= allowed else DISAGREE)


def tally(verdicts: Iterable[Verdict]) -> str:
    """`agree 3 · disagree 1 · not comparable 2 (synthetic images ...)`: one line under a table."""
    found = list(verdicts)
    counts = Counter(v.kind for v in found)
    why = Counter(v.why for v in found if v.kind == NOT_COMPARABLE and v.why)
    text = " · ".join(f"{MARKS[k]} {k} {counts.get(k, 0)}" for k in (AGREE, DISAGREE, NOT_COMPARABLE))
    if why:
        text += " (not comparable: " + "; ".join(f"{reason} ({n})" for reason, n in why.most_common()) + ")"
    return f"Verdict beside the paper: {text}."


def explanation() -> str:
    return (
        "✓ agrees with the paper within sampling error (95%: our standard error and the paper's sample size), "
        "✗ does not, – not comparable."
    )


def data_problem(tasks: Iterable[TaskData]) -> str | None:
    """Why these tasks' data is not the paper's (`TaskData`s of `harness.outputs.provenance`), in short, or None."""
    tasks = list(tasks)
    if not tasks:
        return "the data's origin is not recorded"
    concerns = [c for t in tasks for c in t.origin.concerns()]
    if not concerns:
        return None
    first = concerns[0]
    return "data not the paper's: " + (first if len(set(concerns)) == 1 else f"{first}, ...")
