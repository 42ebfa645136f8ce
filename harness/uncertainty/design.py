"""Which rows share an item: a sample's cluster design, made from each row's cluster keys.

Every row carries a list of keys (strings; `harness.config.cluster_key` makes them from a task's `cluster_key:`).
Two rows are linked when they share any key; a row with no key is linked to nothing but itself.

- **Partition** (each row one key, the usual case: an MMLongBench `source_id`, a LoCoVQA item): the clusters are the
  keys, and a mean's clustered variance is CR1, C/(C-1) Σ_c (Σ_{i in c} ψ_i)² (inspect_ai's `stderr(cluster=...)`;
  Miller 2024, eq. 4, with the finite-cluster factor).
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

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np


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
