"""MMLongBench's length trend, measured within ids: the official sample asks the same ids (every depth row of each) at
8K, 16K, 32K, 64K and 128K, so the curve is repeated measures of one set of items, and a difference between two
lengths is paired on the very rows.

From each task's rows (`harness.outputs.results.journal_rows`: the journals beside the results):

- the within-id slope of the rows' score over log2(length) (points per doubling): OLS of the score on log2(length),
  each less its id's mean (the id's fixed effect), with a cluster-robust covariance on the id (statsmodels,
  `cov_type="cluster"`, t with ids - 1 degrees of freedom; the fixed effects are nested in the clusters, so the CR1
  factor counts one coefficient, Cameron and Miller 2015, §III.B);
- each length's difference from 8K over the rows asked at both (`harness.uncertainty.comparisons.paired_difference`,
  clustered on the id);
- a category (and the average of the categories) as its score weighs its datasets (MM-NIAH's text and image files
  halves of one member), whose ids are their own (the key holds the dataset), so their errors add in quadrature.

VH's rows are scored by their accuracy before the fold at 50 (the fold of a mean is not linear). Summ needs the
judge's per-row score; a run without it has no Summ row and no Avg, only the mean of the other four.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from harness.outputs.results.journal_rows import Row, task_rows
from harness.outputs.results.model_results import ModelResults
from harness.uncertainty.comparisons import comparison_df, interval, paired_difference
from harness.uncertainty.variance import design_from_keys
from tasks.mmlongbench.aggregation import AVERAGE, CATEGORIES
from tasks.mmlongbench.scores import DATASET_ORDER, LENGTHS, NO_SUMM, dataset_task

BASE = "8k"
METRIC = "score"


@dataclass(frozen=True)
class Effect:
    """An estimate (points, or points per doubling) with its clustered error and 95 % interval."""

    estimate: float
    stderr: float
    low: float
    high: float
    clusters: int

    def text(self) -> str:
        if self.stderr == 0:
            return f"{self.estimate:+.1f} (no spread)"
        return f"{self.estimate:+.1f} [{self.low:+.1f}, {self.high:+.1f}]"


def dataset_rows(data: ModelResults, dataset: str, lengths: list[str]) -> dict[str, list[Row]]:
    """Length -> the dataset's scored rows there, where its journal is found."""
    out = {}
    for length in lengths:
        rows = [r for r in task_rows(data, dataset_task(dataset, length)) or [] if r.value(METRIC) is not None]
        if rows:
            out[length] = rows
    return out


def within_id_slope(by_length: dict[str, list[Row]]) -> Effect | None:
    """The score's slope over log2(length) within ids, per doubling; None with fewer than two lengths or ids."""
    rows = [(length, row) for length, found in by_length.items() for row in found]
    if len(by_length) < 2 or not rows:
        return None
    design = design_from_keys([row.keys for _, row in rows])
    if design.n_clusters < 2:
        return None
    labels = design.labels
    x = np.array([math.log2(LENGTHS[length] / LENGTHS[BASE]) for length, _ in rows])
    y = np.array([row.value(METRIC) for _, row in rows], dtype=float)
    sizes = np.bincount(labels)
    xd = x - (np.bincount(labels, weights=x) / sizes)[labels]
    yd = y - (np.bincount(labels, weights=y) / sizes)[labels]
    if not np.any(np.abs(xd) > 1e-12):
        return None  # no id seen at two lengths
    if not np.any(np.abs(yd) > 1e-12):
        return Effect(0.0, 0.0, 0.0, 0.0, design.n_clusters)  # every id scored the same at every length
    import statsmodels.api as sm

    fitted = sm.OLS(yd, xd).fit(cov_type="cluster", cov_kwds={"groups": labels}, use_t=True)
    slope, stderr = float(fitted.params[0]), float(fitted.bse[0])
    # t on the clusters the variance rests on, as a paired difference's (`comparison_df`): each id's squared score
    totals = np.bincount(labels, weights=xd * fitted.resid) ** 2
    rests_on = float(totals.sum() ** 2 / np.dot(totals, totals)) if totals.any() else math.nan
    low, high = interval(slope, stderr, 0.95, comparison_df(design.n_clusters, False, rests_on))
    return Effect(slope, stderr, low, high, design.n_clusters)


def from_base(by_length: dict[str, list[Row]]) -> dict[str, Effect]:
    """Length -> its score less 8K's over the rows asked at both, paired on the row and clustered on the id."""
    base = {row.sample_id: row for row in by_length.get(BASE, [])}
    out = {}
    for length, rows in by_length.items():
        pairs = [(row, base[row.sample_id]) for row in rows if length != BASE and row.sample_id in base]
        if len(pairs) < 2:
            continue
        later = np.array([a.value(METRIC) for a, _ in pairs], dtype=float)
        earlier = np.array([b.value(METRIC) for _, b in pairs], dtype=float)
        found = paired_difference(later, earlier, [a.keys for a, _ in pairs])
        if math.isfinite(found.stderr_clustered):
            out[length] = Effect(found.estimate, found.stderr_clustered, found.low, found.high, found.n_clusters)
        elif found.stderr == 0:
            out[length] = Effect(found.estimate, 0.0, found.estimate, found.estimate, found.n_clusters)
    return out


def weights(row: str) -> dict[str, float]:
    """Dataset -> its weight in a category's (or the average's) score, as the paper's aggregation weighs it."""
    if row in CATEGORIES:
        members = CATEGORIES[row]
        out: dict[str, float] = {}
        for member in members:
            parts = member if isinstance(member, tuple) else (member,)
            out.update({d: 1 / len(members) / len(parts) for d in parts})
        return out
    categories = [c for c in CATEGORIES if row == AVERAGE or c != "Summ"]
    return {d: w / len(categories) for c in categories for d, w in weights(c).items()}


def combined(parts: dict[str, Effect | None], row: str) -> Effect | None:
    """A category's (or the average's) effect from its datasets' (None unless every one has it)."""
    found = weights(row)
    if any(parts.get(d) is None for d in found):
        return None
    effects = {d: parts[d] for d in found}
    estimate = sum(w * e.estimate for d, w in found.items() if (e := effects[d]) is not None)
    stderr = math.sqrt(sum((w * e.stderr) ** 2 for d, w in found.items() if (e := effects[d]) is not None))
    low, high = interval(estimate, stderr, 0.95) if stderr > 0 else (estimate, estimate)
    return Effect(estimate, stderr, low, high, sum(e.clusters for e in effects.values() if e is not None))


def trend_section(data: ModelResults, lengths: list[str]) -> list[str]:
    """The length-trend table: each category, the average and each dataset run at two lengths or more."""
    if len(lengths) < 2:
        return []
    rows = {d: dataset_rows(data, d, lengths) for d in DATASET_ORDER}
    rows = {d: r for d, r in rows.items() if len(r) >= 2}
    others = [length for length in lengths if length != BASE]
    head = [
        "### MMLongBench length trend, within ids",
        "",
        "The same ids at every length (docs/statistics.md, *Length trends*): the slope of the score over "
        "log2(length) within each id (points per doubling of the context; OLS on the rows less their id's mean, "
        "cluster-robust on the id), and each length's difference from 8K paired on the same rows (clustered on the "
        "id), each with its 95 % interval. VH: its rows' accuracy before the fold at 50. A category weighs its "
        "datasets as its score does.",
        "",
    ]
    if not rows:
        return [*head, "No dataset's journals (`journal_<task>.jsonl`) are beside its results at two lengths.", ""]
    slopes = {d: within_id_slope(r) for d, r in rows.items()}
    differences = {d: from_base(r) for d, r in rows.items()}
    table = [
        "| | ids | per doubling | " + " | ".join(f"{length} - {BASE}" for length in others) + " |",
        "|---|---|---|" + "---|" * len(others),
    ]
    summaries = [c for c in CATEGORIES if all(d in rows for d in weights(c))]
    average = AVERAGE if "Summ" in summaries else NO_SUMM
    if all(c in summaries for c in CATEGORIES if c != "Summ"):
        summaries.append(average)

    def line(name: str, slope: Effect | None, by_length: dict[str, Effect | None]) -> str:
        cells = [slope.text() if slope else "", *(e.text() if (e := by_length.get(n)) else "" for n in others)]
        clusters = str(slope.clusters) if slope else ""
        return f"| {name} | {clusters} | " + " | ".join(cells) + " |"

    for row in summaries:
        by_length = {n: combined({d: differences[d].get(n) for d in rows}, row) for n in others}
        table.append(line(row, combined(slopes, row), by_length))
    for dataset in rows:
        table.append(line(dataset, slopes[dataset], dict(differences[dataset])))
    return [*head, *table, ""]
