"""How far two raters agree on the same rows: two judges' scores of the same replies (`harness compare` of a judge
swap). Cohen's kappa (statsmodels' `cohens_kappa`) and Krippendorff's alpha (the `krippendorff` package), each with a
percentile interval from the project's cluster bootstrap (rows that share an item drawn together), the confusion table
of A's values by B's, and the share of rows scored alike.

The level of measurement says which differences count and by how much (Krippendorff 2011; the `krippendorff`
package's `level_of_measurement`): `nominal` (any two values differ alike), `ordinal` (by rank), `interval` (by the
squared difference of the values), `ratio` (by the squared difference relative to their sum). Kappa is weighted to
match: none for nominal, linear in the values' ranks for ordinal (Cicchetti and Allison 1971), quadratic in the values
for interval and ratio (Fleiss and Cohen 1973: it then equals an intraclass correlation). On two values (0/1, or 0/100)
every level and weighting gives the same kappa and the same alpha.
"""

from __future__ import annotations

import math
import typing
import warnings
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from harness.uncertainty.bootstrap import DEFAULT_ITERS, cluster_bootstrap, percentile_interval
from harness.uncertainty.variance import design_from_keys

Measurement = Literal["nominal", "ordinal", "interval", "ratio"]
MEASUREMENTS: tuple[Measurement, ...] = typing.get_args(Measurement)
KappaWeights = Literal["none", "linear", "quadratic"]
KAPPA_WEIGHTS: dict[Measurement, KappaWeights] = {
    "nominal": "none",
    "ordinal": "linear",
    "interval": "quadratic",
    "ratio": "quadratic",
}
NAN = math.nan


def confusion_table(a: Sequence[float], b: Sequence[float]) -> tuple[list[float], np.ndarray]:
    """(the distinct values of both raters, ascending; counts[i, j]: rows A scored values[i] and B values[j])."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    values, index = np.unique(np.concatenate([x, y]), return_inverse=True)
    counts = np.zeros((len(values), len(values)), dtype=np.int64)
    np.add.at(counts, (index[: len(x)], index[len(x) :]), 1)
    return [float(v) for v in values], counts


def cohens_kappa(a: Sequence[float], b: Sequence[float], measurement: Measurement = "nominal") -> float:
    """Cohen's kappa of two raters' values on the same rows, weighted for `measurement` (`KAPPA_WEIGHTS`), by
    statsmodels' `cohens_kappa` on their confusion table. NaN with fewer than two rows, or where chance agreement is
    complete (both raters gave one and the same value to every row: nothing to agree on beyond chance)."""
    from statsmodels.stats.inter_rater import cohens_kappa as statsmodels_kappa

    if len(a) < 2:
        return NAN
    values, table = confusion_table(a, b)
    if len(values) < 2:
        return NAN
    weights = KAPPA_WEIGHTS[measurement]
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        if weights == "none":
            found = statsmodels_kappa(table, return_results=False)
        else:  # linear on ranks, quadratic on the values themselves
            scores = np.arange(len(values)) if weights == "linear" else np.asarray(values)
            found = statsmodels_kappa(table, weights=scores, wt=weights, return_results=False)
    return float(found) if np.isfinite(found) else NAN


def krippendorff_alpha(a: Sequence[float], b: Sequence[float], measurement: Measurement = "interval") -> float:
    """Krippendorff's alpha of two raters' values on the same rows at `measurement` (the `krippendorff` package).
    NaN with fewer than two rows or a single value in all (no disagreement is expected: alpha is 0/0)."""
    import krippendorff

    if len(a) < 2 or len({*a, *b}) < 2:
        return NAN
    data = np.vstack([np.asarray(a, dtype=float), np.asarray(b, dtype=float)])
    with np.errstate(divide="ignore", invalid="ignore"):
        found = krippendorff.alpha(reliability_data=data, level_of_measurement=measurement)
    return float(found) if np.isfinite(found) else NAN


Statistic = Callable[[Sequence[float], Sequence[float], Measurement], float]


def _on_pairs(statistic: Statistic, measurement: Measurement) -> Callable[[list[tuple[float, float]]], float]:
    """`statistic` of resampled (a, b) pairs, as `cluster_bootstrap` draws them."""
    return lambda drawn: statistic([x for x, _ in drawn], [y for _, y in drawn], measurement)


@dataclass(frozen=True)
class Agreement:
    """Two raters on the same rows: kappa and alpha with their cluster-bootstrap percentile intervals at `level`,
    the share of rows scored alike, and the confusion table (A's values down, B's across)."""

    n: int
    n_clusters: int
    measurement: Measurement
    kappa: float
    kappa_interval: tuple[float, float]
    alpha: float
    alpha_interval: tuple[float, float]
    equal: float  # the share of rows both scored alike
    values: list[float]
    table: np.ndarray

    @property
    def kappa_weights(self) -> KappaWeights:
        return KAPPA_WEIGHTS[self.measurement]


def agreement(
    a: Sequence[float],
    b: Sequence[float],
    keys: Sequence[Sequence[Hashable]],
    measurement: Measurement,
    level: float = 0.95,
    iters: int = DEFAULT_ITERS,
    seed: int = 0,
) -> Agreement:
    """Kappa and alpha of `a` and `b` (row i of each is one sample) with percentile intervals from `iters` draws of
    the cluster bootstrap over `keys` (`cluster_bootstrap`: whole clusters drawn, C of C; the same seed draws the same
    clusters for both). Edge cases: fewer than two rows or clusters, or `iters` 0, give NaN intervals; a draw on which
    a statistic is undefined (every drawn row one value) is left out of its interval."""
    if len(a) != len(b) or len(a) != len(keys):
        raise ValueError(f"{len(a)} and {len(b)} values for {len(keys)} rows: agreement needs the same rows in both")
    design = design_from_keys(keys)
    pairs = list(zip(map(float, a), map(float, b), strict=True))
    intervals = [
        percentile_interval(cluster_bootstrap(_on_pairs(statistic, measurement), pairs, design, iters, seed), level)
        if design.n_clusters >= 2
        else (NAN, NAN)
        for statistic in (cohens_kappa, krippendorff_alpha)
    ]
    values, table = confusion_table(a, b)
    return Agreement(
        n=len(pairs),
        n_clusters=design.n_clusters,
        measurement=measurement,
        kappa=cohens_kappa(a, b, measurement),
        kappa_interval=intervals[0],
        alpha=krippendorff_alpha(a, b, measurement),
        alpha_interval=intervals[1],
        equal=float(np.mean([x == y for x, y in pairs])) if pairs else NAN,
        values=values,
        table=table,
    )
