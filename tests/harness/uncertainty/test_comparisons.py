"""Comparisons, intervals, multiplicity and power (`harness.uncertainty`) against statsmodels and scipy: McNemar's exact
test, Wilson intervals, Holm and Benjamini-Hochberg, the binomial chance of k of m; a paired difference clustered on
its rows' keys; a group of members that share items counts each item once; the cluster bootstrap is seeded; the
minimum detectable effect and the sample size are each other's inverse."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from harness.uncertainty.bootstrap import bootstrap_error, cluster_bootstrap
from harness.uncertainty.comparisons import (
    adjust_pvalues,
    chance_of_at_least,
    comparison_df,
    effective_n,
    equivalence_p,
    expected_by_chance,
    mcnemar_exact,
    paired_difference,
    two_sided_p,
    wilson_interval,
)
from harness.uncertainty.influence import combine, difference, linearize_mean, rule_gradient
from harness.uncertainty.power import (
    comparison_sd,
    design_effect_from_icc,
    design_effect_of_design,
    icc_of_design,
    links_per_row,
    minimum_detectable_effect,
    sample_size,
    weighted_cluster_size,
)
from harness.uncertainty.variance import design_from_keys, mean_error


@pytest.mark.parametrize(("b", "c"), [(0, 0), (3, 9), (12, 2), (40, 25), (1, 0)])
def test_mcnemar_is_statsmodels_exact_test(b: int, c: int) -> None:
    expected = mcnemar([[7, b], [c, 11]], exact=True).pvalue
    assert mcnemar_exact(b, c) == pytest.approx(expected)
    if b + c:
        assert mcnemar_exact(b, c) == pytest.approx(stats.binomtest(min(b, c), b + c, 0.5).pvalue)


def test_wilson_intervals_are_statsmodels_and_never_collapse() -> None:
    assert wilson_interval(0.3, 50) == pytest.approx(proportion_confint(15, 50, method="wilson"))
    low, high = wilson_interval(0.0, 20)
    assert low == 0.0 and high > 0.1  # 0 of 20 is not "± 0.0"
    # on the effective n: a design effect of 4 over 40 rows is the interval of 10 rows
    assert wilson_interval(0.5, effective_n(40, 4.0, 10)) == pytest.approx(proportion_confint(5, 10, method="wilson"))
    assert effective_n(40, math.nan, 10) == 10  # no spread: as many units as clusters
    assert effective_n(40, 0.5, 40) == 40  # never narrower than i.i.d.
    assert all(math.isnan(v) for v in wilson_interval(0.5, 0))
    with pytest.raises(ValueError):
        wilson_interval(50.0, 10)


def test_multiplicity_is_statsmodels_holm_and_benjamini_hochberg_with_nan_left_alone() -> None:
    p = [0.001, 0.04, math.nan, 0.03, 0.2]
    finite = [0.001, 0.04, 0.03, 0.2]
    for method in ("holm", "fdr_bh"):
        adjusted = adjust_pvalues(p, method)
        assert math.isnan(adjusted[2])
        assert np.allclose(np.delete(adjusted, 2), multipletests(finite, method=method)[1])
    with pytest.raises(ValueError):
        adjust_pvalues(p, "bonferroni")
    assert len(adjust_pvalues([])) == 0
    rng = np.random.default_rng(7)  # holm is computed here (statsmodels' ends in a gc.collect): the same numbers
    for size in (1, 2, 5, 40, 300):
        drawn = np.concatenate([rng.uniform(0, 1, size), rng.uniform(0, 0.01, size), [0.5] * 3])
        assert np.array_equal(adjust_pvalues(drawn, "holm"), multipletests(drawn, method="holm")[1])


def test_the_chance_of_k_disagreements_of_m_is_the_binomial_tail() -> None:
    assert expected_by_chance(209) == pytest.approx(10.45)
    assert chance_of_at_least(15, 209) == pytest.approx(stats.binom.sf(14, 209, 0.05))
    assert chance_of_at_least(0, 5) == 1.0 and chance_of_at_least(6, 5) == 0.0


def test_a_paired_difference_is_clustered_on_its_rows_keys() -> None:
    rng = np.random.default_rng(7)
    item = np.repeat(rng.random(30) < 0.5, 4).astype(float)  # an item effect both runs share
    a = np.where(rng.random(120) < 0.8, item, 1 - item)
    b = np.where(rng.random(120) < 0.7, item, 1 - item)
    keys = [[i // 4] for i in range(120)]
    diff = paired_difference(a, b, keys)
    assert diff.estimate == pytest.approx(a.mean() - b.mean())
    assert diff.stderr_clustered == pytest.approx(mean_error(a - b, keys).stderr_clustered)
    assert diff.a_only == int(((a == 1) & (b == 0)).sum()) and diff.b_only == int(((a == 0) & (b == 1)).sum())
    assert diff.mcnemar_p == pytest.approx(mcnemar_exact(diff.a_only, diff.b_only))
    assert diff.correlation == pytest.approx(np.corrcoef(a, b)[0, 1])
    df = comparison_df(30, False, mean_error(a - b, keys).effective_clusters)  # the clusters it rests on (issue 88)
    assert 10 < df <= 29
    half = stats.t.ppf(0.975, df) * diff.stderr_clustered
    assert (diff.low, diff.high) == pytest.approx((diff.estimate - half, diff.estimate + half))
    same = paired_difference(a, a, keys)
    assert same.estimate == 0.0 and same.stderr_clustered == 0.0 and math.isnan(same.p_value)
    # the same pairs through `difference` of two linearized runs (what a comparison of groups uses)
    rows = [str(i) for i in range(120)]
    linearized = difference(linearize_mean(a, rows, keys), linearize_mean(b, rows, keys))
    assert linearized.error().stderr_clustered == pytest.approx(diff.stderr_clustered)


def test_a_group_over_members_that_share_items_counts_each_item_once() -> None:
    """Two members asking the same 20 items (an MMLongBench source id at two lengths) with the same answers: their
    mean is as uncertain as one member, not sqrt(2) times surer, as members taken for independent would say."""
    values = np.repeat(np.random.default_rng(1).random(20) < 0.5, 3).astype(float)
    keys = [[f"item{i // 3}"] for i in range(60)]
    a = linearize_mean(values, [f"a/{i}" for i in range(60)], keys)
    b = linearize_mean(values, [f"b/{i}" for i in range(60)], keys)
    group = combine([(0.5, a), (0.5, b)], 0.5 * (a.estimate + b.estimate))
    member = a.error()
    assert group.error().stderr_clustered == pytest.approx(member.stderr_clustered)
    assert group.error().n_clusters == 20 and group.error().n == 120
    independent = math.sqrt(2 * member.stderr_clustered**2) / 2
    assert group.error().stderr_clustered > 1.4 * independent
    # members on different items are independent: sqrt(Σ se²)/k, but for CR1's factor, C/(C-1) of the 40 clusters
    # of both where each member's own was 20/19
    c = linearize_mean(values, [f"c/{i}" for i in range(60)], [[f"other{i // 3}"] for i in range(60)])
    apart = combine([(0.5, a), (0.5, c)], 0.5 * (a.estimate + c.estimate)).error()
    members = a.error().stderr_clustered ** 2 + c.error().stderr_clustered ** 2
    assert apart.stderr_clustered == pytest.approx(math.sqrt(members * (40 / 39) / (20 / 19)) / 2)


def test_a_rule_s_gradient_is_taken_numerically() -> None:
    assert np.allclose(rule_gradient(lambda v: float(np.mean(v)), [0.2, 0.4, 0.9]), [1 / 3] * 3)
    assert np.allclose(rule_gradient(lambda v: float(v[0] * v[1]), [2.0, 3.0]), [3.0, 2.0])
    assert rule_gradient(lambda v: float(np.nanmean(v)), [0.5, math.nan])[1] == 0.0


def test_the_cluster_bootstrap_is_seeded_and_close_to_cr1_for_a_mean() -> None:
    rng = np.random.default_rng(11)
    y = np.repeat(rng.random(80), 3) + rng.normal(scale=0.1, size=240)
    keys = [[i // 3] for i in range(240)]
    design = design_from_keys(keys)

    def mean(v: list[float]) -> float:
        return sum(v) / len(v)

    first = cluster_bootstrap(mean, list(y), design, 500, seed=4)
    assert np.array_equal(first, cluster_bootstrap(mean, list(y), design, 500, seed=4))
    assert not np.array_equal(first, cluster_bootstrap(mean, list(y), design, 500, seed=5))
    boot = bootstrap_error(mean, list(y), design, 2000, seed=0)
    exact = mean_error(y, keys)
    assert boot.stderr_clustered == pytest.approx(exact.stderr_clustered, rel=0.08)
    assert boot.stderr == pytest.approx(exact.stderr, rel=0.08)
    assert boot.design_effect == pytest.approx(exact.design_effect, rel=0.2)
    assert len(cluster_bootstrap(mean, [], None, 10)) == 0


def test_minimum_detectable_effect_and_sample_size_are_inverses_with_a_design_effect() -> None:
    sd = comparison_sd(0.5, 0.5, correlation=0.5)  # two 0/1 runs at 50 %, correlated .5 per row
    assert sd == pytest.approx(0.5)
    mde = minimum_detectable_effect(100, sd)
    assert mde == pytest.approx((stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) * 0.5 / 10)
    # lmms-eval's power formula, n = ((z_a/2 + z_b) sd / delta)², is the design effect 1 case
    assert sample_size(mde, sd) == 100
    assert sample_size(mde, sd, design_effect=3.5) == 350
    assert minimum_detectable_effect(100, sd, design_effect=4.0) == pytest.approx(2 * mde)
    assert comparison_sd(0.5, 0.5, paired=False) == pytest.approx(math.sqrt(0.5))
    with pytest.raises(ValueError):
        sample_size(0.0, sd)


def test_equivalence_is_two_one_sided_tests() -> None:
    p = equivalence_p(0.01, 0.02, 0.05)
    assert p == pytest.approx(max(stats.norm.sf((0.01 + 0.05) / 0.02), stats.norm.cdf((0.01 - 0.05) / 0.02)))
    assert equivalence_p(0.0, 0.2, 0.05) > 0.05  # an interval wider than the margin: not shown equivalent
    assert equivalence_p(0.0, 0.01, 0.05) < 0.001
    assert math.isnan(equivalence_p(0.0, 0.1, 0.0))


def test_a_design_s_links_give_its_design_effect_before_a_run() -> None:
    # a partition: 1 + (m̄ - 1)ρ with m̄ = Σm²/Σm, the same as from its cluster sizes
    partition = design_from_keys([[c] for c in "aaaaaabbbccd"])
    assert links_per_row(partition) == pytest.approx(weighted_cluster_size([6, 3, 2, 1]) - 1)
    assert design_effect_of_design(partition, 0.4) == pytest.approx(design_effect_from_icc([6, 3, 2, 1], 0.4))
    assert icc_of_design(partition, design_effect_of_design(partition, 0.4)) == pytest.approx(0.4)
    # a crossed design: rows 0-1 share x, rows 1-2 share y (2 linked pairs of 4 rows), row 3 alone
    crossed = design_from_keys([["x", "z0"], ["x", "y"], ["y", "z2"], ["w"]])
    assert crossed.overlap
    assert links_per_row(crossed) == pytest.approx(2 * 2 / 4)
    # the graph sum's expectation: rows of sd 1, linked pairs correlated at ρ, seeded simulation
    rng = np.random.default_rng(3)
    rho, draws = 0.5, 20000
    shared = rng.normal(size=(draws, 2))  # the x and y effects
    noise = rng.normal(size=(draws, 4))
    rows = np.stack(
        [
            np.sqrt(rho) * shared[:, 0] + np.sqrt(1 - rho) * noise[:, 0],
            np.sqrt(rho / 2) * (shared[:, 0] + shared[:, 1]) + np.sqrt(1 - rho) * noise[:, 1],
            np.sqrt(rho) * shared[:, 1] + np.sqrt(1 - rho) * noise[:, 2],
            noise[:, 3],
        ],
        axis=1,
    )
    pair_correlation = np.corrcoef(rows[:, 0], rows[:, 1])[0, 1]  # ρ/√2 per linked pair here, not ρ
    simulated = rows.mean(axis=1).var() / (1 / 4)
    assert simulated == pytest.approx(design_effect_of_design(crossed, pair_correlation), rel=0.05)
    assert math.isnan(icc_of_design(design_from_keys([["a"], ["b"]]), 1.0))  # nothing linked: no correlation
    assert math.isnan(links_per_row(design_from_keys([])))


def test_a_two_sided_p_is_normal_or_student_t() -> None:
    assert two_sided_p(1.96, 1.0) == pytest.approx(0.05, abs=1e-4)
    assert two_sided_p(-2.0, 1.0, df=9) == pytest.approx(2 * stats.t.sf(2.0, 9))
    assert math.isnan(two_sided_p(1.0, 0.0)) and math.isnan(two_sided_p(1.0, 1.0, df=0))
