"""The cluster bootstrap: for an aggregate no formula linearizes exactly (a task's own `!function`: MMLongBench's VH
accuracy folded at 50, MileBench's mean over the rows that have a level), and for whole curves (a decay fit over
lengths that share items).

Whole clusters are drawn with replacement, C of C, and the statistic is computed on their rows (Davison and Hinkley
1997, §3.8; Field and Welsh 2007: resampling clusters keeps the dependence inside them). An overlap design is
resampled by its connected components, the units that share nothing (conservative: a component may hold several
items the graph sum of `harness.uncertainty.variance` treats apart). Resampling each row alone gives the i.i.d.
bootstrap, lm-eval's `bootstrap_stderr`. Seeded: the same seed, values and design give the same replicates.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

from harness.uncertainty.variance import ClusterDesign, ClusteredError

T = TypeVar("T")
D = TypeVar("D")  # what a statistic is computed on: a list of rows, or counts of rows drawn
DEFAULT_ITERS = 1000  # lm-eval's default is 100,000 for a handful of metrics; a 1000-draw SE is within ~2 % of it


def value_or_nan(statistic: Callable[[D], float], items: D) -> float:
    """`statistic(items)` as a float; NaN where it raises or is undefined on these items."""
    try:
        return float(statistic(items))
    except (TypeError, ValueError, ArithmeticError, KeyError, IndexError):
        return math.nan


def cluster_bootstrap(
    statistic: Callable[[list[T]], float],
    values: Sequence[T],
    design: ClusterDesign | None,
    iters: int = DEFAULT_ITERS,
    seed: int = 0,
) -> np.ndarray:
    """`iters` replicates of `statistic` over resampled clusters of `design` (None: each row alone, the i.i.d.
    bootstrap). Rows of a drawn cluster keep their order; clusters come in the order drawn.

    Edge cases: no rows or `iters` 0 gives no replicates; one cluster gives replicates all equal to the estimate (a
    bootstrap cannot see between-cluster variation it has one draw of); a replicate on which the statistic raises or
    is undefined is NaN (dropped by `bootstrap_stderr`).
    """
    items = list(values)
    if not items or iters <= 0:
        return np.zeros(0)
    if design is not None and design.n != len(items):
        raise ValueError(f"{len(items)} values for a design of {design.n} rows")
    count = len(items) if design is None else design.n_clusters
    members = None
    if design is not None:  # each cluster's rows, in row order
        order = np.argsort(design.labels, kind="stable")
        members = np.split(order, np.cumsum(design.cluster_sizes())[:-1])
    rng = np.random.default_rng(seed)
    replicates = np.empty(iters)
    for r in range(iters):
        drawn = rng.integers(0, count, size=count)
        index = drawn if members is None else np.concatenate([members[c] for c in drawn])
        replicates[r] = value_or_nan(statistic, [items[i] for i in index])
    return replicates


ROUNDING = 1e-9  # a spread this small relative to the replicates' size is the order of summation, not the data


def bootstrap_stderr(replicates: np.ndarray) -> float:
    """The standard deviation (ddof=1) of the finite replicates; NaN with fewer than two. Replicates equal up to
    rounding (a spread below 1e-9 of their largest size: a metric resting on one row, redrawn in another order)
    give 0.0, not a spread of 1e-14 that would make any difference significant."""
    finite = replicates[np.isfinite(replicates)]
    if len(finite) < 2:
        return math.nan
    spread = float(np.std(finite, ddof=1))
    return 0.0 if spread <= ROUNDING * float(np.abs(finite).max()) else spread


def bootstrap_error(
    statistic: Callable[[list[T]], float],
    values: Sequence[T],
    design: ClusterDesign,
    iters: int = DEFAULT_ITERS,
    seed: int = 0,
) -> ClusteredError:
    """Plain (rows resampled) and clustered (clusters resampled) bootstrap errors of `statistic`, with the same
    seed; the design effect is the ratio of their variances.

    Edge cases: fewer than two rows gives NaN errors; one cluster a NaN clustered error and design effect; no
    variation at all (every replicate equal) errors 0.0 and a NaN design effect; `iters` below 2 NaN errors.
    """
    return _errors(lambda by: bootstrap_stderr(cluster_bootstrap(statistic, values, by, iters, seed)), design, iters)


def redraw_error(
    redraw: Callable[[np.ndarray], float], design: ClusterDesign, iters: int = DEFAULT_ITERS, seed: int = 0
) -> ClusteredError:
    """`bootstrap_error` of an aggregate given as `redraw(counts)`, its value on rows drawn counts[i] times each
    (`harness.uncertainty.influence.Linearized.redraw`): rows, then clusters, resampled with the same seed, each
    draw made as counts in one numpy step (a group's rows may be tens of thousands)."""

    def spread(by: ClusterDesign | None) -> float:
        units, labels = (design.n, None) if by is None else (by.n_clusters, np.asarray(by.labels))
        rng = np.random.default_rng(seed)
        replicates = np.empty(iters)
        for r in range(iters):
            drawn = np.bincount(rng.integers(0, units, size=units), minlength=units)
            counts = drawn if labels is None else drawn[labels]
            replicates[r] = value_or_nan(redraw, counts)
        return bootstrap_stderr(replicates)

    return _errors(spread, design, iters)


def _errors(spread: Callable[[ClusterDesign | None], float], design: ClusterDesign, iters: int) -> ClusteredError:
    """The plain error (`spread(None)`: rows resampled) and the clustered one (`spread(design)`), and the design
    effect, the ratio of their variances."""
    n = design.n
    if n < 2 or iters < 2:
        return ClusteredError(math.nan, math.nan, n, design.n_clusters, math.nan, design.overlap, "bootstrap")
    plain = spread(None)
    if design.n_clusters < 2:
        return ClusteredError(plain, math.nan, n, design.n_clusters, math.nan, design.overlap, "bootstrap")
    clustered = spread(design)
    ratio = clustered / plain if plain > 0 and math.isfinite(clustered) else math.nan
    deff = ratio * ratio  # `*`, not `**`: a float past 1e154 squares to inf instead of raising
    return ClusteredError(plain, clustered, n, design.n_clusters, deff, design.overlap, "bootstrap")


def percentile_interval(replicates: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The percentile interval of the finite replicates at `level` (Efron and Tibshirani 1993, §13.3): their
    (1 - level)/2 and (1 + level)/2 quantiles; NaN, NaN with fewer than two."""
    finite = replicates[np.isfinite(replicates)]
    if len(finite) < 2:
        return math.nan, math.nan
    low, high = np.quantile(finite, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)
