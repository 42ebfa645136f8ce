"""The report's interval with Korn and Graubard's (1998) degrees-of-freedom correction (issue 63, item 4): Wilson on
the effective n times (t_{n-1} / t_{C-1})². A seeded simulation at few clusters and a skewed p (where the uncorrected
interval fell below 93 %: 89.5 % at worst) covers at least 93 % with it, and it does not touch an interval where no
error was estimated or the clusters are the rows. At 20 clusters, p = .05 and ρ = .3 it still falls short (about
90 %), which the docs say."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import stats

from harness.outputs.results.estimates import Estimate
from harness.uncertainty.variance import mean_error

REPLICATIONS = 1500


def _coverage(clusters: int, rows: int, p: float, icc: float, seed: int) -> tuple[float, float]:
    """Coverage of the report's interval, corrected and not, for a 0/1 score whose items' chances are Beta with mean p
    and intra-cluster correlation `icc` (a + b = 1/icc - 1)."""
    rng = np.random.default_rng(seed)
    total = 1 / icc - 1
    keys = [[i // rows] for i in range(clusters * rows)]
    covered = [0, 0]
    for _ in range(REPLICATIONS):
        chance = np.repeat(rng.beta(p * total, (1 - p) * total, clusters), rows)
        scores = (rng.random(clusters * rows) < chance).astype(float)
        found = mean_error(list(scores), keys)
        estimate = Estimate(float(scores.mean()), found.stderr, found.stderr_clustered, found.n, found.n_clusters, 1)
        plain = dataclasses.replace(estimate, n_clusters=None)  # no df: the uncorrected interval
        for k, shown in enumerate((estimate, plain)):
            low, high = shown.interval() or (np.nan, np.nan)
            covered[k] += low <= p <= high
    return covered[0] / REPLICATIONS, covered[1] / REPLICATIONS


@pytest.mark.parametrize(("clusters", "p"), [(10, 0.9), (30, 0.9)])
def test_few_clusters_and_a_skewed_score_cover_with_the_correction(clusters: int, p: float) -> None:
    corrected, uncorrected = _coverage(clusters, 6, p, 0.3, 63 + clusters)
    assert corrected >= 0.93 and corrected > uncorrected, (corrected, uncorrected)


def test_the_hardest_setting_is_better_but_still_short() -> None:
    # 20 clusters, p = .05, ρ = .3: most replications have a few positives in one or two items; the correction helps
    # but does not reach 93 % (docs/statistics.md says so)
    corrected, uncorrected = _coverage(20, 6, 0.05, 0.3, 83)
    assert corrected >= uncorrected + 0.03 and corrected >= 0.89, (corrected, uncorrected)


def test_the_factor_is_korn_graubards_and_leaves_other_intervals_alone() -> None:
    estimate = Estimate(0.3, 0.03, 0.06, 120, 20, 1)
    factor = (stats.t.ppf(0.975, 119) / stats.t.ppf(0.975, 19)) ** 2
    assert estimate.interval_n() == pytest.approx(0.3 * 0.7 / 0.06**2 * factor)
    # no error estimated (every row alike): n_eff is the clusters, uncorrected
    alike = Estimate(0.0, 0.0, 0.0, 18, 3, 1)
    assert alike.interval_n() == alike.effective_n() == 3
    # every row its own cluster: the factor is 1
    rows = Estimate(0.3, 0.05, 0.05, 84, 84, 1)
    assert rows.interval_n() == pytest.approx(rows.effective_n())
