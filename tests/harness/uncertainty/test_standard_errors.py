"""The plain and clustered standard errors of `harness.uncertainty` against the field's own implementations: the
clustered error of a mean is statsmodels' cluster-robust error of an intercept-only fit (inspect_ai's CR1), the plain
one numpy's sd(ddof=1)/√n; the design effect is 1 for rows alone and exactly the cluster size for clusters that agree
within themselves; a crossed design's graph sum is the sum over linked pairs; and a seeded simulation at a known
intra-cluster correlation covers 95 % with the clustered interval where the i.i.d. one does not."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import statsmodels.api as sm

from harness.uncertainty.comparisons import interval
from harness.uncertainty.influence import linearize_by_jackknife, linearize_mean, linearize_ratio
from harness.uncertainty.power import design_effect_from_icc
from harness.uncertainty.variance import design_from_keys, influence_error, mean_error, sample_stderr


def _statsmodels_cluster_se(y: np.ndarray, groups: np.ndarray) -> float:
    fit = sm.OLS(y, np.ones(len(y))).fit(cov_type="cluster", cov_kwds={"groups": groups})
    return float(fit.bse[0])


@pytest.mark.parametrize("seed", range(6))
def test_the_clustered_error_of_a_mean_is_statsmodels_cluster_robust_error_of_an_intercept(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 200))
    groups = rng.integers(0, int(rng.integers(3, 40)), size=n)  # unequal sizes, some ids unused
    y = (rng.random(n) < rng.random()).astype(float) if seed % 2 else rng.normal(size=n)
    error = mean_error(y, [[int(g)] for g in groups])
    assert error.stderr_clustered == pytest.approx(_statsmodels_cluster_se(y, groups), rel=1e-10)
    assert error.stderr == pytest.approx(np.std(y, ddof=1) / math.sqrt(n), rel=1e-12)
    assert error.n_clusters == len(set(groups.tolist()))
    # inspect_ai's `_clustered_stderr`: sqrt(C/(C-1) Σ_c (Σ_i d_ic)²) / n
    d = y - y.mean()
    sums = np.array([d[groups == g].sum() for g in set(groups.tolist())])
    c = len(sums)
    assert error.stderr_clustered == pytest.approx(math.sqrt(c / (c - 1) * (sums**2).sum()) / n, rel=1e-10)


def test_the_plain_error_uses_the_sample_variance() -> None:
    assert sample_stderr([1.0, 0.0, 1.0, 1.0]) == pytest.approx(np.std([1, 0, 1, 1], ddof=1) / 2)
    assert math.isnan(sample_stderr([])) and math.isnan(sample_stderr([1.0]))
    assert sample_stderr([1.0, 1.0, 1.0]) == 0.0


def test_rows_alone_have_a_design_effect_of_one_and_the_plain_error() -> None:
    y = np.random.default_rng(0).random(50)
    error = mean_error(y, [[f"row{i}"] for i in range(50)])
    assert error.design_effect == pytest.approx(1.0) and error.n_clusters == 50
    assert error.stderr_clustered == pytest.approx(error.stderr)


@pytest.mark.parametrize("size", [2, 3, 6])
def test_clusters_that_agree_within_themselves_have_the_cluster_size_as_design_effect(size: int) -> None:
    per_cluster = [1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    y = np.repeat(per_cluster, size)
    error = mean_error(y, [[i // size] for i in range(len(y))])
    assert error.design_effect == pytest.approx(size)
    assert error.effective_n == pytest.approx(len(per_cluster))


def test_edge_cases_say_not_estimable_rather_than_guess() -> None:
    empty = mean_error([], [])
    assert empty.n == 0 and math.isnan(empty.stderr) and math.isnan(empty.stderr_clustered)
    one = mean_error([1.0], [["a"]])
    assert math.isnan(one.stderr)
    single_cluster = mean_error([1.0, 0.0, 1.0], [["a"], ["a"], ["a"]])
    assert single_cluster.n_clusters == 1 and not math.isnan(single_cluster.stderr)
    assert math.isnan(single_cluster.stderr_clustered) and math.isnan(single_cluster.design_effect)
    all_ones = mean_error([1.0] * 6, [[i // 2] for i in range(6)])
    assert all_ones.stderr == 0.0 and all_ones.stderr_clustered == 0.0 and math.isnan(all_ones.design_effect)
    with_nan = mean_error([1.0, math.nan, 0.0], [["a"], ["b"], ["c"]])
    assert math.isnan(with_nan.stderr) and math.isnan(with_nan.stderr_clustered)


def test_a_crossed_design_sums_over_linked_pairs_once() -> None:
    rng = np.random.default_rng(3)
    n, pool = 60, 80
    keys = [[f"img{k}" for k in rng.choice(pool, size=4, replace=False)] for _ in range(n)]
    design = design_from_keys(keys)
    assert design.overlap
    psi = rng.normal(size=n)
    psi -= psi.mean()
    linked = np.array([[bool(set(a) & set(b)) for b in keys] for a in keys])
    brute = float(psi @ linked.astype(float) @ psi)
    error = influence_error(psi, design)
    assert error.stderr_clustered == pytest.approx(math.sqrt(brute))
    components = design.n_clusters
    assert 1 <= components < n


def test_links_that_are_transitive_make_a_partition_and_a_universal_overlap_key_is_left_out() -> None:
    # the same two images shown by the rows of one item, nothing else shared: a partition with CR1
    keys = [["a", "b"], ["a", "b"], ["c", "d"], ["c", "d"], ["e", "f"]]
    design = design_from_keys(keys)
    assert not design.overlap and design.n_clusters == 3
    # one haystack image every row shows, and items that share others: the common one is no unit
    with_common = [["hay", "a"], ["hay", "a"], ["hay", "b"], ["hay", "c"]]
    design = design_from_keys(with_common)
    assert not design.overlap and design.n_clusters == 3
    y = [1.0, 1.0, 0.0, 1.0]
    assert mean_error(y, with_common).stderr_clustered == pytest.approx(
        mean_error(y, [["a"], ["a"], ["b"], ["c"]]).stderr_clustered
    )


def test_a_ratio_of_sums_is_linearized_by_its_influence_function() -> None:
    rng = np.random.default_rng(5)
    a = rng.integers(0, 6, size=40).astype(float)
    b = np.full(40, 5.0)
    keys = [[i // 4] for i in range(40)]
    rows = [str(i) for i in range(40)]
    ratio = linearize_ratio(a, b, rows, keys)
    assert ratio.estimate == pytest.approx(a.sum() / b.sum())
    # with equal denominators the ratio is the mean of a/b: its clustered error is that mean's
    assert ratio.error().stderr_clustered == pytest.approx(mean_error(a / 5, keys).stderr_clustered)
    # the plain error stays the one each unit a trial gives, p(1-p)/Σb
    p = a.sum() / b.sum()
    assert ratio.error().stderr == pytest.approx(math.sqrt(p * (1 - p) / b.sum()))
    # first order: the delete-one jackknife agrees closely
    jack = linearize_by_jackknife(
        lambda pairs: sum(x for x, _ in pairs) / sum(y for _, y in pairs), list(zip(a, b, strict=True)), rows, keys
    )
    first_order = dataclasses.replace(jack, redraw=None).error()  # its influences (jack.error() redraws the ratio)
    assert first_order.stderr_clustered == pytest.approx(ratio.error().stderr_clustered, rel=0.03)
    assert jack.error().stderr_clustered == pytest.approx(ratio.error().stderr_clustered, rel=0.1)  # the bootstrap
    assert math.isnan(linearize_ratio([0.0], [0.0], ["r"], [["k"]]).estimate)


def test_the_jackknife_influence_of_a_mean_is_the_mean_s_exactly() -> None:
    x = np.random.default_rng(2).random(30)
    rows, keys = [str(i) for i in range(30)], [[i // 3] for i in range(30)]
    jack = linearize_by_jackknife(lambda v: sum(v) / len(v), list(x), rows, keys)
    assert np.allclose(jack.influence, linearize_mean(x, rows, keys).influence)


def test_the_design_effect_grows_as_one_plus_m_minus_one_rho() -> None:
    assert design_effect_from_icc([6] * 100, 0.5) == pytest.approx(3.5)
    assert design_effect_from_icc([1] * 10, 0.9) == pytest.approx(1.0)


def test_clustered_intervals_cover_where_iid_ones_do_not() -> None:
    """Seeded: 2,000 samples of 60 clusters of 6 rows at intra-cluster correlation 0.5 (deff 3.5)."""
    rng = np.random.default_rng(48)
    clusters, size, rho, trials = 60, 6, 0.5, 2000
    design = design_from_keys([[i // size] for i in range(clusters * size)])
    covered_clustered = covered_iid = 0
    for _ in range(trials):
        y = np.repeat(rng.normal(scale=math.sqrt(rho), size=clusters), size) + rng.normal(
            scale=math.sqrt(1 - rho), size=clusters * size
        )
        error = influence_error((y - y.mean()) / len(y), design)
        low, high = interval(float(y.mean()), error.stderr_clustered, df=clusters - 1)
        covered_clustered += low <= 0.0 <= high
        low, high = interval(float(y.mean()), error.stderr)
        covered_iid += low <= 0.0 <= high
    assert 0.93 <= covered_clustered / trials <= 0.97
    assert covered_iid / trials < 0.85


def test_clusters_with_equal_means_have_a_clustered_error_of_zero_not_rounding_noise() -> None:
    y = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]  # one right in each of three items
    error = mean_error(y, [[i // 3] for i in range(9)])
    assert error.stderr_clustered == 0.0 and error.design_effect == 0.0 and error.stderr > 0
