"""`harness power`'s numbers: per task, the minimum detectable effect at its rows and the rows (and items) a given
difference needs, with the design effect of the task's clusters, paired or not (formulas: docs/statistics.md,
"Power before a run").

Two sources, one formula:

- **a build, before any run** (`from_build`): the task's rows and their cluster keys are known from the data alone
  (its `cluster_key:`), so the design is known; the per-row standard deviation of the score and the correlation of
  linked rows (ρ, the intra-cluster correlation) are assumed (`--score p` for a 0/1 score at p, or `--sd`; `--icc`);
  the design effect is 1 + ρ · 2L/n (L linked pairs of rows: 1 + (m̄ - 1)ρ for clusters of m̄ = Σm²/Σm rows).
- **a finished run** (`from_errors`): each metric's plain and clustered errors as the task's aggregation computes
  them from its journal; the per-row standard deviation is the plain error · √n, the design effect is measured, and
  the intra-cluster correlation it implies is (deff - 1) / (2L/n).

Then, at two-sided level α and power 1 - β (z = z_{1-α/2} + z_{1-β}): MDE = z · sqrt(deff · σ_c² / n) and
n = deff · (z · σ_c / δ)², σ_c the per-row standard deviation of what is compared: one run against a fixed number
(a paper's), σ; two runs on the same rows (paired), σ · sqrt(2(1 - r)) at per-row correlation r; two runs on
different rows, σ · √2. From a build or one run, a paired difference's design effect is taken to be one run's and r is
assumed (`--correlation`), and the header says so: where the two models share an item effect the difference's design
effect is smaller than one run's, where each has its own it can be larger (issue 63). From a **finished pair**
(`from_pair`, `harness power --pair COMPARE_JSON`: two runs compared by `harness compare`), both are measured, and the
MDE is the one `harness compare` prints for the pair (`paired_mde`: z times the difference's one error,
`comparisons.clustered_se`: the largest of its plain, CR1 and CR2 errors), the rows needed n · (MDE / δ)²; σ_c shown is
the difference's own per-row sd (its plain error · √n), r each row's Pearson correlation. From a build or one run, a
design effect below 1 (an estimate's noise) is taken as 1.

One unit in every mode (issue 63 item 5): `--effect`, the sd and the MDE are in points of the 0-100 scale report.md
shows, whatever scale a benchmark records its scores on (a proportion's sd · 100, a percentage's as it is): `--effect
3` is 3 points for MMNeedle's proportions and MMLongBench's percentages alike. A metric that is no proportion (no
scale declared, values outside [0, 1]) keeps its own units, and its row says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypedDict

from harness.uncertainty.comparisons import clustered_se
from harness.uncertainty.power import (
    bernoulli_sd,
    comparison_sd,
    design_effect_of_design,
    icc_of_design,
    links_per_row,
    minimum_detectable_effect,
    paired_mde,
    sample_size,
)
from harness.uncertainty.variance import ClusterDesign, ClusteredError

Number = float | str  # NaN written "N/A"
Comparison = Literal["paired", "unpaired", "one_sample"]
NAN = math.nan
POINTS = "points (0-100)"
AS_RECORDED = "its own units (no proportion)"
PERCENT = 100.0
NO_DESIGN_EFFECT = "design effect not estimable (one cluster): taken as 1"


def in_points(scale: int | None) -> float:
    """The factor that takes a metric recorded on `scale` (1: a proportion, 100: a percentage) to points on 0-100;
    1 for a metric on no such scale (None), kept in its own units."""
    return PERCENT / scale if scale else 1.0


@dataclass(frozen=True)
class PowerOptions:
    effect: float = 3.0  # the difference to detect, in points on 0-100 (lmms-eval's 0.03 of a proportion)
    alpha: float = 0.05
    power: float = 0.8
    comparison: Comparison = "paired"
    correlation: float = 0.5  # per-row correlation of two paired runs (lmms-eval's default)
    icc: float = 0.5  # a build's assumed correlation of linked rows
    score: float = 0.5  # a build's assumed 0/1 score (its sd is the largest at 0.5)
    sd: float | None = None  # a build's assumed per-row sd in points, instead of `score`


class PowerRow(TypedDict):
    benchmark: str  # the rows are printed grouped by it
    task: str
    metric: str | None  # None: from a build (no metric: its sd assumed)
    n: int  # rows
    n_clusters: int  # clusters (a crossed design: its connected components)
    rows_per_cluster: Number  # n / n_clusters
    links_per_row: Number  # 2L/n: linked pairs per row, twice (m̄ - 1 for a partition)
    overlap: bool  # a crossed design
    icc: Number  # assumed (a build) or estimated (a run)
    design_effect: Number
    sd: Number  # per-row standard deviation of one run's score, in `unit`
    unit: str  # POINTS, or AS_RECORDED for a metric that is no proportion
    comparison_sd: Number  # of what is compared (paired: sd · sqrt(2(1 - r)))
    mde: Number  # the minimum detectable effect at these n rows
    rows_needed: int | None  # for `effect`; null: not computable (no spread, or no effect)
    clusters_needed: int | None  # rows_needed / rows_per_cluster, rounded up: the items to sample
    note: str


class PowerFile(TypedDict):
    format: Literal["mmlongeval-power/1"]
    source: Literal["build", "run", "pair"]
    comparison: Comparison
    effect: float
    alpha: float
    power: float
    correlation: float | None  # paired only
    icc: float | None  # a build's assumption; null: estimated per row from a run
    sd: float | None  # a build's assumed per-row sd; null: estimated from a run
    rows: list[PowerRow]
    not_analysed: dict[str, str]  # task -> why


def _compared_sd(sd: float, options: PowerOptions) -> float:
    if options.comparison == "one_sample":
        return comparison_sd(sd)
    return comparison_sd(sd, sd, options.correlation, paired=options.comparison == "paired")


def power_row(
    benchmark: str,
    task: str,
    metric: str | None,
    design: ClusterDesign,
    sd: float,
    design_effect: float,
    icc: float,
    options: PowerOptions,
    note: str = "",
    unit: str = POINTS,
) -> PowerRow:
    """One row: the MDE at the design's n and the rows and clusters `options.effect` needs."""
    compared = _compared_sd(sd, options) if math.isfinite(sd) else NAN
    if not compared > 0 and not note:
        note = "no spread: every row scored alike, so the run says nothing of the variance"
    shape = (design.n, design.n_clusters, links_per_row(design), design.overlap)
    return _row(benchmark, task, metric, shape, (sd, compared, design_effect, icc), options, note, unit)


def _row(
    benchmark: str,
    task: str,
    metric: str | None,
    shape: tuple[int, int, float, bool],
    spread: tuple[float, float, float, float],
    options: PowerOptions,
    note: str,
    unit: str,
) -> PowerRow:
    """A row from its rows, clusters, links per row and overlap (`shape`) and its sd, compared sd, design effect and
    icc (`spread`): the MDE at n rows, and the rows and clusters `options.effect` needs (NaN, None, None: not
    computable)."""
    (n, clusters, links, overlap), (sd, compared, design_effect, icc) = shape, spread
    deff = max(design_effect, 1.0) if math.isfinite(design_effect) else NAN
    mde, rows_needed, clusters_needed = NAN, None, None
    if math.isfinite(deff) and compared > 0:
        mde = minimum_detectable_effect(n, compared, design_effect=deff, alpha=options.alpha, power=options.power)
        if options.effect != 0:
            rows_needed = sample_size(
                options.effect, compared, design_effect=deff, alpha=options.alpha, power=options.power
            )
            clusters_needed = math.ceil(rows_needed * clusters / n) if n else None
    return PowerRow(
        benchmark=benchmark,
        task=task,
        metric=metric,
        n=n,
        n_clusters=clusters,
        rows_per_cluster=n / clusters if clusters else NAN,
        links_per_row=links,
        overlap=overlap,
        icc=icc,
        design_effect=deff,
        sd=sd,
        unit=unit,
        comparison_sd=compared,
        mde=mde,
        rows_needed=rows_needed,
        clusters_needed=clusters_needed,
        note=note,
    )


def from_pair(
    benchmark: str, task: str, metric: str, error: ClusteredError, correlation: float, options: PowerOptions,
    scale: int | None,
) -> PowerRow:  # fmt: skip
    """A task's metric from a finished pair (`error`: the paired difference's errors, as `harness compare` gives
    them): the MDE `harness compare` gives the pair (`paired_mde`, in points), the rows a difference needs from the
    same clustered error (n · (MDE / effect)²), the difference's own per-row sd and design effect as measured,
    `correlation` the per-row r."""
    points = in_points(scale)
    compared = error.stderr * math.sqrt(error.n) * points if math.isfinite(error.stderr) else NAN
    clustered = clustered_se(error) * points  # the row's one error, as harness compare's MDE
    note = f"measured from the pair: per-row r {correlation:.2f}" if math.isfinite(correlation) else ""
    if not compared > 0:
        note = "no spread: the two runs' rows differ alike everywhere"
    elif not math.isfinite(clustered):
        note = "not estimable: no clustered error (one cluster), as harness compare says"
    shape = (error.n, error.n_clusters, NAN, error.overlap)
    spread = (NAN, clustered * math.sqrt(error.n), 1.0, NAN)  # the sd the clustered error implies, deff in it
    row = _row(benchmark, task, metric, shape, spread, options, note, POINTS if scale else AS_RECORDED)
    row["design_effect"], row["comparison_sd"] = error.design_effect, compared
    row["mde"] = paired_mde(clustered, options.alpha, options.power)
    return row


def from_build(benchmark: str, task: str, design: ClusterDesign, options: PowerOptions) -> PowerRow:
    """A task's row before any run: its design from the build's rows, the sd (in points) and ρ assumed."""
    deff = design_effect_of_design(design, options.icc)
    return power_row(benchmark, task, None, design, assumed_sd(options), deff, options.icc, options)


def assumed_sd(options: PowerOptions) -> float:
    """A build's per-row sd in points: `--sd`, else a 0/1 score's at `--score`."""
    return options.sd if options.sd is not None else PERCENT * bernoulli_sd(options.score)


def from_errors(
    benchmark: str,
    task: str,
    metric: str,
    design: ClusterDesign,
    error: ClusteredError,
    options: PowerOptions,
    scale: int | None,
) -> PowerRow:
    """A task's metric after a run: the sd and design effect its errors measure, the ρ they imply; the sd in points
    where the metric is on a `scale` (1 or 100), else in its own units."""
    sd = error.stderr * math.sqrt(error.n) * in_points(scale) if math.isfinite(error.stderr) else NAN
    deff, note = error.design_effect, ""
    if not math.isfinite(deff) and sd > 0:
        deff, note = 1.0, NO_DESIGN_EFFECT
    icc = icc_of_design(design, error.design_effect)
    return power_row(benchmark, task, metric, design, sd, deff, icc, options, note, POINTS if scale else AS_RECORDED)


def power_file(
    source: Literal["build", "run", "pair"],
    rows: Sequence[PowerRow],
    not_analysed: dict[str, str],
    options: PowerOptions,
) -> PowerFile:
    build = source == "build"
    return PowerFile(
        format="mmlongeval-power/1",
        source=source,
        comparison=options.comparison,
        effect=options.effect,
        alpha=options.alpha,
        power=options.power,
        correlation=options.correlation if options.comparison == "paired" and source != "pair" else None,
        icc=options.icc if build else None,
        sd=assumed_sd(options) if build else None,
        rows=list(rows),
        not_analysed=not_analysed,
    )
