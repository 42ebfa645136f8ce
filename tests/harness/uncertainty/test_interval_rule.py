"""Issue 107: one interval rule for every design (docs/statistics.md, "One rule for every design"). The rule's
decisions on small designed cases, through the run's errors, the results file's `uncertainty` entry and the report's
`Estimate.interval`: the cluster score test against its row-level definition (a partition and a crossed design), CR1
with t_{C-1} where clusters are equal, the issue's draw of four big clusters among singletons that the rule before
left out of its interval, one cluster of 30 % where it was three times as wide, no interval (said why) where one
cluster holds half the rows or the rows stand for too few clusters; and one modest seeded coverage check
(bench/unequal_cluster_coverage.py holds the grid)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from harness.outputs.results.estimates import Estimate, estimate_behind, interval_text
from harness.outputs.results.results import uncertainty_entry
from harness.uncertainty.comparisons import interval
from harness.uncertainty.small_sample import critical_value
from harness.uncertainty.variance import mean_error


def _estimate(scores: np.ndarray, keys: list[list[int]], older: bool = False) -> Estimate:
    """The report's estimate of the rows' mean as a results file records it; `older`: as a file of issue 98 did
    (its Bell-McCaffrey df, none of the rule's figures)."""
    found = mean_error(scores, keys)
    behind = dict(uncertainty_entry(found))
    if older:
        behind = {k: v for k, v in behind.items() if k not in ("slope", "working_model_n", "interval_rule")}
        behind["df"] = found.df
    return estimate_behind(float(scores.mean()), found.stderr, found.stderr_clustered, found.n, 1.0, behind)


def _kept(scores: np.ndarray, keys: list[list[int]], critical: float) -> tuple[float, float]:
    """The score test inverted on a grid, from its definition: θ kept where (x̄ - θ)² ≤ c² Σ_{i~j} u_i u_j, u_i =
    (x_i - θ)/n, over every pair of rows that share a key (each row with itself)."""
    n = len(scores)
    linked = np.array([[bool(set(a) & set(b)) for b in keys] for a in keys], dtype=float)
    grid = np.linspace(0, 1, 20001)
    u = (scores[None, :] - grid[:, None]) / n
    variance = np.einsum("ti,ij,tj->t", u, linked, u)
    kept = grid[(scores.mean() - grid) ** 2 <= critical**2 * variance]
    return float(kept.min()), float(kept.max())


def _score_only(estimate: Estimate) -> tuple[float, float]:
    """The score part of the rule alone: the Korn-Graubard part taken away (a point at the estimate)."""
    from harness.outputs.results.estimates import _with_score

    assert estimate.value is not None
    return _with_score(estimate, (estimate.value, estimate.value), 0.95) or (np.nan, np.nan)


def test_the_score_test_is_its_row_level_definition_in_a_partition_and_a_crossed_design() -> None:
    rng = np.random.default_rng(107)
    keys = [[0]] * 12 + [[1]] * 5 + [[c] for c in range(2, 14)]
    scores = (rng.random(len(keys)) < 0.4).astype(float)
    estimate = _estimate(scores, keys)
    assert _score_only(estimate) == pytest.approx(_kept(scores, keys, critical_value(14)), abs=1e-4)
    crossed = [[i, i + 1] for i in range(10)] + [[20 + i] for i in range(15)] + [[3, 40]] * 4
    scores = (rng.random(len(crossed)) < 0.5).astype(float)
    estimate = _estimate(scores, crossed)
    assert estimate.overlap and estimate.df is None  # a graph sum: the normal quantile, no components' t
    links = sum(bool(set(a) & set(b)) for i, a in enumerate(crossed) for b in crossed[i + 1 :])
    assert estimate.kish_clusters == pytest.approx(len(crossed) ** 2 / (len(crossed) + 2 * links))
    assert _score_only(estimate) == pytest.approx(_kept(scores, crossed, stats.norm.ppf(0.975)), abs=1e-4)


def test_equal_clusters_give_cr1_with_t_on_the_clusters() -> None:
    """With equal clusters the statistic is CR1's t on C - 1 degrees of freedom exactly (Ibragimov and Müller's t test
    of the clusters' terms), so its interval is x̄ ± t_{C-1} · CR1."""
    rng = np.random.default_rng(7)
    keys = [[c] for c in range(8) for _ in range(5)]
    scores = (rng.random(40) < np.repeat(rng.beta(1, 2, 8), 5)).astype(float)
    found = mean_error(scores, keys)
    assert _score_only(_estimate(scores, keys)) == pytest.approx(
        interval(float(scores.mean()), found.stderr_clustered, 0.95, 7), rel=1e-9
    )


def test_four_big_clusters_that_agree_among_singletons_are_covered() -> None:
    """The issue's draw: four clusters of 40 rows, all 0, beside 60 single rows 20 % of them 1 (the truth .2 at ρ .9,
    where every big cluster comes out near 0 in 41 % of draws). The rule before took its error from the singletons'
    small spread and left .2 out; the working model's effective n (the big clusters agree within themselves: ρ̂ 1)
    keeps it."""
    scores = np.r_[np.zeros(160), np.ones(12), np.zeros(48)]
    keys = [[c] for c in range(4) for _ in range(40)] + [[4 + i] for i in range(60)]
    before = _estimate(scores, keys, older=True).interval()
    now = _estimate(scores, keys).interval()
    assert before is not None and before[1] < 0.2
    assert now is not None and now[0] <= 0.2 <= now[1]


def test_one_cluster_of_30_percent_is_no_wider_than_its_score_test_needs() -> None:
    """One cluster of 127 rows among 99 of 3 (30 % of 424), ρ .3, p .2: the rule before rested on Bell-McCaffrey's
    1.1-1.5 degrees of freedom and Kish's floor, 2-3 times the width of a wild cluster bootstrap that covers there."""
    rng = np.random.default_rng(30)
    sizes = np.array([127] + [3] * 99)
    keys = [[int(c)] for c in np.repeat(np.arange(100), sizes)]
    ratios = []
    for _ in range(20):
        chance = np.repeat(rng.beta(0.2 * 7 / 3, 0.8 * 7 / 3, 100), sizes)
        scores = (rng.random(len(keys)) < chance).astype(float)
        before, now = (_estimate(scores, keys, older).interval() for older in (True, False))
        assert before is not None and now is not None
        ratios.append((now[1] - now[0]) / (before[1] - before[0]))
    assert np.median(ratios) < 0.7


def test_no_interval_where_one_cluster_holds_half_the_rows_or_too_few_clusters_stand() -> None:
    half = [[0]] * 57 + [[c] for c in range(1, 20) for _ in range(3)]
    scores = (np.arange(len(half)) % 3 == 0).astype(float)
    estimate = _estimate(scores, half)
    assert estimate.interval() is None
    assert interval_text(estimate, 100) == "33.3 (no interval: one cluster holds 57 of 114 rows, half or more)"
    few = [[c] for c in range(3) for _ in range(40)] + [[c] for c in range(3, 13)]  # three of 40 among 10 singletons
    estimate = _estimate((np.arange(130) % 4 == 0).astype(float), few)
    assert estimate.interval() is None
    assert (
        estimate.why_no_interval == "no interval: the rows stand for 3.5 effective clusters; an interval needs over 3.7"
    )
    three = _estimate(np.zeros(9), [[c] for c in range(3) for _ in range(3)])  # equal: c(3)² = 2.7 < 3 clusters
    assert interval_text(three, 100) == "0.0 [0.0, 56.1]"


def test_big_clusters_among_singletons_cover() -> None:
    """A modest seeded check of the grid's family (bench/unequal_cluster_coverage.py, 1,000 replications a cell):
    four clusters of 40 among 60 singletons, ρ .9, p .2, where the rule before covered 75 %."""
    rng = np.random.default_rng(1071)
    sizes = np.array([40] * 4 + [1] * 60)
    keys = [[int(c)] for c in np.repeat(np.arange(64), sizes)]
    covered = []
    for _ in range(300):
        chance = np.repeat(rng.beta(0.2 / 9, 0.8 / 9, 64), sizes)
        bounds = _estimate((rng.random(220) < chance).astype(float), keys).interval()
        assert bounds is not None
        covered.append(bounds[0] <= 0.2 <= bounds[1])
    assert np.mean(covered) >= 0.93
