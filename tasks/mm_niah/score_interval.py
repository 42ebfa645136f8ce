"""The interval of MM-NIAH's official score (issue 98): the heat map's mean over 55 cells, an empty cell counting 0.

What it is an interval for: **the score of the cells these rows fill**, θ = (1/55) Σ over the filled cells of each
cell's accuracy on unlimited rows, the empty cells counted 0 as the official score counts them. It is not the full
grid's score (the paper's, every cell filled): from rows that leave cells empty nothing says what those cells would
score, so no interval from them can cover it, and the report says how many cells are empty instead.

How: the score is a stratified estimator, the cells its strata and the haystacks its clusters, so F/55 times the
mean over the F filled cells p̂ = 55·score/F, a survey-weighted proportion, each row weighing a_i = 1 / (F n_c). Its
linearized variance is Σ_g T_g² over haystacks g, T_g the sum of its rows' residuals, each row's residual its value
less its cell's mean, times sqrt(n_c / (n_c - 1)) a_i (the stratified variance s_c²/n_c of each cell's mean); a cell
of one row has no spread of its own and is centred on p̂ instead (a "lonely PSU" adjusted as R survey's
`lonely.psu = "adjust"` does, Lumley 2010, §3.2: conservative). The interval is the report's rule for a mean of rows
(issue 107, `harness.outputs.results.estimates.Estimate`, docs/statistics.md "One rule for every design") on these
residuals and weights: the haystacks' cluster score test joined with Clopper-Pearson or Wilson on Korn and
Graubard's (1998) effective n of p̂; then times F/55. None where the haystacks stand for too few clusters (one of
half the rows, or Kish's haystacks no more than the test's c²). A bootstrap of the grid score does not fit it: a
resample repeats rows, so it fills fewer cells than the rows did and its spread is 0.6-0.9 of the score's
(bench/mmniah_score_coverage.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from harness.outputs.results.estimates import Estimate
from harness.uncertainty.small_sample import INTERVAL_RULE, rule_figures
from tasks.mm_niah.scoring import DEPTH_BINS, X_BINS

GRID = len(X_BINS) * DEPTH_BINS


def score_interval(
    cells: Sequence[Sequence[float]], haystacks: Sequence[str], level: float = 0.95
) -> tuple[float, float] | None:
    """The interval (module docstring) of the official score of rows `cells` (`[length bin, depth bin, value]`, as
    `utils.process_results` records them; a row with none is unscored) in haystacks `haystacks`; None without a
    scored row in the grid or where they stand for fewer than two haystacks."""
    kept = [(c, h) for c, h in zip(cells, haystacks, strict=True) if c and int(c[0]) > 0]
    if not kept:
        return None
    x = np.array([int(c[0]) for c, _ in kept])
    y = np.minimum(np.array([int(c[1]) for c, _ in kept]), DEPTH_BINS - 1)
    v = np.array([float(c[2]) for c, _ in kept])
    _, cell, size = np.unique(x * DEPTH_BINS + y, return_inverse=True, return_counts=True)
    _, group, members = np.unique([h for _, h in kept], return_inverse=True, return_counts=True)
    filled, n = len(size), len(v)
    means = np.bincount(cell, v) / size
    p = float(means.mean())
    m = size[cell]
    weights = 1.0 / (filled * m)
    residual = (v - np.where(m > 1, means[cell], p)) * np.where(m > 1, np.sqrt(m / np.maximum(m - 1, 1)), 1.0) * weights
    totals = np.bincount(group, residual)
    variance = float(np.dot(totals, totals))
    clusters = len(members)
    if clusters < 2:
        return None
    slope, units, largest, model_n = rule_figures(residual, weights, group, clusters)
    estimate = Estimate(
        p,
        clustered=math.sqrt(clusters / (clusters - 1) * variance),  # CR1's form: the rule takes its sum back
        n=n,
        n_clusters=clusters,
        scale=1.0,
        kish_clusters=units,
        largest_cluster=largest,
        slope=slope,
        working_model_n=model_n,
        rule=INTERVAL_RULE,
    )
    bounds = estimate.interval(level)
    if bounds is None or not all(math.isfinite(b) for b in bounds):
        return None
    share = filled / GRID
    return bounds[0] * share, bounds[1] * share
