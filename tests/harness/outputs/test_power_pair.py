"""`harness power --pair` (issue 63, item 4): a paired comparison planned from a finished pair measures the
difference's own sd and design effect. A seeded simulation with item effects each model has of its own (100 items x 6
rows; the paired difference's design effect is not one run's): a clustered test at the MDE `from_pair` prints for the
pilot's design rejects in about 80 % of experiments, the power asked; one run's design effect with r = .5 assumed gives
an MDE at which it rejects in under 78 % (the issue's 76.6 %)."""

from __future__ import annotations

import numpy as np
from scipy import stats

from harness.outputs.power.analysis import PowerOptions, from_errors, from_pair
from harness.uncertainty.comparisons import paired_difference
from harness.uncertainty.variance import ClusteredError, design_from_keys, mean_error

ITEMS, ROWS = 100, 6
EXPERIMENTS = 2000


def _pair(rng: np.random.Generator, runs: int) -> tuple[np.ndarray, np.ndarray]:
    """`runs` pairs of 0/1 scores (runs x items x rows): a shared item difficulty, and each model's own item effect."""
    shared = rng.normal(0, 1, (runs, ITEMS, 1))
    a = rng.random((runs, ITEMS, ROWS)) < stats.norm.cdf(shared + rng.normal(0, 0.8, (runs, ITEMS, 1)))
    b = rng.random((runs, ITEMS, ROWS)) < stats.norm.cdf(shared + rng.normal(0, 0.8, (runs, ITEMS, 1)))
    return a.astype(float), b.astype(float)


def test_a_test_at_the_pairs_mde_has_the_power_asked() -> None:
    rng = np.random.default_rng(63)
    a, b = _pair(rng, 1)
    keys = [[i // ROWS] for i in range(ITEMS * ROWS)]
    paired = paired_difference(list(a.ravel()), list(b.ravel()), keys)
    found = ClusteredError(paired.stderr, paired.stderr_clustered, paired.n, paired.n_clusters, paired.design_effect)
    r = float(np.corrcoef(a.ravel(), b.ravel())[0, 1])
    row = from_pair("sim", "t", "acc", found, r, PowerOptions(), 1)
    assert row["design_effect"] > 1 and row["n"] == ITEMS * ROWS and "per-row r" in row["note"]
    # one run's sd and design effect with r = .5 assumed (what a single run gives): its MDE falls short of 80 %
    one_run = from_errors(
        "sim", "t", "acc", design_from_keys(keys), mean_error(list(a.ravel()), keys), PowerOptions(), 1
    )
    experiments = _pair(rng, EXPERIMENTS)
    assert 0.76 <= _power(experiments, float(row["mde"]) / 100) <= 0.86
    assert _power(experiments, float(one_run["mde"]) / 100) < 0.78


def _power(experiments: tuple[np.ndarray, np.ndarray], effect: float) -> float:
    """The clustered t test's rejections (CR1, as paired_difference; t on items - 1) with the true difference at
    `effect`, a proportion."""
    da, db = experiments
    d = da - db + effect
    mean = d.mean(axis=(1, 2))
    cluster_sums = (d - mean[:, None, None]).sum(axis=2)
    se = np.sqrt(ITEMS / (ITEMS - 1) * (cluster_sums**2).sum(axis=1)) / (ITEMS * ROWS)
    return float((np.abs(mean / se) > stats.t.ppf(0.975, ITEMS - 1)).mean())
