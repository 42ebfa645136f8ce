"""Standard errors of an aggregate from its per-row influences: the plain (i.i.d.) one with n - 1, the clustered one
(CR1 over a partition, the graph sum over an overlap design: `harness.uncertainty.design`), the number of clusters
and the design effect.

The influence ψ_i of row i on an estimate θ̂ is its first-order share of the error: θ̂ - θ ≈ Σ_i ψ_i
(`harness.uncertainty.influence`). For a mean, ψ_i = (x_i - x̄)/n, and the two errors below are exactly the anchors':

- plain: sqrt(n/(n-1) Σ ψ_i²) = sd(x, ddof=1)/√n, lm-eval's, lmms-eval's and inspect_ai's `stderr()`;
- clustered: sqrt(C/(C-1) Σ_c (Σ_{i in c} ψ_i)²), inspect_ai's `stderr(cluster=...)` (CR1), which is also
  statsmodels' cluster-robust error of an intercept-only OLS fit (`cov_type="cluster"`: its factor
  C/(C-1) · (n-1)/(n-k) is C/(C-1) for the one coefficient). lmms-eval's `clustered_stderr` is the same sum without
  C/(C-1) (Miller 2024, eq. 4).

The design effect is the ratio of the two variances before their small-sample factors, Σ_c (Σ_{i in c} ψ_i)² / Σ ψ_i²
(Kish's deff, estimated): exactly 1 when every cluster is one row, exactly m when clusters of m rows each agree within
themselves (a constant answer to an item asked m times), 1 + (m - 1)ρ in expectation at intra-cluster correlation ρ.
The effective sample size is n / deff.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from harness.uncertainty.design import ClusterDesign, design_from_keys

NAN = math.nan


@dataclass(frozen=True)
class ClusteredError:
    """An aggregate's errors: `stderr` (i.i.d. rows), `stderr_clustered`, `n` rows, `n_clusters`, `design_effect`
    (the clustered variance over the plain one, each without its small-sample factor), `overlap` (the graph sum of a
    crossed design was used) and `method` (how the aggregate was linearized or resampled)."""

    stderr: float
    stderr_clustered: float
    n: int
    n_clusters: int
    design_effect: float
    overlap: bool = False
    method: str = "mean"

    @property
    def effective_n(self) -> float:
        """n / design effect (NaN where the design effect is unknown or 0)."""
        deff = self.design_effect
        return self.n / deff if math.isfinite(deff) and deff > 0 else NAN


def sample_stderr(values: Sequence[float] | np.ndarray) -> float:
    """sd(values, ddof=1) / sqrt(n): the plain standard error of a mean, as lm-eval, lmms-eval and inspect_ai compute it.

    Edge cases: n = 0 or 1 gives NaN (no spread to estimate); all values equal (all 0, all 1) gives 0.0; a NaN value
    gives NaN.
    """
    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return NAN
    return float(np.std(x, ddof=1) / math.sqrt(len(x)))


def cluster_sums(influence: np.ndarray, design: ClusterDesign) -> float:
    """The clustered variance before its small-sample factor: Σ_c (Σ_{i in c} ψ_i)² for a partition, and for an
    overlap design Σ_i ψ_i² + 2 Σ_{i<j linked} ψ_i ψ_j (every linked pair once)."""
    if design.overlap:
        first, second = design.pairs
        return float(np.dot(influence, influence) + 2.0 * np.dot(influence[first], influence[second]))
    sums = np.bincount(design.labels, weights=influence, minlength=design.n_clusters)
    return float(np.dot(sums, sums))


def influence_error(
    influence: Sequence[float] | np.ndarray,
    design: ClusterDesign,
    *,
    plain_variance: float | None = None,
    plain_factor: float | None = None,
    method: str = "mean",
) -> ClusteredError:
    """The errors of an aggregate whose rows have influences `influence` under `design`.

    The plain variance is Σ ψ_i² with the factor n/(n-1) unless the aggregate has its own (`plain_variance`, before
    its factor, and `plain_factor`: a ratio of sums counts each unit a trial, `harness.uncertainty.influence`). The
    clustered variance is `cluster_sums` with the factor C/(C-1) for a partition and none for an overlap design.

    Edge cases: n = 0 gives NaN errors and 0 clusters; n = 1 NaN errors; one cluster of a partition (all rows share a
    key) a NaN clustered error and design effect, the plain error kept (an overlap design linked into one component
    still has its graph sum); all values equal (all 0, all 1: every ψ 0) gives errors
    0.0 and a NaN design effect (0/0); clusters whose means are all equal a clustered error and design effect 0.0 (up
    to rounding, which is snapped to 0); a NaN influence gives NaN errors; a graph sum that is not positive (its cross
    terms may be negative, or cancel every square) gives a NaN clustered error.
    """
    psi = np.asarray(influence, dtype=float)
    n = len(psi)
    if n != design.n:
        raise ValueError(f"{n} influences for a design of {design.n} rows")
    with np.errstate(over="ignore", invalid="ignore"):  # values past 1e154 square to inf: an infinite error, said so
        return _error(psi, design, plain_variance, plain_factor, method)


def _error(
    psi: np.ndarray, design: ClusterDesign, plain_variance: float | None, plain_factor: float | None, method: str
) -> ClusteredError:
    n = len(psi)
    if n < 2:
        return ClusteredError(NAN, NAN, n, design.n_clusters, NAN, design.overlap, method)
    raw_plain = float(np.dot(psi, psi)) if plain_variance is None else plain_variance
    factor = n / (n - 1) if plain_factor is None else plain_factor
    stderr = math.sqrt(factor * raw_plain) if raw_plain >= 0 else NAN
    raw_clustered = cluster_sums(psi, design)
    rounding = 1e-9 * float(np.abs(psi).sum())
    if abs(raw_clustered) <= rounding * rounding:  # rounding of an exact 0 (equal cluster means); `*`: inf, not raise
        raw_clustered = 0.0
    clusters = design.n_clusters
    if clusters < 2 and not design.overlap:  # the graph sum needs no second component: it sums over links
        return ClusteredError(stderr, NAN, n, clusters, NAN, design.overlap, method)
    if raw_plain == 0 and raw_clustered == 0:  # no spread at all: nothing clusters, nothing varies
        return ClusteredError(stderr, 0.0, n, clusters, NAN, design.overlap, method)
    cluster_factor = 1.0 if design.overlap else clusters / (clusters - 1)
    # a partition's clusters can have equal means (0 is its answer); a graph sum of 0 is its links cancelling out
    estimable = raw_clustered > 0 or (raw_clustered == 0 and not design.overlap)
    clustered = math.sqrt(cluster_factor * raw_clustered) if estimable else NAN
    deff = raw_clustered / raw_plain if raw_plain > 0 and estimable else NAN
    return ClusteredError(stderr, clustered, n, clusters, deff, design.overlap, method)


def mean_error(values: Sequence[float] | np.ndarray, keys: Sequence[Sequence[Hashable]]) -> ClusteredError:
    """The plain and clustered errors of the mean of `values`, rows linked by `keys` (one key list per row; see
    `harness.uncertainty.design`). Edge cases as `influence_error`'s."""
    x = np.asarray(values, dtype=float)
    psi = (x - x.mean()) / len(x) if len(x) else x
    return influence_error(psi, design_from_keys(keys))


def clustered_stderr(values: Sequence[float] | np.ndarray, clusters: Sequence[Hashable]) -> float:
    """CR1 standard error of a mean with one cluster id per row (inspect_ai's `stderr(cluster=...)`):
    sqrt(C/(C-1) Σ_c (Σ_{i in c} (x_i - x̄))²) / n. Edge cases: fewer than two rows or two clusters give NaN;
    all values equal give 0.0."""
    return mean_error(values, [[c] for c in clusters]).stderr_clustered
