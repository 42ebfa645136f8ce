"""The interval of MM-NIAH's official score (issue 98): the heat map's mean over 55 cells, an empty cell counting 0.

What it is an interval for: **the score of the cells these rows fill**, θ = (1/55) Σ over the filled cells of each
cell's accuracy on unlimited rows, the empty cells counted 0 as the official score counts them. It is not the full
grid's score (the paper's, every cell filled): from rows that leave cells empty nothing says what those cells would
score, so no interval from them can cover it, and the report says how many cells are empty instead.

How: the score is a stratified estimator, the cells its strata and the haystacks its clusters, so F/55 times the
mean over the F filled cells p̂ = 55·score/F, a survey-weighted proportion. Its linearized variance is Σ_g T_g² over
haystacks g, T_g the sum of its rows' residuals, each row's residual its value less its cell's mean, times
sqrt(n_c / (n_c - 1)) / (F n_c) (the stratified variance s_c²/n_c of each cell's mean); a cell of one row has no
spread of its own and is centred on p̂ instead (a "lonely PSU" adjusted as R survey's `lonely.psu = "adjust"` does,
Lumley 2010, §3.2: conservative). The interval is Clopper-Pearson's on Korn and Graubard's (1998) effective n of p̂,
with their degrees-of-freedom factor (t_{n-1}/t_df)², df the Satterthwaite df of Σ T_g², (Σ T_g²)² / Σ T_g⁴, at most
haystacks - 1 and the rows of the rarer outcome, never below min(n_eff, Kish's haystacks), Kish's haystacks where
nothing varied (as `harness.outputs.results.estimates.Estimate.interval_n`); then times F/55. Where the rows stand for
fewer than two haystacks (Kish), none. A bootstrap of the grid score does not fit it: a resample repeats rows, so it
fills fewer cells than the rows did and its spread is 0.6-0.9 of the score's (bench/mmniah_score_coverage.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

from harness.uncertainty.comparisons import clopper_pearson_interval
from harness.uncertainty.small_sample import TOO_FEW_KISH, kish_clusters
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
    if kish_clusters(members) < TOO_FEW_KISH:
        return None
    filled, n = len(size), len(v)
    means = np.bincount(cell, v) / size
    p = float(means.mean())
    m = size[cell]
    scale = np.where(m > 1, np.sqrt(m / np.maximum(m - 1, 1)), 1.0) / (filled * m)
    residual = (v - np.where(m > 1, means[cell], p)) * scale
    totals = np.bincount(group, residual)
    variance = float(np.dot(totals, totals))
    units = kish_clusters(members)
    if variance > 1e-18 and 0.0 < p < 1.0:
        n_eff = min(p * (1 - p) / variance, n)
        df = min(variance * variance / float(np.sum(totals**4)), len(members) - 1, n * min(p, 1 - p))
        quantile = 1 - (1 - level) / 2
        factor = min(1.0, float(stats.t.ppf(quantile, n - 1) / stats.t.ppf(quantile, df)) ** 2) if df > 0 else 0.0
        size_n = max(n_eff * factor, min(n_eff, units))
    else:
        size_n = units
    low, high = clopper_pearson_interval(min(max(p, 0.0), 1.0), size_n, level)
    if not (math.isfinite(low) and math.isfinite(high)):
        return None
    share = filled / GRID
    return low * share, high * share
