"""Tests and intervals for one number or two runs: Wilson intervals on the effective n, a paired difference with its
clustered interval, Newcombe's interval for paired proportions, McNemar's exact test, the exact cluster sign-flip test,
equivalence (TOST), and multiplicity (Holm, Benjamini-Hochberg, the chance of seeing k of m by chance alone).

statsmodels and scipy.stats are imported inside the functions that use them: a run that never compares pays
nothing for them (they take about 1.4 s to import here).

Why Newcombe's interval and the sign-flip test rather than the t interval everywhere: d̄ ± t · SE is symmetric about
d̄, so near 0 % or 100 % it runs past the ends of the scale (29/30 against 30/30 gives an upper end above +1), and with
two clusters t_1 is 12.7 (two seeds: ±1270 points). statsmodels 0.15 (installed) has Newcombe's interval for
independent proportions only (`confint_proportions_2indep`, method "newcomb"); the paired one is implemented here from
Newcombe (1998), "Improved confidence intervals for the difference between binomial proportions based on paired data",
Stat Med 17:2635-2650, method 10, and checked against its worked examples
(tests/harness/uncertainty/test_paired_proportions.py)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from harness.uncertainty.variance import ClusteredError, mean_error

NAN = math.nan
FEW_CLUSTERS = 10  # below it a clustered t interval is not trusted (Cameron and Miller 2015, §VI: few clusters)


def effective_n(n: int, design_effect: float, n_clusters: int) -> float:
    """n / deff, the sample size an i.i.d. sample of the same precision would have. A design effect below 1 is taken
    as 1 (an interval never narrower than the i.i.d. one); an unknown one (NaN: no spread, as when every row is 0 or
    1) gives the number of clusters, the fewest independent units the rows can stand for. n = 0 gives 0.0."""
    if n <= 0:
        return 0.0
    if math.isfinite(design_effect):
        return n / max(design_effect, 1.0)
    return float(max(min(n_clusters, n), 1))


def comparison_error(stderr: float, stderr_clustered: float) -> float:
    """The error a comparison's interval, p and minimum detectable effect rest on: the clustered one, never below the
    plain one (a design effect estimated below 1 taken as 1, as `effective_n` and the report's interval take it: Korn
    and Graubard 1998 truncate the effective n at the rows). A design effect under 1 says the items' rows disagree
    more than independent rows would, which a handful of clusters shows by chance far more often than the data hold
    it (Cameron and Miller 2015, §VI: CR1 is biased down with few clusters); two seeds of one random baseline,
    paired, gave 0.34 and p 0.0085 on the demo (issue 88; `bench/paired_null.py`). A clustered error of 0 (every
    cluster's total the same: the exact sign test on the clusters applies) or NaN (one cluster) is kept."""
    if math.isfinite(stderr) and math.isfinite(stderr_clustered) and stderr_clustered > 0:
        return max(stderr, stderr_clustered)
    return stderr_clustered


def comparison_df(n_clusters: int, overlap: bool, effective_clusters: float = NAN) -> float | None:
    """The degrees of freedom of a paired difference's t interval and p: None (the normal) for a crossed design's
    graph sum; else the clusters the clustered variance rests on, less one: Satterthwaite's (1946) degrees of freedom
    for a variance that is a sum of C cluster terms, each term's share measured by its cluster's squared total T_c²,
    G* = (Σ T_c²)² / Σ T_c⁴ (Carter, Schnepel and Steigerwald 2017's effective number of clusters, their
    heterogeneity measured from the data), never above C, and at least 1. C - 1 (Cameron and Miller 2015) where every
    cluster adds alike; fewer where a few carry the variance, as when two runs of one model differ on a handful of
    rows: with t_{C-1} a 30-item paired difference with 5 discordant rows, all one way, got p < .05 where the exact
    sign test cannot go below .0625, and two runs of one model came out "significant" in up to 6.1 % of replications
    (`bench/paired_null.py`, issue 88). NaN `effective_clusters` (not measured: a bootstrap error) gives C - 1."""
    if overlap:
        return None
    clusters = min(float(n_clusters), effective_clusters) if math.isfinite(effective_clusters) else n_clusters
    return max(clusters - 1, 1.0) if n_clusters > 1 else float(n_clusters - 1)


def clustered_df(error: ClusteredError) -> float | None:
    """`comparison_df` of an error, never above its Bell-McCaffrey degrees of freedom where measured (clusters of
    different sizes: `harness.uncertainty.small_sample`), so that a comparison rests on the degrees of freedom the
    report's interval rests on."""
    df = comparison_df(error.n_clusters, error.overlap, error.effective_clusters)
    return df if df is None or not math.isfinite(error.df) else min(df, max(error.df, 1.0))


def clustered_se(error: ClusteredError) -> float:
    """`comparison_error` of an error, with CR2's bias-reduced error where it is larger than CR1's (a large cluster's
    share of the variance, which CR1 shrinks: `harness.uncertainty.small_sample`)."""
    se = comparison_error(error.stderr, error.stderr_clustered)
    return max(se, error.stderr_cr2) if math.isfinite(se) and math.isfinite(error.stderr_cr2) else se


def wilson_interval(proportion: float, n: float, level: float = 0.95, method: str = "wilson") -> tuple[float, float]:
    """The Wilson score interval of a proportion (0..1) observed on `n` rows, or on an effective n
    (`effective_n`: n / deff, non-integer allowed): statsmodels' `proportion_confint(method="wilson")`; `method`
    "beta" gives Clopper-Pearson's (`clopper_pearson_interval`).

    It never collapses: at 0 % or 100 % it is [0, z²/(n+z²)] or its mirror. Edge cases: n = 0 or a NaN proportion
    gives (NaN, NaN); a proportion outside [0, 1] is a ValueError (scale a 0-100 score first)."""
    if not n > 0 or not math.isfinite(proportion):
        return NAN, NAN
    if not 0.0 <= proportion <= 1.0:
        raise ValueError(f"a proportion must lie in [0, 1], got {proportion}")
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(proportion * n, n, alpha=1 - level, method=method)
    return float(low), float(high)


def clopper_pearson_interval(proportion: float, n: float, level: float = 0.95) -> tuple[float, float]:
    """The Clopper-Pearson (exact binomial) interval of a proportion (0..1) on `n` rows or an effective n (non-integer
    allowed: its beta quantiles): statsmodels' `proportion_confint(method="beta")`. Wider than Wilson's; it covers at
    least its level for a binomial at any n, where Wilson's dips below it near 0 and 1 at small n (Brown, Cai and
    DasGupta 2001). Edge cases as `wilson_interval`'s."""
    return wilson_interval(proportion, n, level, method="beta")


def interval(estimate: float, stderr: float, level: float = 0.95, df: float | None = None) -> tuple[float, float]:
    """estimate ± q · stderr, q the normal quantile, or Student's t with `df` degrees of freedom (use C - 1 for a
    clustered error over C clusters, Cameron and Miller 2015, §VI). NaN in, NaN out; df < 1 gives NaN."""
    if not (math.isfinite(estimate) and math.isfinite(stderr)) or (df is not None and df < 1):
        return NAN, NAN
    from scipy import stats

    q = stats.norm.ppf(0.5 + level / 2) if df is None else stats.t.ppf(0.5 + level / 2, df)
    return estimate - q * stderr, estimate + q * stderr


@dataclass(frozen=True)
class PairedDifference:
    """mean(a) - mean(b) over paired rows: its plain and clustered errors, clusters, design effect, the clustered
    interval and two-sided p (Student's t with `comparison_df`'s degrees of freedom for a partition, normal for an overlap
    design), the per-row correlation of a and b, and for 0/1 values McNemar's discordant counts (b: a right and
    b wrong; c: the reverse) and exact p."""

    estimate: float
    stderr: float
    stderr_clustered: float
    n: int
    n_clusters: int
    design_effect: float
    low: float
    high: float
    p_value: float
    correlation: float
    a_only: int | None = None
    b_only: int | None = None
    mcnemar_p: float | None = None


def correlation(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Pearson's correlation of paired values; NaN under two rows or where either side does not vary."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(x) < 2 or np.std(x) == 0 or np.std(y) == 0:
        return NAN
    return float(np.corrcoef(x, y)[0, 1])


def paired_difference(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    keys: Sequence[Sequence[Hashable]],
    level: float = 0.95,
) -> PairedDifference:
    """The difference of two runs' means on the same rows (row i of `a` and of `b` is one sample), clustered on
    `keys` (Miller 2024, Rec. 4: the SE of the mean paired difference, clustered).

    Edge cases: no rows or one gives NaN errors; identical runs give a difference 0 with errors 0.0 and p NaN; one
    cluster a NaN clustered error, interval and p; NaN values propagate; lengths that differ are a ValueError."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(x) != len(y):
        raise ValueError(f"{len(x)} and {len(y)} values: a paired difference needs the same rows in both")
    error = mean_error(x - y, keys)
    estimate = float(np.mean(x - y)) if len(x) else NAN
    df = clustered_df(error)
    se = (
        error.stderr_clustered if not math.isfinite(error.stderr_cr2) else max(error.stderr_cr2, error.stderr_clustered)
    )
    low, high = interval(estimate, se, level, df)
    p_value = two_sided_p(estimate, se, df)
    binary = len(x) > 0 and bool(np.all(np.isin(x, (0.0, 1.0))) and np.all(np.isin(y, (0.0, 1.0))))
    a_only = int(np.sum((x == 1) & (y == 0))) if binary else None
    b_only = int(np.sum((x == 0) & (y == 1))) if binary else None
    return PairedDifference(
        estimate,
        error.stderr,
        error.stderr_clustered,
        error.n,
        error.n_clusters,
        error.design_effect,
        low,
        high,
        p_value,
        correlation(x, y),
        a_only,
        b_only,
        mcnemar_exact(a_only, b_only) if a_only is not None and b_only is not None else None,
    )


def two_sided_p(estimate: float, stderr: float, df: float | None = None) -> float:
    """The two-sided p of estimate / stderr against 0: normal, or Student's t with `df` degrees of freedom (C - 1 for
    a clustered error over C clusters). Edge cases: a NaN input, stderr 0 or df < 1 give NaN."""
    if not (math.isfinite(estimate) and math.isfinite(stderr)) or stderr <= 0 or (df is not None and df < 1):
        return NAN
    from scipy import stats

    z = abs(estimate) / stderr
    return float(2 * (stats.norm.sf(z) if df is None else stats.t.sf(z, df)))


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """McNemar's exact test of two paired 0/1 runs from their discordant counts (a right, b wrong; the reverse):
    the two-sided binomial p of min(b, c) in b + c trials at 1/2, statsmodels' `mcnemar(exact=True)`.
    Edge cases: no discordant pair gives p = 1.0; a negative count is a ValueError."""
    if a_only < 0 or b_only < 0:
        raise ValueError(f"discordant counts must be 0 or more, got {a_only} and {b_only}")
    from statsmodels.stats.contingency_tables import mcnemar

    return float(mcnemar([[0, a_only], [b_only, 0]], exact=True).pvalue)


def equivalence_p(estimate: float, stderr: float, margin: float, df: float | None = None) -> float:
    """Two one-sided tests (Schuirmann 1987) that |true difference| < `margin`: the larger of the two one-sided p
    values; small means "equivalent within the margin". Normal, or Student's t with `df`.
    Edge cases: stderr 0 gives 0.0 when |estimate| < margin, else 1.0; a NaN input or margin <= 0 gives NaN."""
    if not (math.isfinite(estimate) and math.isfinite(stderr) and math.isfinite(margin)) or margin <= 0:
        return NAN
    if stderr == 0:
        return 0.0 if abs(estimate) < margin else 1.0
    from scipy import stats

    dist = stats.norm if df is None else stats.t(df)
    below = dist.sf((estimate + margin) / stderr)  # H0: difference <= -margin
    above = dist.cdf((estimate - margin) / stderr)  # H0: difference >= margin
    return float(max(below, above))


def adjust_pvalues(p_values: Sequence[float], method: str = "holm") -> np.ndarray:
    """p values adjusted for multiplicity: `holm` (family-wise, Holm 1979) or `fdr_bh` (false discovery rate,
    Benjamini and Hochberg 1995), statsmodels' `multipletests`. NaN p values stay NaN and are not counted among the
    tests; no p values give an empty array; another method is a ValueError."""
    if method not in ("holm", "fdr_bh"):
        raise ValueError(f"method must be holm or fdr_bh, got {method!r}")
    p = np.asarray(p_values, dtype=float)
    out = np.full(len(p), NAN)
    finite = np.isfinite(p)
    if finite.any():
        from statsmodels.stats.multitest import multipletests

        out[finite] = _holm(p[finite]) if method == "holm" else multipletests(p[finite], method=method)[1]
    return out


def _holm(p: np.ndarray) -> np.ndarray:
    """`multipletests(p, method="holm")[1]`, the same arithmetic: sorted, the i-th smallest times (m - i), the running
    maximum, at most 1. statsmodels' holm branch ends in a `gc.collect()`, half a second in a process that holds a
    run's journals (a report adjusts once a table)."""
    order = np.argsort(p)
    adjusted = np.minimum(np.maximum.accumulate(p[order] * np.arange(len(p), 0, -1)), 1.0)
    out = np.empty_like(adjusted)
    out[order] = adjusted
    return out


def expected_by_chance(m: int, rate: float = 0.05) -> float:
    """How many of m independent tests at level `rate` reject by chance alone when nothing differs: m · rate."""
    return m * rate


def chance_of_at_least(k: int, m: int, rate: float = 0.05) -> float:
    """P(at least k of m independent tests reject at level `rate` when nothing differs): the binomial tail
    P(X >= k), X ~ Binomial(m, rate). Edge cases: k <= 0 gives 1.0; k > m gives 0.0; m = 0 and k = 0 gives 1.0."""
    if k <= 0:
        return 1.0
    if k > m:
        return 0.0
    from scipy import stats

    return float(stats.binom.sf(k - 1, m, rate))


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
    scale = effective_n(n, (stderr_clustered / stderr) ** 2 if stderr > 0 else NAN, n_clusters) / n
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
