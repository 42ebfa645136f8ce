"""Paired differences inside their scale (issue 63, items 3 and 4): Newcombe's hybrid score interval for paired proportions
against published worked examples, inside [-1, 1] at the extremes, covering at its nominal rate on clustered rows
through the effective n (seeded simulation); the exact cluster sign-flip test holding its level with few clusters; bootstrap replicates equal up to rounding
giving no spread."""

from __future__ import annotations

import numpy as np
import pytest

from harness.uncertainty.bootstrap import bootstrap_error, bootstrap_stderr
from harness.uncertainty.comparisons import (
    cluster_sign_flip_p,
    clustered_newcombe,
    newcombe_paired_interval,
    paired_difference,
)
from harness.uncertainty.variance import design_from_keys


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        # Newcombe (1998), Stat Med 17:2635, Table II example (a), method 10
        ((36, 12, 2, 0), (0.0569, 0.3404)),
        # Fagerland, Lydersen and Laake (2014 / 2017, ch. 8): Bentur et al. (2009), Newcombe square-and-add
        ((1, 1, 7, 12), (-0.5069, -0.0256)),
        # Altman et al. (2000), Statistics with Confidence, Table 6.2
        ((14, 5, 0, 22), (0.0115, 0.2265)),
    ],
)
def test_newcombe_s_paired_interval_matches_the_published_examples(
    table: tuple[int, int, int, int], expected: tuple[float, float]
) -> None:
    low, high = newcombe_paired_interval(*table)
    assert (low, high) == pytest.approx(expected, abs=6e-5)


def test_the_extremes_stay_inside_the_scale_and_never_collapse() -> None:
    # 29/30 against 30/30 (one row B alone got right): the score interval is asymmetric about -1/30, inside
    # [-1, 1], and contains 0
    low, high = newcombe_paired_interval(29, 0, 1, 0)
    assert -1 < low < -1 / 30 < 0 < high < 1
    for table in [(30, 0, 0, 0), (0, 0, 0, 30), (0, 30, 0, 0), (0, 0, 30, 0), (0, 1, 0, 0)]:
        low, high = newcombe_paired_interval(*table)
        assert -1 <= low < high <= 1, table  # no spread in the data, yet an interval of positive width
    assert newcombe_paired_interval(0, 30, 0, 0)[1] == 1.0 and newcombe_paired_interval(0, 0, 30, 0)[0] == -1.0
    assert all(np.isnan(newcombe_paired_interval(0, 0, 0, 0)))


def _clustered_pair(
    rng: np.random.Generator, clusters: int, size: int, p_a: float, p_b: float, rho: float
) -> tuple[np.ndarray, np.ndarray, list[list[int]]]:
    """Two runs' 0/1 rows on `clusters` items of `size` rows: each item's rows share a latent item effect (so rows
    of an item agree beyond chance, in both runs alike), probit scale."""
    from scipy import stats

    item = rng.normal(size=clusters).repeat(size) * np.sqrt(rho)
    noise = np.sqrt(1 - rho)
    a = (item + noise * rng.normal(size=clusters * size) < stats.norm.ppf(p_a)).astype(float)
    b = (item + noise * rng.normal(size=clusters * size) < stats.norm.ppf(p_b)).astype(float)
    return a, b, [[c] for c in range(clusters) for _ in range(size)]


def _true_difference(p_a: float, p_b: float) -> float:
    return p_a - p_b  # each row's marginal probability is p whatever the item effect (probit with unit variance)


@pytest.mark.parametrize(
    ("clusters", "size", "p_a", "p_b", "rho"),
    [(30, 6, 0.5, 0.5, 0.5), (30, 6, 0.95, 0.98, 0.5), (100, 3, 0.9, 0.8, 0.3), (15, 6, 0.97, 0.97, 0.5)],
)
def test_the_clustered_newcombe_interval_covers_and_stays_in_range(
    clusters: int, size: int, p_a: float, p_b: float, rho: float
) -> None:
    rng = np.random.default_rng(63)
    truth, covered, reps = _true_difference(p_a, p_b), 0, 400
    for _ in range(reps):
        a, b, keys = _clustered_pair(rng, clusters, size, p_a, p_b, rho)
        found = paired_difference(a, b, keys)
        low, high = clustered_newcombe(a, b, found.stderr, found.stderr_clustered, found.n_clusters)
        assert -1 <= low < high <= 1
        covered += low <= truth <= high
    assert covered / reps >= 0.92  # nominal 95 %; 400 draws: a binomial sd of 1.1 points


def test_the_cluster_sign_flip_test_is_exact_at_few_clusters() -> None:
    assert cluster_sign_flip_p([0.0, 0.0, 0.0], [0, 1, 1]) == 1.0  # identical runs
    assert cluster_sign_flip_p([-1.0, -1.0], [0, 1]) == 0.5  # two seeds, A wrong on both: the smallest p of C = 2
    assert cluster_sign_flip_p([1.0] * 6, [0, 1, 2, 3, 4, 5]) == pytest.approx(2 / 64)
    rng = np.random.default_rng(7)
    rejected, reps = 0, 2000
    for _ in range(reps):  # no difference, six clusters of five correlated rows: rejects at most 5 %
        a, b, keys = _clustered_pair(rng, 6, 5, 0.6, 0.6, 0.5)
        rejected += cluster_sign_flip_p(a - b, [k[0] for k in keys]) <= 0.05
    assert rejected / reps <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / reps)
    with pytest.raises(ValueError, match="at most 20"):
        cluster_sign_flip_p(np.ones(21), np.arange(21))


def test_replicates_equal_up_to_rounding_are_no_spread() -> None:
    """Issue 63, item 4: a statistic resting on one row (MileBench's mean over a level's rows) redrawn in another
    order differs by rounding alone; its bootstrap error is 0.0, not 1e-14 (which made p about 1e-31)."""

    def mean_of_present(values: list[float | None]) -> float:
        present = [v for v in values if v is not None]
        return sum(present) / len(present) if present else float("nan")

    # two rows of the level, in two clusters, equal up to rounding: every redraw's mean is the same but for rounding
    values: list[float | None] = [None, 0.1 + 0.2, None, None, 0.3, None]
    design = design_from_keys([[i // 2] for i in range(len(values))])
    error = bootstrap_error(mean_of_present, values, design, iters=200, seed=3)
    assert error.stderr == 0.0 and error.stderr_clustered == 0.0
    assert bootstrap_stderr(np.array([1.0, 1.0 + 1e-15, 1.0 - 1e-15])) == 0.0
    assert bootstrap_stderr(np.array([1.0, 1.1, 0.9])) == pytest.approx(0.1)
