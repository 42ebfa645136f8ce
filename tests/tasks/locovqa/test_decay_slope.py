"""LoCoVQA's decay as a within-item slope with a clustered error (issue 63, item 2): a seeded simulation at 30 items
and the paper's six lengths covers the population slope at about its nominal 95 % for falling, flat and rising
curves, and a flat curve is called decaying about 5 % of the time (where the item bootstrap of r² covered 0-40 % and
called a flat curve off in 27-35 %)."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm

from tasks.locovqa.decay_slope import within_item_slope

LENGTHS = np.array([1.0, 4.0, 9.0, 16.0, 25.0, 36.0])
ITEMS = 30
REPLICATIONS = 1000


def _rows(rng: np.random.Generator, slope: float, base: tuple[float, float]) -> list[tuple[float, list[str], float]]:
    """0/1 scores of 30 items at every length: each item's chance its own level plus its own slope (spread .004
    around `slope`), so the population slope is `slope` and the items differ in level and in decay."""
    level = rng.uniform(*base, ITEMS)
    own = slope + rng.normal(0, 0.004, ITEMS)
    chance = np.clip(level[:, None] + own[:, None] * LENGTHS[None, :], 0, 1)
    scores = (rng.random(chance.shape) < chance).astype(float)
    return [(float(x), [f"item{i}"], float(scores[i, j])) for i in range(ITEMS) for j, x in enumerate(LENGTHS)]


@pytest.mark.parametrize(
    ("slope", "base", "seed"),
    [(-0.012, (0.55, 0.95), 1), (0.0, (0.3, 0.7), 2), (0.006, (0.1, 0.5), 3)],
    ids=["falling", "flat", "rising"],
)
def test_the_slope_interval_covers_at_its_nominal_rate_at_30_items(slope: float, base: tuple, seed: int) -> None:
    rng = np.random.default_rng(seed)
    covered = rejected = 0
    for _ in range(REPLICATIONS):
        found = within_item_slope(_rows(rng, slope, base))
        assert found is not None and found.items == ITEMS
        covered += found.low <= slope <= found.high
        rejected += found.p_flat < 0.05
    assert 0.93 <= covered / REPLICATIONS <= 0.97, covered
    if slope == 0:
        assert rejected / REPLICATIONS <= 0.07, rejected  # a flat curve is seldom called decaying


def test_the_slope_and_its_error_are_statsmodels_fixed_effects_fit() -> None:
    rows = _rows(np.random.default_rng(4), -0.01, (0.5, 0.9))
    found = within_item_slope(rows)
    assert found is not None
    x = np.array([r[0] for r in rows])
    item = np.array([int(r[1][0][4:]) for r in rows])
    dummies = np.eye(ITEMS)[item]
    fit = sm.OLS(np.array([r[2] for r in rows]), np.column_stack([x, dummies])).fit(
        cov_type="cluster", cov_kwds={"groups": item, "use_correction": False}
    )
    assert found.slope == pytest.approx(fit.params[0], abs=1e-12)
    # CR1's C/(C-1) alone (statsmodels' plain cluster sandwich has none without use_correction)
    assert found.stderr == pytest.approx(fit.bse[0] * np.sqrt(ITEMS / (ITEMS - 1)), rel=1e-9)


def test_edges() -> None:
    assert within_item_slope([]) is None
    assert within_item_slope([(1.0, ["a"], 1.0), (4.0, ["a"], 0.0)]) is None  # one item
    nine = [(x, [f"item{i}"], float((i + x) % 2)) for i in range(9) for x in (1.0, 4.0)]
    assert within_item_slope(nine) is None  # too few items for an interval
    assert within_item_slope(nine + [(1.0, ["item9"], 1.0), (4.0, ["item9"], 0.0)]) is not None
    assert within_item_slope([(1.0, ["a"], 1.0), (1.0, ["b"], 0.0)]) is None  # x never moves within an item
    flat = [(x, [k], 1.0) for k in "ab" for x in (1.0, 4.0)]
    assert within_item_slope(flat) is None  # nothing varies
