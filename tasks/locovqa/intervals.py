"""Intervals for LoCoVQA's curves: an item bootstrap of the whole decay fit, and each point's interval for the bands
of the decay figure.

One item is asked at up to 12 context lengths and modes, so the six points of a curve are means over the same items:
they are correlated, and the fit's r² and p over "six independent points" say nothing of how much the curve would move
on other items. The item bootstrap resamples items with replacement (each with all its rows: every length of the
series), recomputes each point and refits (`decay.fit`'s `exp` form: ln accuracy on length), 1000 times, seeded by the
series' name (the same rows give the same intervals). The 95 % percentile intervals of the decay rate and of r² say
how far the fit moves: a description of the curve's shape, not tested (the percentile interval of r² covers the
population r² in 0-40 % of seeded replications at 30 items, issue 63). The verdict beside the paper is on the
within-item slope (`tasks.locovqa.decay_slope`), whose interval covers; `curve_points` gives both their rows.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import numpy as np

from harness.outputs.results.estimates import Estimate, estimate_of, number
from harness.outputs.results.journal_rows import Row, task_rows
from harness.outputs.results.model_results import ModelResults
from harness.uncertainty.bootstrap import DEFAULT_ITERS
from harness.uncertainty.variance import design_from_keys
from tasks.locovqa.decay import FLOOR
from tasks.locovqa.series import MODES, SERIES, Series, leaves

LEVEL = 0.95
# Fewer items than this are too few to resample: a bootstrap over 2 items sees 3 distinct curves, and its percentile
# interval collapses onto them (Davison and Hinkley 1997, §3.8, on few clusters).
MIN_ITEMS = 10


@dataclass(frozen=True)
class CurveInterval:
    """The bootstrap of one curve's `exp` fit: signed r² and decay rate (per unit of x) replicates, and the items."""

    signed_r2: np.ndarray
    rate: np.ndarray
    items: int

    def _bounds(self, values: np.ndarray) -> tuple[float, float] | None:
        finite = values[np.isfinite(values)]
        if len(finite) < 2:
            return None
        low, high = np.quantile(finite, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
        return float(low), float(high)

    def r2_bounds(self) -> tuple[float, float] | None:
        """The 95 % interval of the signed r²."""
        return self._bounds(self.signed_r2)

    def rate_bounds(self) -> tuple[float, float] | None:
        return self._bounds(self.rate)

    def p_value(self, signed_r2: float) -> float:
        """The bootstrap's two-sided p of a value of the signed r²: twice the smaller tail at or beyond it."""
        finite = self.signed_r2[np.isfinite(self.signed_r2)]
        if not len(finite):
            return math.nan
        tail = min(np.sum(finite <= signed_r2), np.sum(finite >= signed_r2))
        return float(min(1.0, 2 * (tail + 1) / (len(finite) + 1)))


def signed_r2_text(value: float) -> str:
    """A signed r² as the paper prints an r²: `.924`, rising marked `↓` (`.231↓`)."""
    shown = f"{abs(value):.3f}".lstrip("0") if abs(value) < 1 else "1.000"
    return shown + ("↓" if value > 0 else "")


def interval_text(bounds: tuple[float, float] | None) -> str:
    """`[.71, .98]` (by strength, one direction), or `[.80 … .30↓]` from falling to rising."""
    if bounds is None:
        return ""
    low, high = bounds
    if low < 0 < high:
        return f"[{signed_r2_text(low)} … {signed_r2_text(high)}]"
    a, b = sorted((low, high), key=abs)
    return f"[{signed_r2_text(a)}, {signed_r2_text(b)}]"


def exp_fits(xs: np.ndarray, curves: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(signed r², slope) of `decay.fit`'s `exp` form, ln(max(y, FLOOR)) on x, for each row of `curves`; NaN for a
    curve with a missing point or no spread."""
    logged = np.log(np.maximum(curves, FLOOR))
    dx = xs - xs.mean()
    dy = logged - logged.mean(axis=1, keepdims=True)
    sxx, sxy, syy = float(dx @ dx), dy @ dx, np.sum(dy * dy, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = sxy / sxx
        r2 = np.where(syy > 1e-24, sxy * sxy / (sxx * syy), np.nan)
    return np.sign(slope) * r2, slope


def bootstrap_curve(points: list[tuple[float, tuple[str, ...], float]], name: str, iters: int = DEFAULT_ITERS):
    """The item bootstrap of a curve given its rows (x, the row's cluster keys, value); None with fewer than three
    x values or `MIN_ITEMS` items."""
    xs = sorted({x for x, _, _ in points})
    if len(xs) < 3 or not points:
        return None
    design = design_from_keys([keys for _, keys, _ in points])
    if design.n_clusters < MIN_ITEMS:
        return None
    column = {x: j for j, x in enumerate(xs)}
    sums = np.zeros((design.n_clusters, len(xs)))
    counts = np.zeros((design.n_clusters, len(xs)))
    for (x, _, value), item in zip(points, design.labels, strict=True):
        sums[item, column[x]] += value
        counts[item, column[x]] += 1
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    drawn = rng.multinomial(design.n_clusters, np.full(design.n_clusters, 1 / design.n_clusters), size=iters)
    with np.errstate(invalid="ignore", divide="ignore"):
        curves = (drawn @ sums) / (drawn @ counts)
    signed, slope = exp_fits(np.asarray(xs, dtype=float), curves)
    return CurveInterval(signed, slope, design.n_clusters)


def _row_points(
    rows: list[Row], x: float, metric: str, subset: str | None
) -> list[tuple[float, tuple[str, ...], float]]:
    points = []
    for row in rows:
        if subset is None:
            value = row.value(metric)
            if value is not None:
                points.append((x, row.keys, value))
        else:
            points += [(x, row.keys, v) for key, v in row.pairs(metric) if key == subset]
    return points


def curve_points(data: ModelResults) -> dict[tuple[str, str], list[tuple[float, tuple[str, ...], float]]]:
    """(row, mode) -> the rows (x, cluster keys, value) of every curve whose journals are beside its results."""
    found = leaves(data)
    rows_of = {name: task_rows(data, name) or [] for by_length in found.values() for name in by_length.values()}
    out: dict[tuple[str, str], list[tuple[float, tuple[str, ...], float]]] = {}
    for row, task, metric, subset in SERIES:
        for mode in MODES:
            out[(row, mode)] = [
                p
                for length, name in sorted(found.get((task, mode), {}).items())
                for p in _row_points(rows_of[name], float(length), metric, subset)
            ]
    for mode in MODES:  # Haystack-k: MNIST accuracy against the digit count at length k
        for length, name in sorted(found.get(("mnist", mode), {}).items()):
            out[(f"Haystack-{length}", mode)] = [
                (float(d), r.keys, v) for r in rows_of[name] for d, v in r.pairs("accuracy_by_digits")
            ]
    return {key: points for key, points in out.items() if points}


def curve_intervals(data: ModelResults) -> dict[tuple[str, str], CurveInterval]:
    """(row, mode) -> the item bootstrap of that curve, for every curve whose journals are beside its results."""
    out: dict[tuple[str, str], CurveInterval] = {}
    for (row, mode), points in curve_points(data).items():
        bootstrap = bootstrap_curve(points, f"{row}/{mode}")
        if bootstrap is not None:
            out[(row, mode)] = bootstrap
    return out


def point_bands(data: ModelResults, curves: list[Series]) -> dict[tuple[str, str], list[tuple[float, float] | None]]:
    """(row, mode) -> each point's 95 % interval (Wilson's on the effective n), for the decay figure's bands."""
    found = leaves(data)
    metric_of = {row: (task, metric, subset) for row, task, metric, subset in SERIES}
    out = {}
    for curve in curves:
        if curve.row not in metric_of:
            continue
        task, metric, subset = metric_of[curve.row]
        bands: list[tuple[float, float] | None] = []
        for x in curve.xs:
            name = found.get((task, curve.mode), {}).get(int(x))
            estimate = _point(data, name, metric, subset) if name else None
            bands.append(estimate.interval() if estimate else None)
        out[(curve.row, curve.mode)] = bands
    return out


def _point(data: ModelResults, name: str, metric: str, subset: str | None) -> Estimate:
    if subset is None:
        return estimate_of(data, name, metric, 1)
    cell = (data.breakdowns.get(name, {}).get(metric, {}) or {}).get(subset) or {}
    n, clusters = cell.get("n"), cell.get("n_clusters")
    return Estimate(
        number(cell.get("mean")),
        number(cell.get("stderr")),
        number(cell.get("stderr_clustered")),
        n if isinstance(n, int) else None,
        clusters if isinstance(clusters, int) else None,
        1,
    )
