"""A LoCoVQA curve's decay as a quantity whose interval covers: the within-item slope of the score on the curve's x
(context length in images, or Haystack-k's digit count), with an error clustered on the item.

One item is asked at every length, so the curve is repeated measures. The slope is the OLS fit of each row's score
less its item's mean on its x less the item's mean x (item fixed effects): it uses only how each item's own score
moves with length, and it is a linear estimator, so its influences ψ_i = x̃_i (ỹ_i - β x̃_i) / Σ x̃² carry it into the
clustered error (CR1 on the item, `harness.uncertainty.variance.influence_error`). A seeded simulation at 30 items covers
the population slope at its nominal rate (`tests/tasks/locovqa/test_decay_slope.py`), where the item bootstrap's
percentile interval of r² covered the population r² in 0-40 % (issue 63). r² stays a description of the fitted
shape, not a tested quantity.

The interval is studentized, its quantiles those of t = slope / error under a flat curve, drawn by permuting each
item's scores over its lengths (`PERMUTATIONS` draws, seeded: the same rows give the same interval). A flat truth
makes an item's rows exchangeable, so the test is exact at any number of items (Fisher's randomization test; the
studentized statistic keeps it valid asymptotically where rows are not exchangeable, DiCiccio and Romano 2017); the
interval leaves 0 out exactly where the test rejects (p < 5 %, equal tails). t with items - 1 degrees of freedom
(Cameron and Miller 2015) read a flat truth as falling or rising in up to 5.3 % of seeded replications at 10-12 items
(issue 76; 4.2 % in bench/verdict_levels.py's grid, nominal 2.5 % a side): with 0/1 scores near 0 % or 100 % an
item's slope is skewed (a single right answer at length 1 or at 36), which t's symmetric quantiles ignore. A crossed
design (items linked through shared rows) keeps t's interval: permuting within its components is not the same null.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.uncertainty.comparisons import interval, two_sided_p
from harness.uncertainty.variance import design_from_keys, influence_error

LEVEL = 0.95
PERMUTATIONS = 1999  # the flat null's draws: a p resolves to 1/2000, the 2.5 % quantile is the 50th of them
SEED = 76
# Fewer items than this give no interval, as the item bootstrap of r² does (`intervals.MIN_ITEMS`): a clustered error
# over a handful of items is itself too uncertain for t to mend (Cameron and Miller 2015, §VI).
MIN_ITEMS = 10


@dataclass(frozen=True)
class DecaySlope:
    """The within-item slope (score per unit of x: a negative one falls with length), its clustered error, its 95 %
    interval (studentized by the flat null's permutations), the two-sided p against a flat curve, and the items."""

    slope: float
    stderr: float
    low: float
    high: float
    p_flat: float
    items: int

    def text(self, per: str = "image") -> str:
        """`-0.0102 [-0.0131, -0.0073] per image`."""
        return f"{self.slope:+.4f} [{self.low:+.4f}, {self.high:+.4f}] per {per}"


def within_item_slope(
    points: Sequence[tuple[float, Sequence[object], float]], permutations: int = PERMUTATIONS
) -> DecaySlope | None:
    """The slope of rows (x, the row's cluster keys, score); None with fewer than `MIN_ITEMS` items, no row whose x
    differs from its item's mean, or a clustered error of 0 (nothing varies)."""
    if not points:
        return None
    design = design_from_keys([list(keys) for _, keys, _ in points])
    if design.n_clusters < MIN_ITEMS:
        return None
    x = np.array([p[0] for p in points], dtype=float)
    y = np.array([p[2] for p in points], dtype=float)
    counts = np.bincount(design.labels, minlength=design.n_clusters)

    def within(values: np.ndarray) -> np.ndarray:
        means = np.bincount(design.labels, weights=values, minlength=design.n_clusters) / counts
        return values - means[design.labels]

    dx, dy = within(x), within(y)
    sxx = float(dx @ dx)
    if sxx <= 0:
        return None
    slope = float(dx @ dy) / sxx
    error = influence_error(dx * (dy - slope * dx) / sxx, design, method="within-item slope")
    se = error.stderr_clustered
    if not math.isfinite(se) or se <= 0:
        return None
    if design.overlap:
        df = design.n_clusters - 1
        low, high = interval(slope, se, LEVEL, df)
        return DecaySlope(slope, se, low, high, two_sided_p(slope, se, df), design.n_clusters)
    flat = _flat_null(dx, dy, design.labels, permutations)
    k = max(1, math.floor((1 - LEVEL) / 2 * (permutations + 1)))  # the k-th of each tail: p ≤ 2.5 % beyond it
    ordered = np.sort(flat)
    t = slope / se
    # 0/1 scores give a few distinct values, each summed in another order: a draw within rounding of t is a tie, and
    # counts as at least as extreme (else rounding alone rejects: 4 % a side at 11 items near 100 %)
    tie = 1e-9 * max(1.0, abs(t))
    below, above = float(ordered[k - 1]) - tie, float(ordered[-k]) + tie
    tails = [int(np.sum(flat >= t - tie)), int(np.sum(flat <= t + tie))]
    low, high = slope - above * se, slope - below * se  # 0 left out exactly where a tail's p is at most 2.5 %
    return DecaySlope(slope, se, low, high, min(1.0, 2 * (1 + min(tails)) / (permutations + 1)), design.n_clusters)


def _flat_null(dx: np.ndarray, dy: np.ndarray, labels: np.ndarray, permutations: int) -> np.ndarray:
    """slope / CR1 error of `permutations` draws of a flat curve: each item's x shuffled over its own rows. Item c's
    part of a draw is its Σ x̃·ỹ; its Σ x̃² does not move, so its influence total is (Σ x̃·ỹ - slope · Σ x̃²) / Sxx."""
    sizes = np.bincount(labels)
    order = np.lexsort((labels, sizes[labels]))  # items grouped by size, each item's rows together
    dx, dy, size_of = dx[order], dy[order], sizes[labels[order]]
    bounds = np.flatnonzero(np.r_[True, np.diff(size_of) != 0, True])
    rng = np.random.default_rng(SEED)
    sums, squares = [], []
    for first, last in zip(bounds[:-1], bounds[1:], strict=True):
        x, y = dx[first:last].reshape(-1, size_of[first]), dy[first:last].reshape(-1, size_of[first])
        sums.append(_shuffled_sums(x, y, permutations, rng))
        squares.append(np.sum(x * x, axis=1))
    drawn, each = np.concatenate(sums, axis=1), np.concatenate(squares)
    sxx, clusters = float(each.sum()), len(each)
    beta = drawn.sum(axis=1) / sxx
    totals = (drawn - beta[:, None] * each) / sxx
    se = np.sqrt(clusters / (clusters - 1) * np.sum(totals * totals, axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.nan_to_num(np.where(se > 0, beta / se, np.sign(beta) * np.inf), nan=0.0)


def _shuffled_sums(x: np.ndarray, y: np.ndarray, draws: int, rng: np.random.Generator) -> np.ndarray:
    """(draws, items) Σ x[π]·y of items of equal size (one a row of `x` and `y`), π a random order of each item's
    rows per draw. Up to 7 rows an item every order's sum is made once and drawn from (17 times faster than
    shuffling 1999 x 30 items of 6); longer items are shuffled."""
    items, size = x.shape
    if size <= 7:
        orders = np.array(list(itertools.permutations(range(size))))
        step = max(1, 4_000_000 // (len(orders) * size))  # items a block: at most 32 MB of x[:, orders]
        every = np.concatenate(
            [np.einsum("kpr,kr->kp", x[i : i + step][:, orders], y[i : i + step]) for i in range(0, items, step)]
        )
        return every[np.arange(items), rng.integers(0, len(orders), (draws, items))]
    out = np.empty((draws, items))
    step = max(1, 2_000_000 // x.size)
    for begin in range(0, draws, step):
        block = rng.permuted(np.tile(x, (min(step, draws - begin), 1, 1)), axis=2)
        out[begin : begin + len(block)] = np.sum(block * y, axis=2)
    return out
