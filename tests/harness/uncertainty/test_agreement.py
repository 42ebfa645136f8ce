"""Two raters' agreement (`harness.uncertainty.agreement`): Cohen's kappa and Krippendorff's alpha on hand-computed
cases from their definitions, against the formulas written out here for every weighting and level, and their
cluster-bootstrap intervals drawing whole items."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest

from harness.uncertainty.agreement import MEASUREMENTS, agreement, cohens_kappa, confusion_table, krippendorff_alpha
from harness.uncertainty.bootstrap import cluster_bootstrap, percentile_interval
from harness.uncertainty.variance import design_from_keys


def _pairs(table: list[list[int]], values: list[float]) -> tuple[list[float], list[float]]:
    """Rows whose confusion table is `table` (A's values down, B's across)."""
    a, b = [], []
    for i, row in enumerate(table):
        for j, count in enumerate(row):
            a += [values[i]] * count
            b += [values[j]] * count
    return a, b


def test_cohens_worked_example_gives_kappa_and_alpha_by_hand() -> None:
    # 50 proposals read by two readers (Wikipedia's "Cohen's kappa", simple example): both yes 20, A yes B no 5, A no
    # B yes 10, both no 15. p_o = 35/50 = 0.7; p_e = 0.5 · 0.6 + 0.5 · 0.4 = 0.5; kappa = (0.7 - 0.5)/(1 - 0.5) = 0.4.
    a, b = _pairs([[20, 5], [10, 15]], [1.0, 0.0])
    assert cohens_kappa(a, b) == pytest.approx(0.4)
    # Krippendorff's alpha from its coincidence matrix (Krippendorff 2011, "Computing Krippendorff's Alpha-
    # Reliability"): n = 100 values, 55 "yes" and 45 "no", o_yes,no = 15 mismatched units; binary alpha =
    # 1 - (n - 1) o_yes,no / (n_yes · n_no) = 1 - 99 · 15 / (55 · 45) = 0.4.
    assert krippendorff_alpha(a, b, "nominal") == pytest.approx(0.4)
    # Two values: every level of measurement and every kappa weighting agree.
    assert {round(krippendorff_alpha(a, b, m), 12) for m in MEASUREMENTS} == {0.4}
    assert {round(cohens_kappa(a, b, m), 12) for m in MEASUREMENTS} == {0.4}


def test_a_small_binary_case_by_hand() -> None:
    # Ten units, two observers: A 0 1 0 0 0 0 0 0 1 0, B 1 1 1 0 0 1 0 0 0 0 (4 mismatches).
    a = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
    b = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]
    # kappa: p_o = 0.6, p_e = 0.8 · 0.6 + 0.2 · 0.4 = 0.56, (0.6 - 0.56)/0.44 = 1/11.
    assert cohens_kappa(a, b) == pytest.approx(1 / 11)
    # alpha: n = 20 values, 14 zeros and 6 ones, o_01 = 4: 1 - 19 · 4 / (14 · 6) = 2/21.
    assert krippendorff_alpha(a, b, "nominal") == pytest.approx(2 / 21)


def _alpha_by_formula(a: np.ndarray, b: np.ndarray, delta) -> float:
    """Alpha for two observers and no missing value, written out: 1 - (n - 1) Σ_u 2 δ(a_u, b_u) / Σ_{i≠j} δ(v_i, v_j)
    over the n = 2N values pooled (Krippendorff 2011, the coincidence matrix of pairable values)."""
    values = np.concatenate([a, b])
    n = len(values)
    observed = 2 * sum(delta(x, y) for x, y in zip(a, b, strict=True))
    expected = sum(delta(x, y) for i, x in enumerate(values) for j, y in enumerate(values) if i != j)
    return 1 - (n - 1) * observed / expected


def _kappa_by_formula(a: np.ndarray, b: np.ndarray, weight) -> float:
    """Cohen's (1968) weighted kappa written out: 1 - mean disagreement of the rows / mean disagreement of every A
    value with every B value (the two marginals taken as independent)."""
    observed = np.mean([weight(x, y) for x, y in zip(a, b, strict=True)])
    expected = np.mean([weight(x, y) for x in a for y in b])
    return float(1 - observed / expected)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kappa_and_alpha_at_every_level_are_the_formulas_written_out(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.choice([1.0, 2.0, 3.0, 5.0], size=40)
    b = np.where(rng.random(40) < 0.6, a, rng.choice([1.0, 2.0, 3.0, 5.0], size=40))
    ranks = {v: i for i, v in enumerate(sorted({*a, *b}))}
    assert cohens_kappa(a, b, "nominal") == pytest.approx(_kappa_by_formula(a, b, lambda x, y: float(x != y)))
    assert cohens_kappa(a, b, "ordinal") == pytest.approx(
        _kappa_by_formula(a, b, lambda x, y: abs(ranks[x] - ranks[y]))
    )
    for level in ("interval", "ratio"):
        assert cohens_kappa(a, b, level) == pytest.approx(_kappa_by_formula(a, b, lambda x, y: (x - y) ** 2))
    assert krippendorff_alpha(a, b, "nominal") == pytest.approx(_alpha_by_formula(a, b, lambda x, y: float(x != y)))
    assert krippendorff_alpha(a, b, "interval") == pytest.approx(_alpha_by_formula(a, b, lambda x, y: (x - y) ** 2))
    assert krippendorff_alpha(a, b, "ratio") == pytest.approx(
        _alpha_by_formula(a, b, lambda x, y: ((x - y) / (x + y)) ** 2)
    )
    # Ordinal: the package's own reading of the same reliability data (its metric counts the values between two ranks).
    expected = krippendorff.alpha(reliability_data=np.vstack([a, b]), level_of_measurement="ordinal")
    assert krippendorff_alpha(a, b, "ordinal") == pytest.approx(expected)


def test_the_confusion_table_counts_a_by_b() -> None:
    values, table = confusion_table([0, 0, 100, 50], [100, 0, 100, 0])
    assert values == [0.0, 50.0, 100.0]
    assert table.tolist() == [[1, 0, 1], [1, 0, 0], [0, 0, 1]]


def test_undefined_agreement_is_nan() -> None:
    assert math.isnan(cohens_kappa([1, 1, 1], [1, 1, 1]))  # one value everywhere: nothing beyond chance to agree on
    assert math.isnan(krippendorff_alpha([1, 1, 1], [1, 1, 1]))
    assert math.isnan(cohens_kappa([1], [0])) and math.isnan(krippendorff_alpha([1], [0]))
    one_item = agreement([0, 1, 1], [0, 1, 0], [["doc"]] * 3, "nominal")
    assert one_item.n_clusters == 1 and all(math.isnan(v) for v in (*one_item.kappa_interval, *one_item.alpha_interval))
    with pytest.raises(ValueError, match="the same rows"):
        agreement([0, 1], [0], [["x"], ["y"]], "nominal")


def test_intervals_draw_whole_items() -> None:
    rng = np.random.default_rng(3)
    a = rng.integers(0, 2, 30).astype(float)
    b = np.where(rng.random(30) < 0.7, a, 1 - a)
    # Each item asked four times (four rows alike): counted as 120 rows it looks four times as sure.
    a4, b4 = np.repeat(a, 4), np.repeat(b, 4)
    items = [[f"item{i // 4}"] for i in range(120)]
    rows = [[f"row{i}"] for i in range(120)]
    clustered = agreement(a4, b4, items, "nominal", iters=400, seed=5)
    naive = agreement(a4, b4, rows, "nominal", iters=400, seed=5)
    assert clustered.kappa == naive.kappa and clustered.n_clusters == 30 and naive.n_clusters == 120
    width = lambda bounds: bounds[1] - bounds[0]  # noqa: E731
    assert width(clustered.kappa_interval) > 1.5 * width(naive.kappa_interval)
    assert width(clustered.alpha_interval) > 1.5 * width(naive.alpha_interval)
    # The interval is the percentile interval of the project's cluster bootstrap (whole items drawn), seeded.
    pairs = list(zip(a4.tolist(), b4.tolist(), strict=True))
    replicates = cluster_bootstrap(
        lambda drawn: cohens_kappa([x for x, _ in drawn], [y for _, y in drawn]), pairs, design_from_keys(items), 400, 5
    )
    assert clustered.kappa_interval == percentile_interval(replicates, 0.95)
    assert clustered.kappa_interval[0] < clustered.kappa < clustered.kappa_interval[1]
