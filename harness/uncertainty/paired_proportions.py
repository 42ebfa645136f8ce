"""Paired differences that stay on their scale: Newcombe's hybrid score interval for the difference of two paired
proportions, clustered through the effective n, and the exact cluster permutation (sign-flip) test for a paired
difference over fewer clusters than a t interval can stand on.

Why not the t interval everywhere: d̄ ± t · SE is symmetric about d̄, so near 0 % or 100 % it runs past the ends of the
scale (29/30 against 30/30 gives an upper end above +1), and with two clusters t_1 is 12.7 (two seeds: ±1270 points).
statsmodels 0.15 (installed) has Newcombe's interval for independent proportions only (`confint_proportions_2indep`,
method "newcomb"); the paired one is implemented here from Newcombe (1998), "Improved confidence intervals for the
difference between binomial proportions based on paired data", Stat Med 17:2635-2650, method 10, and checked against
its worked examples (tests/harness/uncertainty/test_paired_proportions.py).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from harness.uncertainty.comparisons import wilson_interval

NAN = math.nan
FEW_CLUSTERS = 10  # below it a clustered t interval is not trusted (Cameron and Miller 2015, §VI: few clusters)


def newcombe_paired_interval(
    both: float, a_only: float, b_only: float, neither: float, level: float = 0.95
) -> tuple[float, float]:
    """Newcombe's (1998) method 10 for p_A - p_B on paired 0/1 rows: `both` right in both runs, `a_only` right in A
    alone, `b_only` in B alone, `neither`. Counts may be fractional (effective counts, `clustered_newcombe`).

    Each margin gets its Wilson interval (l_A, u_A), (l_B, u_B), joined by the square-and-add rule with the margins'
    correlation φ = (both·neither - a_only·b_only) / sqrt(product of the margins), continuity-corrected as method 10
    has it (a positive numerator less n/2, floored at 0; 0 where a margin is empty):
    L = d - sqrt((p_A - l_A)² - 2φ(p_A - l_A)(u_B - p_B) + (u_B - p_B)²), U mirrored. It lies in [-1, 1] and never
    collapses to a point. No rows gives (NaN, NaN)."""
    n = both + a_only + b_only + neither
    if not n > 0:
        return NAN, NAN
    p_a, p_b = (both + a_only) / n, (both + b_only) / n
    low_a, high_a = wilson_interval(p_a, n, level)
    low_b, high_b = wilson_interval(p_b, n, level)
    margins = (both + a_only) * (b_only + neither) * (both + b_only) * (a_only + neither)
    cross = both * neither - a_only * b_only
    if margins <= 0:
        phi = 0.0
    elif cross > n / 2:
        phi = (cross - n / 2) / math.sqrt(margins)
    else:
        phi = min(cross, 0.0) / math.sqrt(margins)
    d = p_a - p_b
    below_a, above_b = p_a - low_a, high_b - p_b
    below_b, above_a = p_b - low_b, high_a - p_a
    low = d - math.sqrt(max(below_a**2 - 2 * phi * below_a * above_b + above_b**2, 0.0))
    high = d + math.sqrt(max(below_b**2 - 2 * phi * below_b * above_a + above_a**2, 0.0))
    return max(low, -1.0), min(high, 1.0)  # only rounding can pass the ends


def clustered_newcombe(
    a: Sequence[float], b: Sequence[float], stderr: float, stderr_clustered: float, n_clusters: int, level: float = 0.95
) -> tuple[float, float]:
    """Newcombe's interval (`newcombe_paired_interval`) for two paired 0/1 columns, each count scaled to the
    effective n: n / deff, deff = (stderr_clustered / stderr)², the clustered variance of the paired difference over
    its plain one (each with its small-sample factor, so the interval's width tracks the clustered t interval's away
    from the ends). A deff below 1 is taken as 1; where the difference has no spread (stderr 0: every row's
    difference the same) the effective n is the number of clusters, the fewest independent units the rows stand for.
    Values other than 0 and 1 are a ValueError; no rows gives (NaN, NaN)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if not (np.isin(x, (0.0, 1.0)).all() and np.isin(y, (0.0, 1.0)).all()):
        raise ValueError("Newcombe's interval needs 0/1 values in both columns")
    n = len(x)
    if n == 0:
        return NAN, NAN
    if stderr > 0 and math.isfinite(stderr_clustered):
        n_eff = n / max((stderr_clustered / stderr) ** 2, 1.0)
    else:
        n_eff = float(max(min(n_clusters, n), 1))
    scale = n_eff / n
    both, a_only, b_only, neither = (
        float(np.sum((x == i) & (y == j))) * scale for i, j in ((1, 1), (1, 0), (0, 1), (0, 0))
    )
    return newcombe_paired_interval(both, a_only, b_only, neither, level)


def cluster_sign_flip_p(differences: Sequence[float], labels: Sequence[int] | np.ndarray) -> float:
    """The exact two-sided p of a paired difference's mean against 0 by flipping the sign of whole clusters
    (Fisher's randomization test on cluster totals: under the null of no difference, A and B are exchangeable within
    each cluster): the share of the 2^C sign patterns whose |total| is at least the observed one. Valid at any number
    of clusters whatever the dependence within one; its smallest p is 2 / 2^C (0.5 with two clusters). Meant for few
    clusters (C < `FEW_CLUSTERS`); more than 20 is a ValueError (2^C patterns). No rows, or NaN, gives NaN."""
    d = np.asarray(differences, dtype=float)
    if len(d) == 0 or not np.isfinite(d).all():
        return NAN
    index = np.asarray(labels, dtype=np.int64)
    totals = np.bincount(index, weights=d)
    if len(totals) > 20:
        raise ValueError(f"{len(totals)} clusters: the exact sign-flip test enumerates 2^C patterns (at most 20)")
    observed = abs(float(totals.sum()))
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=len(totals))))
    flipped = np.abs(signs @ totals)
    tolerance = 1e-9 * max(float(np.abs(totals).sum()), 1e-300)  # ties up to rounding count as at least as large
    return float(np.mean(flipped >= observed - tolerance))
