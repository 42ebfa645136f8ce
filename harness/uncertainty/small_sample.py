"""Small-sample corrections of a clustered error when clusters differ in size: the bias-reduced (CR2) variance of a
mean and its Bell-McCaffrey degrees of freedom, and Kish's effective number of clusters.

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
"""

from __future__ import annotations

import math

import numpy as np

TOO_FEW_KISH = 2.0  # below it the rows stand for about one cluster: no interval (the report says why)


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
