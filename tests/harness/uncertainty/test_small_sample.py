"""Issue 98: where clusters differ in size. CR2's variance of a mean and its Bell-McCaffrey degrees of freedom
(`harness.uncertainty.small_sample`) against their row-level definitions, the degrees of freedom a paired comparison
rests on, and no interval, said why, where one cluster holds nearly every row (the interval rule of issue 107:
tests/harness/uncertainty/test_interval_rule.py)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import sqrtm

from harness.outputs.results.estimates import Estimate, estimate_behind, interval_text
from harness.outputs.results.results import uncertainty_entry
from harness.uncertainty.comparisons import paired_difference
from harness.uncertainty.small_sample import bell_mccaffrey_df, bias_reduced_variance, kish_clusters
from harness.uncertainty.variance import mean_error

UNEQUAL = (np.array([7, 1, 2, 2, 5, 1, 3]), 0.4)


def _rows(sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's cluster, and the n x C indicator of the clusters."""
    labels = np.repeat(np.arange(len(sizes)), sizes)
    return labels, (labels[:, None] == np.arange(len(sizes))[None, :]).astype(float)


def _dense_bell_mccaffrey(sizes: np.ndarray, icc: float) -> float:
    """(Σλ)²/Σλ², λ the eigenvalues of Ω^½ (I - H) M (I - H) Ω^½, built row by row: H = 11ᵀ/n, Ω equicorrelated at
    `icc` within a cluster, M = Σ_c u_c (I - H_cc)^-1 u_cᵀ / n² in CR2's form for an intercept."""
    labels, indicator = _rows(sizes)
    n = len(labels)
    residual = np.eye(n) - np.full((n, n), 1.0 / n)
    omega = (1 - icc) * np.eye(n) + icc * indicator @ indicator.T
    middle = np.zeros((n, n))
    for c in range(len(sizes)):
        rows = np.flatnonzero(labels == c)
        adjust = np.real(sqrtm(np.linalg.inv(np.eye(len(rows)) - np.full((len(rows), len(rows)), 1.0 / n))))
        weights = np.zeros(n)
        weights[rows] = adjust.sum(axis=0)
        middle += np.outer(weights, weights) / n**2
    eigen = np.real(np.linalg.eigvals(middle @ residual @ omega @ residual))  # Ω^½ ... Ω^½'s, without the root
    return float(eigen.sum() ** 2 / (eigen**2).sum())


@pytest.mark.parametrize("icc", [0.0, 0.4, 1.0])
def test_bell_mccaffrey_df_is_its_row_level_definition(icc: float) -> None:
    sizes = UNEQUAL[0]
    assert bell_mccaffrey_df(sizes, icc) == pytest.approx(_dense_bell_mccaffrey(sizes, icc), rel=1e-9)
    assert bell_mccaffrey_df(np.full(9, 4), icc) == pytest.approx(8.0)  # equal clusters: C - 1 at any ρ


def test_cr2_of_a_mean_is_the_adjusted_residuals_and_cr1_for_equal_clusters() -> None:
    rng = np.random.default_rng(98)
    sizes = UNEQUAL[0]
    labels, _ = _rows(sizes)
    x = rng.random(len(labels))
    residual = x - x.mean()
    n = len(x)
    adjusted = 0.0
    for c in range(len(sizes)):
        e = residual[labels == c]
        root = np.real(sqrtm(np.linalg.inv(np.eye(len(e)) - np.full((len(e), len(e)), 1.0 / n))))
        adjusted += (root @ e).sum() ** 2 / n**2
    totals = np.bincount(labels, weights=residual / n)
    assert bias_reduced_variance(totals, sizes) == pytest.approx(adjusted, rel=1e-9)
    equal = mean_error(x[:12], [[i // 3] for i in range(12)])
    assert equal.stderr_cr2 == pytest.approx(equal.stderr_clustered, rel=1e-12)
    assert kish_clusters(sizes) == pytest.approx(21**2 / 93)


def _estimate(scores: np.ndarray, keys: list[list[int]]) -> Estimate:
    """The report's estimate of the rows' mean, as the results file records it and `estimate_of` reads it back."""
    found = mean_error(scores, keys)
    behind = uncertainty_entry(found)
    return estimate_behind(float(scores.mean()), found.stderr, found.stderr_clustered, found.n, 1.0, behind)


def test_one_cluster_of_nearly_every_row_gives_no_interval_and_says_why() -> None:
    sizes = np.array([148] + [2] * 8)
    labels, _ = _rows(sizes)
    scores = (np.arange(len(labels)) % 5 == 0).astype(float)
    estimate = _estimate(scores, [[int(c)] for c in labels])
    assert estimate.interval() is None
    assert interval_text(estimate, 100) == "20.1 (no interval: one cluster holds 148 of 164 rows, half or more)"
    assert estimate.kish_clusters == pytest.approx(164**2 / (148**2 + 8 * 4))


def test_a_paired_difference_rests_on_bell_mccaffrey_df_where_clusters_differ() -> None:
    """The comparison's t uses the same degrees of freedom as the report's interval: one cluster of 20 rows beside
    six of one row is about 1.3 effective degrees of freedom, not C - 1 = 6."""
    keys = [[0]] * 20 + [[c] for c in range(1, 7)]
    a = np.array([1.0, 0.0] * 10 + [1, 1, 0, 1, 1, 0])
    b = np.array([0.0, 0.0] * 10 + [0, 1, 0, 0, 0, 0])
    found = paired_difference(a, b, keys)
    error = mean_error(a - b, keys)
    assert error.df < 2.0
    q = (found.high - found.low) / (2 * max(error.stderr_cr2, error.stderr_clustered))
    assert q > 4.3  # t_2's 97.5 % point; t_6's is 2.45
