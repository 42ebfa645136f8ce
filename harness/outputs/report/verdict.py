"""Whether a number of ours agrees with the one a paper published beside it: ✓ / ✗ / ≈ / – per cell, in one of two
modes the run's provenance decides (`mode_of`, from the benchmark's `VerdictRule`), and a tally per table with what
chance alone gives (`harness.outputs.report.verdict_family`). docs/statistics.md gives the reasons.

- **Same items** (the paper's frozen sample: MMLongBench's release, MMNeedle's `--official-metadata`): the paper's
  number is of these very rows, so ours and it differ only as two runs of one model on them do (decoding,
  implementation), not by the sampling of items. The difference is tested against the run-to-run spread the
  benchmark declares with its source (`RunToRun`: the share of rows whose score changes between two runs), its error
  sqrt(discordance x design effect / rows), within the benchmark's tolerance t (two one-sided tests, Schuirmann
  1987): ✓ when the 95 % interval of ours - paper lies inside ±t, ✗ when it lies outside (the test that
  |ours - paper| ≤ t rejects, before the multiplicity adjustment), ≈ otherwise: the interval reaches across an edge
  of the band, or its ✗ did not survive the adjustment. Beside ≈ the cell prints the smallest gap it rules out,
  `within ±g` (`Comparison.rules_out`, g the larger end of the interval in size: the equivalence margin two one-sided
  tests reject at the level ✓ uses), so that ≈ says how large a gap it excludes. The item-sampling error would call
  a faithful reproduction inconclusive at the papers' sizes and let a 10-point gap pass (issue 63).
- **Fresh sample** (our rows are a new draw of the paper's population: a regenerated MMNeedle, LoCoVQA's generator):
  two independent samples, both clustered. Ours on its effective n (`harness.outputs.results.estimates`), the paper's on its
  rows over its design effect, the intra-cluster correlation ours shows carried to the paper's cluster size
  (MMLongBench's n = 600 of ViQuAE is 100 ids of 6 rows). ✗ when the two-proportion score test on the effective n's
  rejects a zero difference, ✓ when Newcombe's interval of the difference lies inside ±t, ≈ otherwise (with the gap
  it rules out, as above).

A bounded fresh-sample score (a proportion, a 0-100 score) is tested on the Wilson score scale, so an interval never
collapses at 0 % or 100 %.
A cell is *not comparable* (–) when the run's data is not the paper's (synthetic, limited: `data_problem`), or a
side has no value or no error.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from harness.outputs.report.run_to_run import MEASURED, RunToRun
from harness.outputs.results.estimates import Estimate
from harness.uncertainty.comparisons import wilson_interval
from harness.uncertainty.power import design_effect_from_icc, icc_from_design_effect

if TYPE_CHECKING:
    from harness.outputs.results.provenance import DataOrigin, TaskData

ALPHA = 0.05
LEVEL = 0.95
SAME_ITEMS, FRESH_SAMPLE = "same items", "fresh sample"
AGREE, DISAGREE, INCONCLUSIVE, NOT_COMPARABLE = "agree", "disagree", "inconclusive", "not comparable"
MARKS = {AGREE: "✓", DISAGREE: "✗", INCONCLUSIVE: "≈", NOT_COMPARABLE: "–"}


# No paper publishes how far two of its runs differ; until two runs of one model are compared (`harness compare
# seed1/ seed2/` gives each metric's discordant rows), the benchmarks that judge the same items declare this.
ASSUMED_RUN_TO_RUN = RunToRun(
    0.05,
    "assumed, not measured: greedy decoding of one checkpoint changes a few % of answers between backends and "
    "library versions, and 5 % of rows is taken as a generous figure; two runs of one model compared with "
    "`harness compare` measure it",
)


@dataclass(frozen=True)
class VerdictRule:
    """A benchmark's declaration of how its numbers meet the paper's (`ReportHooks.verdicts`): the tolerance (in the
    units its report shows: percentage points on 0-100, or r²) and why, and which data are the paper's own items
    (`same_items(origin)`: the reason, or None for a fresh sample, said by `fresh`)."""

    tolerance: float
    why_tolerance: str
    same_items: Callable[[DataOrigin], str | None]
    fresh: str
    run_to_run: RunToRun | None = ASSUMED_RUN_TO_RUN  # a benchmark with a measured figure declares its own


@dataclass(frozen=True)
class Mode:
    """How one model's cells of a benchmark are judged: `kind` (`SAME_ITEMS`, `FRESH_SAMPLE`), why, and `problem`
    when the data is not the paper's at all (every cell not comparable)."""

    kind: str
    why: str
    tolerance: float
    problem: str | None = None
    run_to_run: RunToRun | None = None  # what separates two runs of the same rows (the same-items test's spread)


def data_problem(tasks: Iterable[TaskData]) -> str | None:
    """Why these tasks' data is not the paper's (`TaskData`s of `harness.outputs.results.provenance`), in short, or None."""
    tasks = list(tasks)
    if not tasks:
        return "the data's origin is not recorded"
    concerns = [c for t in tasks for c in t.origin.concerns()]
    if not concerns:
        return None
    first = concerns[0]
    return "data not the paper's: " + (first if len(set(concerns)) == 1 else f"{first}, ...")


def mode_of(rule: VerdictRule, tasks: Iterable[TaskData]) -> Mode:
    """The mode of these tasks' cells: same items when the rule finds the paper's items in every task's data, else
    a fresh sample (with the problem, if the data is not the paper's)."""
    tasks = list(tasks)
    problem = data_problem(tasks)
    reasons = [rule.same_items(t.origin) for t in tasks]
    measured = MEASURED.get()
    spread = measured.spread([t.task for t in tasks], rule.run_to_run) if measured else rule.run_to_run
    if tasks and all(reasons):
        return Mode(SAME_ITEMS, str(reasons[0]), rule.tolerance, problem, spread)
    return Mode(FRESH_SAMPLE, rule.fresh, rule.tolerance, problem, spread)


@dataclass(frozen=True)
class Paper:
    """The paper's side of a cell: its number and the rows and clusters (items) behind it (None: as many as rows)."""

    value: float | None
    n: int | None = None
    clusters: int | None = None


@dataclass(frozen=True)
class Comparison:
    """One cell: ours and the paper's, the difference with its 95 % interval, the p value of the test of
    disagreement (before adjustment) and whether equivalence within the tolerance is shown. `why`: what makes the
    cell not comparable."""

    ours: float | None
    paper: float | None
    difference: float = math.nan
    low: float = math.nan
    high: float = math.nan
    p_disagree: float = math.nan
    equivalent: bool = False
    why: str = ""
    # The smallest gap the interval rules out, max(-low, high): any true |ours - paper| of at least it is rejected
    # by two one-sided tests at the level of ✓ (an interval inside ±g). NaN where the verdict has no margin.
    rules_out: float = math.nan

    @property
    def comparable(self) -> bool:
        return not self.why

    def rules_out_text(self, decimals: int = 1) -> str:
        """`within ±6.5`: the smallest gap this cell rules out; empty where it has none."""
        if not self.comparable or not math.isfinite(self.rules_out):
            return ""
        return f"within ±{self.rules_out:.{decimals}f}"

    def difference_text(self, decimals: int = 1) -> str:
        """`-1.8 [-7.1, +3.5]`: ours - paper and its 95 % interval; empty where the cell is not comparable."""
        if not self.comparable:
            return ""
        return f"{self.difference:+.{decimals}f} [{self.low:+.{decimals}f}, {self.high:+.{decimals}f}]"

    def text(self, decimals: int = 1) -> str:
        """`45.2 (47.0) -1.8 [-7.1, +3.5]`: ours, the paper's in parentheses, the difference and its interval."""
        ours = "N/A" if self.ours is None else f"{self.ours:.{decimals}f}"
        paper = "N/A" if self.paper is None else f"{self.paper:.{decimals}f}"
        return f"{ours} ({paper}) {self.difference_text(decimals)}".rstrip()


def _normal():
    from scipy import stats

    return stats.norm


def _not(ours: Estimate, paper: Paper, why: str) -> Comparison:
    return Comparison(ours.value, paper.value, why=why)


def compare(ours: Estimate, paper: Paper, mode: Mode) -> Comparison:
    """Our estimate against the paper's number, both in the same units (`ours.scale` the top of a bounded scale)."""
    if mode.problem:
        return _not(ours, paper, mode.problem)
    if ours.value is None:
        return _not(ours, paper, "no value")
    if paper.value is None:
        return _not(ours, paper, "no published value")
    if mode.kind == SAME_ITEMS:
        return _same_items(ours, paper, mode)
    if not paper.n:
        return _not(ours, paper, "the paper's sample size is not known")
    return _fresh_sample(ours, paper, mode.tolerance) or _not(ours, paper, "no standard error")


def _same_items(ours: Estimate, paper: Paper, mode: Mode) -> Comparison:
    """Ours against the paper's number on the same rows, by the run-to-run spread (`RunToRun.stderr`): a normal
    interval of ours - paper, kept inside what the scale allows, and the test that |ours - paper| ≤ tolerance. The
    rows are ours, else the paper's (the same rows); the design effect ours, else the paper's rows per item (every
    change to an item taken to move all its rows: the largest a partition of that size gives)."""
    assert ours.value is not None and paper.value is not None
    rows = ours.n or paper.n
    if mode.run_to_run is None:
        return _not(ours, paper, "no run-to-run spread declared")
    if not rows or not ours.scale:
        return _not(ours, paper, "no row count" if not rows else "no bounded scale")
    deff = ours.design_effect
    if deff is None and paper.n and paper.clusters:
        deff = paper.n / paper.clusters
    difference = ours.value - paper.value
    stderr = ours.scale * mode.run_to_run.stderr(rows, deff)
    half = float(_normal().ppf(1 - (1 - LEVEL) / 2)) * stderr
    low, high = max(difference - half, -paper.value), min(difference + half, ours.scale - paper.value)
    p_disagree = _beyond_margin(difference, stderr, mode.tolerance, None)
    equivalent = -mode.tolerance < low and high < mode.tolerance  # both one-sided tests reject at 2.5 %
    return Comparison(ours.value, paper.value, difference, low, high, p_disagree, equivalent, rules_out=max(-low, high))


def _beyond_margin(difference: float, stderr: float, margin: float, df: int | None) -> float:
    """The test that |difference| ≤ margin, two-sided over its two edges (a normal or t statistic)."""
    from scipy import stats

    dist = stats.norm if df is None else stats.t(df)
    tail = float(dist.sf((abs(difference) - margin) / stderr))
    return min(1.0, 2 * tail)


def paper_effective_n(ours: Estimate, paper: Paper) -> float | None:
    """The paper's rows over its design effect: 1 + (m - 1)ρ at its cluster size m = n / clusters, ρ the intra-cluster
    correlation our own rows show (`harness.uncertainty.power.icc_from_design_effect`), clamped to [0, 1]; ρ = 1 (every
    cluster one unit) where ours cannot say."""
    if not paper.n:
        return None
    size = paper.n / paper.clusters if paper.clusters else 1.0
    if size <= 1:
        return float(paper.n)
    rho = math.nan
    if ours.design_effect is not None and ours.n and ours.n_clusters:
        rho = icc_from_design_effect(ours.design_effect, np.array([ours.n / ours.n_clusters]))
    rho = 1.0 if not math.isfinite(rho) else min(max(rho, 0.0), 1.0)
    return paper.n / design_effect_from_icc(np.array([size]), rho)


def _fresh_sample(ours: Estimate, paper: Paper, tolerance: float) -> Comparison | None:
    assert ours.value is not None and paper.value is not None
    n_ours, p_ours, scale = ours.interval_n(LEVEL), ours.proportion, ours.scale  # Korn-Graubard df, as the report
    n_paper = paper_effective_n(ours, paper)
    if n_ours is None or p_ours is None or not scale or n_paper is None:
        return None
    p1, p2 = min(max(p_ours, 0.0), 1.0), min(max(paper.value / scale, 0.0), 1.0)
    l1, u1 = wilson_interval(p1, n_ours, LEVEL)
    l2, u2 = wilson_interval(p2, n_paper, LEVEL)
    d = p1 - p2
    # Newcombe (1998), method 10: the difference's interval from the two Wilson intervals, never collapsed
    low = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    pooled = (n_ours * p1 + n_paper * p2) / (n_ours + n_paper)
    spread = math.sqrt(pooled * (1 - pooled) * (1 / n_ours + 1 / n_paper))
    p_disagree = 1.0 if spread == 0 else float(2 * _normal().sf(abs(d) / spread))
    margin = tolerance / scale
    return Comparison(
        ours.value,
        paper.value,
        (p1 - p2) * scale,
        low * scale,
        high * scale,
        p_disagree,
        -margin < low and high < margin,
        rules_out=max(-low, high) * scale,
    )


def compare_direction(
    slope: float | None, low: float | None, high: float | None, p_flat: float, paper_direction: int | None, mode: Mode
) -> Comparison:
    """Our curve's slope (LoCoVQA's within-item decay, with its clustered interval and its p against a flat curve)
    against the direction the paper's significant fit shows (-1 falling, +1 rising; None: no significant fit): ✓ the
    interval lies on the paper's side of 0, ✗ (`p_flat`, adjusted) ours goes the other way, ≈ otherwise."""
    if mode.problem:
        return Comparison(slope, None, why=mode.problem)
    if slope is None or low is None or high is None:
        return Comparison(slope, None, why="no value" if slope is None else "no interval (no item-level rows)")
    if paper_direction is None:
        return Comparison(slope, None, why="the paper's fit is not significant (no direction to meet)")
    equivalent = low > 0 if paper_direction > 0 else high < 0
    against = slope * paper_direction < 0
    return Comparison(slope, float(paper_direction), slope, low, high, p_flat if against else 1.0, equivalent)


def explanation(mode: Mode, scale_name: str = "points") -> str:
    """What the marks of a table in this mode mean, for the line above it: each mark's exact condition."""
    tolerance = f"±{mode.tolerance:g} {scale_name}"
    adjusted = "or its ✗ did not survive the adjustment for the number of cells (the line under the table)"
    within = (
        f"beside ≈, `within ±g` is the smallest gap the cell rules out (g {scale_name}, the larger end of its interval "
        "in size): a true gap of g or more either way is rejected as ✓ rejects the tolerance, a smaller one is not"
    )
    if mode.kind == SAME_ITEMS:
        spread = mode.run_to_run
        how = (
            f"a share of {spread.discordance * 100:.3g} % of rows changing between two runs ({spread.source})"
            if spread
            else "none declared, so no cell is tested"
        )
        test = (
            f"**same items** ({mode.why}): the paper's number is of these very rows, so ours and it differ only as "
            "two runs of one model on them do; the 95 % interval of ours - paper is ±1.96 run-to-run errors, "
            f"sqrt(discordance × design effect / rows), at {how}. ✓ the interval lies inside {tolerance} (two "
            f"one-sided tests at 2.5 % each), ✗ it lies wholly outside {tolerance} (the test that |ours - paper| ≤ "
            f"{mode.tolerance:g} rejects), ≈ neither: the interval reaches across an edge of {tolerance}, {adjusted}; "
            f"{within}"
        )
    else:
        test = (
            f"**fresh sample** ({mode.why}): ours and the paper's are two samples of the same population, each "
            "with its clustered error (the paper's over its items, at the intra-cluster correlation ours shows): "
            f"✓ the 95 % interval of the difference lies inside {tolerance}, ✗ (where not ✓) a two-proportion score "
            f"test on the effective sizes rejects a zero difference, ≈ neither: the interval reaches across an edge "
            f"of {tolerance} and the test does not reject, {adjusted}; {within}"
        )
    return (
        f"Each cell: ours (the paper's) ours - paper [95 % interval], then the verdict, {test}; – not comparable "
        "(the reason is counted under the table)."
    )
