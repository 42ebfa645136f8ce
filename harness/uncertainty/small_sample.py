"""Small-sample corrections of a clustered error when clusters differ in size: the bias-reduced (CR2) variance of a
mean and its Bell-McCaffrey degrees of freedom, and Kish's effective number of clusters; and the figures the report's
interval rests on since issue 107 (`rule_figures`, `score_bounds`: below).

Why: CR1 (`harness.uncertainty.variance`) shrinks a large cluster's share of the variance, since a cluster holding a
share w_c of the rows pulls the mean towards itself and its residual total is (1 - w_c) of its deviation; and t with
C - 1 degrees of freedom ignores that a few clusters carry the variance. With one cluster of half the rows, or a
long tail of cluster sizes, the report's interval covered 45-87 % (issue 98). The field's answer to exactly this is
Bell and McCaffrey (2002, "Bias reduction in standard errors for linear regression with multi-stage samples", Survey
Methodology 28:169-181), as Imbens and Kolesar (2016, "Robust standard errors in small samples: some practical
advice", REStat 98:701-712) recommend it and R's clubSandwich computes it (Pustejovsky and Tipton 2018):

- CR2: each cluster's residuals are scaled by (I - H_cc)^(-1/2), H the hat matrix. For a mean (an intercept-only
  fit) H_cc = w_c·(the average over cluster c), so the scaled total is T_c / sqrt(1 - w_c) and the variance is
  Σ_c T_c² / (1 - w_c), T_c = Σ_{i in c} ψ_i. With equal clusters (w_c = 1/C) it is CR1's C/(C-1) Σ T_c², exactly.
- Degrees of freedom: Satterthwaite's for that quadratic form in the residuals, (Σλ)² / Σλ², λ the eigenvalues of
  D·S with D = diag(1 / (n²(1 - w_c))) and S the covariance of the clusters' residual totals under a working model.
  Imbens and Kolesar's working model is the one used here: rows of a cluster correlate at ρ (random cluster effects),
  ρ estimated from the rows (the bias-reduced design effect, `icc_estimate`). With m the sizes and
  A = diag(m) - m mᵀ/n, S = (1 - ρ)A + ρA² (every row's variance 1), a diagonal plus rank-four matrix, so the traces
  take O(C). Equal clusters give C - 1 at any ρ; one cluster of 148 of 164 rows about 1.1.
- Kish's effective number of clusters n² / Σ m_c² (Kish 1965, Survey Sampling, §8.2): the number of equal clusters
  whose mean has the variance these clusters' mean has when every cluster agrees within itself (ρ = 1). Under 2 the
  rows stand for one cluster and some stray rows, and no interval is honest (`TOO_FEW_KISH`).

Issue 107's rule (docs/statistics.md, "One rule for every design") reads, beside these, the **cluster score test**:
at a value θ the rows' residuals from θ, u_i = ψ_i + a_i (θ̂ - θ) (a_i the row's weight in the estimate, 1/n for a
mean), are summed within each cluster (each linked pair, for a crossed design), and θ is kept where
(θ̂ - θ)² ≤ c² V(θ), V(θ) = Σ_c U_c(θ)² = V₀ + 2 (θ̂ - θ) S + (θ̂ - θ)² / K: V₀ the clustered sum of squares at θ̂,
S its `slope` (Σ_c W_c T_c, W_c the cluster's weight) and K the `units` (1 / Σ_c W_c², Kish's clusters). Residuals
from θ, not from θ̂, are not shrunk by a large cluster's pull on the mean, so V(θ) is unbiased at the true θ in any
design (no leverage factor); the statistic (θ̂ - θ) / √V(θ) is the t statistic of the C clusters' terms U_c(θ)
(Ibragimov and Müller 2010, "t-Statistic Based Correlation and Heterogeneity Robust Inference", JBES 28:453-468),
and c the value that makes it Student's t with C - 1 degrees of freedom (`critical_value`), a test that holds its
level for independent normal terms of any variances (Bakirov and Székely 2006). One cluster alone moves the statistic
to at most 1 in size, so a dominant cluster cannot make it reject, whatever it drew.
"""

from __future__ import annotations

import functools
import math

import numpy as np

TOO_FEW_KISH = 2.0  # below it the rows stand for about one cluster: no interval (the report says why)
INTERVAL_RULE = "cluster score test and Korn-Graubard (issue 107)"  # recorded beside the figures it reads


def kish_clusters(sizes: np.ndarray) -> float:
    """n² / Σ m_c²: C for C equal clusters, about 1 where one cluster holds nearly every row; NaN without rows."""
    m = np.asarray(sizes, dtype=float)
    squares = float(np.dot(m, m))
    return float(m.sum()) ** 2 / squares if squares > 0 else math.nan


def bias_reduced_variance(totals: np.ndarray, sizes: np.ndarray) -> float:
    """CR2's variance of a mean, Σ_c T_c² / (1 - w_c), w_c = m_c / n, from the clusters' influence totals T_c (NaN
    where one cluster holds every row: nothing varies between clusters)."""
    m = np.asarray(sizes, dtype=float)
    share = m / m.sum()
    if len(m) < 2 or np.any(share >= 1.0):
        return math.nan
    t = np.asarray(totals, dtype=float)
    return float(np.sum(t * t / (1.0 - share)))


def icc_estimate(cr2_variance: float, plain_variance: float, sizes: np.ndarray) -> float:
    """ρ from the bias-reduced design effect, (deff - 1) / (m̄ - 1), m̄ = Σm²/n, clipped to [0, 1]; 1 where no spread
    was measured (the most cautious working model), 0 where every cluster is one row (nothing to correlate)."""
    m = np.asarray(sizes, dtype=float)
    mbar = float(np.dot(m, m) / m.sum())
    if mbar <= 1.0:
        return 0.0
    if not (plain_variance > 0 and math.isfinite(cr2_variance)):
        return 1.0
    return float(min(max((cr2_variance / plain_variance - 1.0) / (mbar - 1.0), 0.0), 1.0))


def bell_mccaffrey_df(sizes: np.ndarray, icc: float) -> float:
    """Bell and McCaffrey's degrees of freedom of CR2's variance of a mean over clusters of `sizes`, under rows that
    correlate at `icc` within a cluster (module docstring): C - 1 for equal clusters, near 1 where one cluster holds
    nearly all rows. NaN under two clusters."""
    m = np.asarray(sizes, dtype=float)
    if len(m) < 2:
        return math.nan
    n = float(m.sum())
    q = float(np.dot(m, m))
    rho = min(max(float(icc), 0.0), 1.0)
    d = 1.0 / (n * n * (1.0 - m / n))
    # S = diag(s) + P Qᵀ: (1 - ρ)(diag(m) - m mᵀ/n) + ρ(diag(m²) - (m² mᵀ + m (m²)ᵀ)/n + q m mᵀ/n²)
    s = (1.0 - rho) * m + rho * m * m
    p = np.column_stack([-(1.0 - rho) * m / n, -rho * m * m / n, -rho * m / n, rho * q * m / (n * n)])
    qm = np.column_stack([m, m, m * m, m])
    diagonal = d * s  # D·S = diag(d s) + (d P) Qᵀ
    low_rank = d[:, None] * p
    inner = qm.T @ low_rank  # Qᵀ (d P), 4 x 4
    trace = float(diagonal.sum() + np.einsum("ck,ck->", low_rank, qm))
    trace_sq = float(np.dot(diagonal, diagonal) + 2.0 * np.einsum("c,ck,ck->", diagonal, low_rank, qm))
    trace_sq += float(np.trace(inner @ inner))
    return trace * trace / trace_sq if trace_sq > 0 else math.nan


@functools.lru_cache(maxsize=1024)  # the report asks it of every interval, at a few cluster counts
def critical_value(clusters: float | None, level: float = 0.95) -> float:
    """c = √C t / √(C - 1 + t²), t Student's t quantile with C - 1 degrees of freedom: |θ̂ - θ| / √V(θ) > c exactly
    where the t test of the C clusters' terms U_c(θ) rejects (module docstring). It rises to the normal quantile as C
    grows (1.81 at 5 clusters, 1.94 at 30); None (a crossed design, whose clusters are not independent units) gives the
    normal quantile, the largest."""
    from scipy import stats

    quantile = 1 - (1 - level) / 2
    if clusters is None or not math.isfinite(clusters):
        return float(stats.norm.ppf(quantile))
    t = float(stats.t.ppf(quantile, clusters - 1))
    return math.sqrt(clusters) * t / math.sqrt(clusters - 1 + t * t)


def score_bounds(
    estimate: float, variance: float, slope: float, units: float, critical: float
) -> tuple[float, float] | None:
    """The values θ the cluster score test keeps: (θ̂ - θ)² ≤ c² (V₀ + 2 (θ̂ - θ) S + (θ̂ - θ)² / K), a quadratic in
    d = θ̂ - θ. None where no value is refused however far (K ≤ c²: the rows stand for too few clusters for the
    test to say anything) or an input is not finite."""
    c2 = critical * critical
    lead = 1.0 - c2 / units if units > 0 else -1.0
    figures = (estimate, variance, slope, lead)
    if not all(math.isfinite(f) for f in figures) or lead <= 0 or variance < 0:
        return None
    root = math.sqrt((c2 * slope) ** 2 + lead * c2 * variance)
    return estimate - (c2 * slope + root) / lead, estimate - (c2 * slope - root) / lead


def rule_figures(
    psi: np.ndarray,
    weights: np.ndarray,
    labels: np.ndarray,
    clusters: int,
    pairs: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[float, float, int, float]:
    """(slope S, units K, the largest cluster's rows, the working model's effective n) of an estimate whose rows have
    influences `psi` and weights `weights` (a_i, summing to 1), in clusters `labels` (a partition), or, for a crossed
    design, linked in `pairs` (i < j) within the components `labels`.

    The working model's effective n is 1 / Σ_{i~j} a_i a_j r_ij, r_ii = 1 and r_ij = ρ̂ for linked rows, summed over
    the rows outside the largest cluster (component): the variance a random-effects model gives the estimate, per unit
    of a row's variance. It floors the effective n of the Korn-Graubard interval where the clusters' own totals say
    less than their rows: several large clusters that happen to agree leave totals near the mean, which the score test
    reads as a small spread; one cluster alone cannot mislead it, so the largest is left to it. ρ̂ is the rows'
    correlation over linked pairs, 1 - γ / s², γ half the mean squared difference of a linked pair's influences (a
    variogram: a cluster whose rows agree gives 0 however near the mean it lies), s² the rows' variance; 0 without a
    linked pair, 1 where nothing varies."""
    n = len(psi)
    sizes = np.bincount(labels, minlength=clusters)
    largest = int(np.argmax(sizes))
    outside = labels != largest
    variance = float(np.dot(psi, psi)) / (n - 1) if n > 1 else 0.0
    if pairs is None:
        totals = np.bincount(labels, weights=psi, minlength=clusters)
        shares = np.bincount(labels, weights=weights, minlength=clusters)
        squares = np.bincount(labels, weights=psi * psi, minlength=clusters)
        slope = float(np.dot(shares, totals))
        units = 1.0 / float(np.dot(shares, shares))
        linked = float(np.sum(sizes * (sizes - 1))) / 2
        spread = float(np.sum(sizes * squares - totals * totals))
        pooled = float(np.dot(shares, shares) - shares[largest] ** 2)
    else:
        first, second = pairs
        slope = float(np.dot(weights, psi) + np.dot(weights[first], psi[second]) + np.dot(weights[second], psi[first]))
        cross = weights[first] * weights[second]
        units = 1.0 / (float(np.dot(weights, weights)) + 2.0 * float(cross.sum()))
        linked = float(len(first))
        spread = float(np.sum((psi[first] - psi[second]) ** 2))
        pooled = 2.0 * float(cross[outside[first]].sum()) + float(np.dot(weights[outside], weights[outside]))
    icc = 0.0 if not linked else 1.0 if variance <= 0 else min(max(1.0 - spread / (2 * linked) / variance, 0.0), 1.0)
    own = float(np.dot(weights[outside], weights[outside]))  # Σ a_i² outside the largest: each row with itself
    model = own + icc * (pooled - own)
    return slope, units, int(sizes[largest]), 1.0 / model if model > 0 else math.inf
