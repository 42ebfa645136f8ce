"""A LoCoVQA curve's decay as a quantity whose interval covers: the within-item slope of the score on the curve's x
(context length in images, or Haystack-k's digit count), with an error clustered on the item.

One item is asked at every length, so the curve is repeated measures. The slope is the OLS fit of each row's score
less its item's mean on its x less the item's mean x (item fixed effects): it uses only how each item's own score
moves with length, and it is a linear estimator, so its influences ψ_i = x̃_i (ỹ_i - β x̃_i) / Σ x̃² carry it into the
clustered error (CR1 on the item, `harness.uncertainty.variance.influence_error`) and the interval is t with items - 1 degrees
of freedom (Cameron and Miller 2015, §III.B and §VI). A seeded simulation at 30 items covers the population slope at
its nominal rate (`tests/tasks/locovqa/test_decay_slope.py`), where the item bootstrap's percentile interval of r²
covered the population r² in 0-40 % (issue 63). r² stays a description of the fitted shape, not a tested quantity.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.uncertainty.comparisons import interval, two_sided_p
from harness.uncertainty.variance import design_from_keys, influence_error

LEVEL = 0.95
# Fewer items than this give no interval, as the item bootstrap of r² does (`intervals.MIN_ITEMS`): a clustered error
# over a handful of items is itself too uncertain for t to mend (Cameron and Miller 2015, §VI).
MIN_ITEMS = 10


@dataclass(frozen=True)
class DecaySlope:
    """The within-item slope (score per unit of x: a negative one falls with length), its clustered error, its 95 %
    interval (t with items - 1 degrees of freedom), the two-sided p against a flat curve, and the items."""

    slope: float
    stderr: float
    low: float
    high: float
    p_flat: float
    items: int

    def text(self, per: str = "image") -> str:
        """`-0.0102 [-0.0131, -0.0073] per image`."""
        return f"{self.slope:+.4f} [{self.low:+.4f}, {self.high:+.4f}] per {per}"


def within_item_slope(points: Sequence[tuple[float, Sequence[object], float]]) -> DecaySlope | None:
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
    df = design.n_clusters - 1
    low, high = interval(slope, se, LEVEL, df)
    return DecaySlope(slope, se, low, high, two_sided_p(slope, se, df), design.n_clusters)
