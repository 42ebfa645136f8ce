"""Standard errors of an aggregate from its per-row influences: the plain (i.i.d.) one with n - 1, the clustered one
(CR1 over a partition, the graph sum over an overlap design), the number of clusters and the design effect; and the
cluster design they are computed over.

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

Which rows share an item, the cluster design (`design_from_keys`), is made from each row's cluster keys.

Every row carries a list of keys (strings; `harness.config.cluster_key` makes them from a task's `cluster_key:`).
Two rows are linked when they share any key; a row with no key is linked to nothing but itself.

- **Partition** (each row one key, the usual case: an MMLongBench `source_id`, a LoCoVQA item): the clusters are the
  keys, and a mean's clustered variance is CR1 (above).
- **Overlap** (rows that carry several keys, crossed designs: an MMNeedle M=10 sample shows 10 stitched images, each
  shown by other samples too): the variance is the dependency-graph sum Σ_{i~j} ψ_i ψ_j over every pair of linked
  rows (Aronow, Samii and Assenova 2015, "Cluster-robust variance estimation for dyadic data", eq. 4; Cameron and
  Miller 2014 for dyads). Why not the connected components as clusters, or a multiway estimator: the components of a
  crossed design grow into one as the sample grows (a thousand M=10 samples of a 10,000-image pool are one component),
  which leaves no cluster to vary; and a multiway (Cameron, Gelbach and Miller 2011) estimator needs a fixed number of
  clustering dimensions, which a set of images per row is not. Two rows that share no key are independent under an
  additive item-effect model, whatever chain of rows links them, which is what the graph sum assumes. It has no
  finite-sample factor (none is established for it), so it is slightly small with few links; where the links happen
  to be transitive (every component a clique: the same image set shown in several configs and nothing else shared)
  the design is a partition into its components and CR1 applies.

`n_clusters` is the number of clusters of a partition, or the number of connected components of an overlap design
(the independent units a bootstrap resamples). In a partition, a key every row shares makes one cluster: nothing is
left to vary between clusters, and the clustered error is NaN (not estimable), never an i.i.d. figure passed off as
clustered. In a crossed design such a key (one haystack every sample of a task shows) is a fixed condition of the
sample, and is left out.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from harness.uncertainty.small_sample import (
    bell_mccaffrey_df,
    bias_reduced_variance,
    icc_estimate,
    kish_clusters,
    rule_figures,
)

NAN = math.nan


@dataclass(frozen=True)
class ClusterDesign:
    """How the rows of one sample are linked (`design_from_keys`).

    `labels[i]`: the cluster (partition) or connected component (overlap) of row i, 0..n_clusters-1, numbered in
    the order the rows first show them. `pairs`: for an overlap design that is not a partition, the linked pairs
    (i < j) as two index arrays; empty otherwise.
    """

    labels: np.ndarray
    n_clusters: int
    overlap: bool  # True: the graph sum over `pairs`; False: a partition into `labels`
    pairs: tuple[np.ndarray, np.ndarray] = field(default=(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)))

    @property
    def n(self) -> int:
        return len(self.labels)

    def cluster_sizes(self) -> np.ndarray:
        """Rows per cluster (per component for an overlap design)."""
        return np.bincount(self.labels, minlength=self.n_clusters) if self.n else np.zeros(0, dtype=np.int64)


def _first_seen_labels(values: Sequence[Hashable]) -> tuple[np.ndarray, int]:
    index: dict[object, int] = {}
    labels = np.fromiter((index.setdefault(v, len(index)) for v in values), dtype=np.int64, count=len(values))
    return labels, len(index)


def _components(n: int, rows: np.ndarray, keys: np.ndarray, n_keys: int) -> tuple[np.ndarray, int]:
    """Connected components of the row-key graph, labelled by first row."""
    from scipy.sparse import coo_matrix  # scipy is imported where a crossed design is met (it takes ~0.4 s)
    from scipy.sparse.csgraph import connected_components

    size = n + n_keys
    graph = coo_matrix((np.ones(len(rows)), (rows, n + keys)), shape=(size, size)).tocsr()
    _, component = connected_components(graph, directed=False)
    labels, count = _first_seen_labels(component[:n].tolist())
    return labels, count


def _linked_pairs(n: int, rows: np.ndarray, keys: np.ndarray, n_keys: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair i < j of rows sharing at least one key, once (two rows sharing ten images are one pair)."""
    from scipy.sparse import coo_matrix, triu

    incidence = coo_matrix((np.ones(len(rows)), (rows, keys)), shape=(n, n_keys)).tocsr()
    linked = triu(incidence @ incidence.T, k=1).tocoo()
    return linked.row.astype(np.int64), linked.col.astype(np.int64)


def design_from_keys(keys: Sequence[Sequence[Hashable]]) -> ClusterDesign:
    """The design of rows whose cluster keys are `keys` (one list per row).

    Edge cases: no rows gives an empty partition (n_clusters 0); a row with no key is a cluster of its own; a row
    listing a key twice is the same as listing it once; rows that each carry at most one key are a partition, as
    are rows whose links are transitive (checked: every component a clique). Where rows carry several keys (a
    crossed design), a key every row carries is left out: it would link every pair and leave nothing to vary (a
    haystack every sample of a task shows is a fixed condition of the task, not a sampled unit). Where each row
    carries one key, a key every row carries is one cluster, and the clustered error is not estimable (NaN).
    """
    n = len(keys)
    distinct = [tuple(dict.fromkeys(k)) for k in keys]
    if n > 1 and any(len(k) > 1 for k in distinct):
        carried = Counter(key for row_keys in distinct for key in row_keys)
        everywhere = {key for key, count in carried.items() if count == n}
        if everywhere:  # a fixed condition of the sample (one haystack every row shows), not a sampled unit
            distinct = [tuple(key for key in row_keys if key not in everywhere) for row_keys in distinct]
    if all(len(k) <= 1 for k in distinct):
        labels, count = _first_seen_labels([k[0] if k else ("row", i) for i, k in enumerate(distinct)])
        return ClusterDesign(labels, count, overlap=False)
    key_index: dict[Hashable, int] = {}
    row_ids: list[int] = []
    key_ids: list[int] = []
    for i, row_keys in enumerate(distinct):
        for key in row_keys:
            row_ids.append(i)
            key_ids.append(key_index.setdefault(key, len(key_index)))
    rows = np.asarray(row_ids, dtype=np.int64)
    key_array = np.asarray(key_ids, dtype=np.int64)
    labels, count = _components(n, rows, key_array, len(key_index))
    first, second = _linked_pairs(n, rows, key_array, len(key_index))
    sizes = np.bincount(labels, minlength=count)
    if len(first) == int((sizes * (sizes - 1) // 2).sum()):  # every component a clique: a partition
        return ClusterDesign(labels, count, overlap=False)
    return ClusterDesign(labels, count, overlap=True, pairs=(first, second))


@dataclass(frozen=True)
class ClusteredError:
    """An aggregate's errors: `stderr` (i.i.d. rows), `stderr_clustered`, `n` rows, `n_clusters`, `design_effect`
    (the clustered variance over the plain one, each without its small-sample factor), `overlap` (the graph sum of a
    crossed design was used), `method` (how the aggregate was linearized or resampled) and `effective_clusters`
    ((Σ_c T_c²)² / Σ_c T_c⁴ of a partition's cluster totals T_c: how many clusters the clustered variance rests on,
    C where every cluster adds alike, 1 where one carries it all; NaN where not measured). For a partition also
    `stderr_cr2` (the bias-reduced CR2 error), `df` (its Bell-McCaffrey degrees of freedom), `kish_clusters`
    (n² / Σ m_c²) and `largest_cluster` (its rows): what the report's interval rests on where clusters differ in size
    (`harness.uncertainty.small_sample`); NaN and 0 where not measured. Since issue 107, for a partition and a crossed
    design alike, `slope` and `working_model_n` (the cluster score test's slope S and the working model's effective n,
    `small_sample.rule_figures`), with `kish_clusters` the test's units K (a crossed design's: 1 / Σ_{i~j} a_i a_j,
    every row with itself and its linked rows) and `largest_cluster` the largest component's rows."""

    stderr: float
    stderr_clustered: float
    n: int
    n_clusters: int
    design_effect: float
    overlap: bool = False
    method: str = "mean"
    effective_clusters: float = NAN
    stderr_cr2: float = NAN
    df: float = NAN
    kish_clusters: float = NAN
    largest_cluster: int = 0
    slope: float = NAN
    working_model_n: float = NAN
    # a task's own interval of its aggregation, where the task gives one (`metric_errors.with_interval`: MM-NIAH's grid
    # score); () where it gives none for these rows
    interval: tuple[float, ...] | None = None

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
        still = ClusteredError(stderr, 0.0, n, clusters, NAN, design.overlap, method)
        return _with_rule(still if design.overlap else _small_sample(still, psi, design, stderr), psi, design)
    cluster_factor = 1.0 if design.overlap else clusters / (clusters - 1)
    # a partition's clusters can have equal means (0 is its answer); a graph sum of 0 is its links cancelling out
    estimable = raw_clustered > 0 or (raw_clustered == 0 and not design.overlap)
    clustered = math.sqrt(cluster_factor * raw_clustered) if estimable else NAN
    deff = raw_clustered / raw_plain if raw_plain > 0 and estimable else NAN
    effective = NAN
    if not design.overlap and raw_clustered > 0:
        squares = np.bincount(design.labels, weights=psi, minlength=clusters) ** 2
        effective = min(float(squares.sum() ** 2 / np.dot(squares, squares)), float(clusters))
    found = ClusteredError(stderr, clustered, n, clusters, deff, design.overlap, method, effective)
    if not estimable:
        return found
    return _with_rule(found if design.overlap else _small_sample(found, psi, design, stderr), psi, design)


def _with_rule(found: ClusteredError, psi: np.ndarray, design: ClusterDesign) -> ClusteredError:
    """The figures issue 107's interval reads (`small_sample.rule_figures`), each row weighing 1/n; left out where
    every row is its own cluster (nothing clustered: the interval is a binomial's)."""
    if not design.overlap and design.n_clusters >= design.n:
        return found
    pairs = design.pairs if design.overlap else None
    weights = np.full(design.n, 1.0 / design.n)
    slope, units, largest, model_n = rule_figures(psi, weights, design.labels, design.n_clusters, pairs)
    units = found.kish_clusters if not design.overlap else units  # a partition's: n² / Σ m_c², Kish's own
    return replace(found, slope=slope, kish_clusters=units, largest_cluster=largest, working_model_n=model_n)


def _heterogeneity_df(found: ClusteredError) -> float:
    """G* - 1 (at least 1), G* the clusters the clustered variance was measured to rest on (`effective_clusters`):
    Bell-McCaffrey's df takes ρ from the rows, and a draw whose ρ comes out low gets too many degrees of freedom;
    the clusters that carry this draw's variance bound them (issue 98: 91.9 % without, 94 % with, at the worst
    long-tailed cell, bench/unequal_cluster_coverage.py)."""
    g = found.effective_clusters
    return max(g - 1.0, 1.0) if math.isfinite(g) else math.inf


def _small_sample(found: ClusteredError, psi: np.ndarray, design: ClusterDesign, stderr: float) -> ClusteredError:
    """A partition's CR2 error, Bell-McCaffrey degrees of freedom and Kish's clusters beside its CR1 error."""
    sizes = design.cluster_sizes()
    totals = np.bincount(design.labels, weights=psi, minlength=design.n_clusters)
    variance = bias_reduced_variance(totals, sizes)
    scale = 1e-9 * float(np.abs(psi).sum())
    if abs(variance) <= scale * scale:  # rounding of an exact 0, as CR1's (`*`: a float's `**` raises past its range)
        variance = 0.0
    icc = icc_estimate(variance, stderr * stderr, sizes)
    return replace(
        found,
        stderr_cr2=math.sqrt(variance) if variance >= 0 else NAN,
        df=min(bell_mccaffrey_df(sizes, icc), float(design.n_clusters - 1), _heterogeneity_df(found)),
        kish_clusters=kish_clusters(sizes),
        largest_cluster=int(sizes.max()),
    )


def mean_error(values: Sequence[float] | np.ndarray, keys: Sequence[Sequence[Hashable]]) -> ClusteredError:
    """The plain and clustered errors of the mean of `values`, rows linked by `keys` (one key list per row; see
    `design_from_keys`). Edge cases as `influence_error`'s."""
    x = np.asarray(values, dtype=float)
    psi = (x - x.mean()) / len(x) if len(x) else x
    return influence_error(psi, design_from_keys(keys))
