"""A reported number with what stands behind it (its plain and clustered errors, rows and clusters) and the interval
the report shows beside it: `harness report`'s tables, the viewer's pages (through `report.headline_cell`) and the
verdicts beside a paper (`harness.outputs.report.verdict`) read numbers through `estimate_of`.

A score on a bounded scale (a proportion, or a 0-100 score: `scale`) gets the Wilson interval on its effective
sample size n_eff = p(1 - p) / SE², SE its one error (Korn and Graubard 1998's effective n of a survey proportion):
n / deff for a 0/1 score, never more than the rows. Where no error can be estimated (every row scored the same) n_eff
is the number of clusters (`harness.uncertainty.comparisons.effective_n`): a 0 % on 20 items reads [0, 16.1 %], on 3
items [0, 56.1 %]; never a point, never "± 0.0". Where n_eff comes from an estimated error over C clusters, the
interval uses Korn and Graubard's degrees-of-freedom correction, n_eff · (t_{n-1} / t_df)² (`Estimate.interval_n`):
the variance rests on C clusters, not n rows, and on no more clusters than rows of the rarer outcome (0 or 1, read
from the value: x = n · min(p, 1 - p)), so df = min(C - 1, x); the corrected n is never below min(n_eff, C), the n of
the largest variance C cluster means on the scale can have (bench/report_interval_coverage.py). Since issue 107, where the rows
share clusters, that interval is joined with the cluster score test's (`_with_score`; docs/statistics.md, "One rule
for every design"; bench/unequal_cluster_coverage.py), or none is shown where too few clusters stand.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from harness.outputs.results.interval_bounds import bounds_text
from harness.uncertainty.comparisons import clopper_pearson_interval, effective_n, interval, wilson_interval
from harness.uncertainty.small_sample import INTERVAL_RULE, TOO_FEW_KISH, critical_value, score_bounds

if TYPE_CHECKING:
    from harness.outputs.results.model_results import ModelResults

LEVEL = 0.95


def number(value: object) -> float | None:
    """A finite number, else None ("N/A", NaN, a bool, a string)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


@dataclass(frozen=True)
class Estimate:
    """One recorded number (on its benchmark's scale), its errors, rows and clusters. `scale`: 1 (a proportion) or
    100 (a 0-100 score) for a bounded number, None for one without bounds (a count)."""

    value: float | None
    stderr: float | None = None  # rows taken as independent
    clustered: float | None = None  # clustered on the items the rows share
    n: int | None = None
    n_clusters: int | None = None
    scale: float | None = None
    design_effect: float | None = None  # clustered variance / plain variance, from the results' `uncertainty`
    method: str | None = None  # how its errors were made, from the results' `uncertainty` (`bootstrap`: resampled)
    # where clusters differ in size (`harness.uncertainty.small_sample`, from the results' `uncertainty`; None in a
    # file written before issue 98): CR2's error, its Bell-McCaffrey df, Kish's clusters, the largest cluster's rows
    cr2: float | None = None
    bm_df: float | None = None
    kish_clusters: float | None = None
    largest_cluster: int | None = None
    # a task's own interval of its aggregation (the results' `uncertainty`; () where it gives none for these rows):
    # an aggregation no value ± t · SE fits (`metric_errors.with_interval`; docs/ADDING_A_BENCHMARK.md)
    own_interval: tuple[float, ...] | None = None
    # issue 107's rule (`small_sample.INTERVAL_RULE`, recorded beside its figures; None in an older file): the cluster
    # score test's slope, the working model's effective n, and whether the design is crossed (a graph sum)
    slope: float | None = None
    working_model_n: float | None = None
    overlap: bool = False
    rule: str | None = None

    def rescaled(self, factor: float) -> Estimate:
        """The same estimate in other units (a proportion x 100: percentage points)."""

        def times(v: float | None) -> float | None:
            return None if v is None else v * factor

        own = None if self.own_interval is None else tuple(b * factor for b in self.own_interval)
        value, stderr, clustered, scale, cr2, slope = map(
            times, (self.value, self.stderr, self.clustered, self.scale, self.cr2, self.slope)
        )
        return replace(
            self, value=value, stderr=stderr, clustered=clustered, scale=scale, cr2=cr2, slope=slope, own_interval=own
        )

    @property
    def error(self) -> float | None:
        """The metric's one error, as `harness compare` and `harness power --pair` take it (`comparisons.clustered_se`):
        the largest of the clustered, plain and CR2 errors; the plain one where no clustered error is recorded."""
        if self.clustered is None:
            return self.stderr
        return max(e for e in (self.clustered, self.stderr, self.cr2) if e is not None)

    @property
    def by_rule(self) -> bool:
        """Whether the figures of issue 107's rule are recorded (a file written since), for a mean of rows."""
        return self.rule == INTERVAL_RULE and self.slope is not None and self.kish_clusters is not None

    @property
    def df(self) -> float | None:
        """Degrees of freedom of a clustered error: clusters - 1 (Cameron and Miller 2015), or Bell and McCaffrey's
        where recorded and fewer (a file of issues 98 to 106); None: normal (a crossed design under issue 107's rule,
        whose components are not its independent units)."""
        if self.n_clusters is None or self.n_clusters < 2 or (self.overlap and self.by_rule):
            return None
        return min(float(self.n_clusters - 1), self.bm_df) if self.bm_df is not None else self.n_clusters - 1

    @property
    def units(self) -> float | None:
        """How many independent clusters the rows stand for: Kish's n² / Σ m_c² where recorded (C for equal
        clusters), else the clusters."""
        return self.kish_clusters if self.kish_clusters is not None else self.n_clusters

    @property
    def why_no_interval(self) -> str | None:
        """Why no interval is shown though rows and clusters are: one cluster holds nearly every row, so the rows
        stand for fewer than two clusters (`harness.uncertainty.small_sample.TOO_FEW_KISH`): whatever the interval,
        it rests on about one draw of that cluster (in a seeded grid its width was most of the scale). None
        otherwise. A task's own interval says none (`own_interval` empty) where the rows stand for fewer than two
        clusters."""
        if self.own_interval == ():
            return "no interval: the rows stand for fewer than two clusters"
        kish, clusters = self.kish_clusters, self.n_clusters
        if self.by_rule and kish is not None and not self.resampled:
            needed = critical_value(None if self.overlap else clusters) ** 2
            if not self.overlap and 2 * (self.largest_cluster or 0) >= (self.n or 0):
                return f"no interval: one cluster holds {self.largest_cluster} of {self.n} rows, half or more"
            if kish <= needed:
                return f"no interval: the rows stand for {kish:.1f} effective clusters; an interval needs over {needed:.1f}"
            return None
        if kish is None or clusters is None or clusters < 2 or kish >= TOO_FEW_KISH:
            return None
        return f"no interval: one cluster holds {self.largest_cluster} of {self.n} rows ({kish:.1f} effective clusters)"

    @property
    def resampled(self) -> bool:
        """A task's own aggregation (its errors a cluster bootstrap): no mean of rows (a grid average with its empty
        cells counted 0, a score folded at 50), so no proportion's effective n or interval fits it."""
        return self.method is not None and "bootstrap" in self.method

    @property
    def proportion(self) -> float | None:
        """The value on 0..1, where the scale is bounded and the value inside it."""
        if self.value is None or self.scale is None:
            return None
        p = self.value / self.scale
        return p if -1e-12 <= p <= 1 + 1e-12 else None

    def effective_n(self) -> float | None:
        """p(1 - p) / SE² with SE the larger of the two errors, never above the rows (Korn and Graubard 1998 truncate
        it at n: a score with partial credit has less variance than a proportion at its value, which no more rows
        than it has can stand for); the clusters (or rows) where no error is known or it is 0; None without a
        bounded value or any row count. (A number no mean of rows makes, `resampled`, has one for a verdict's test,
        no more than its rows, but its interval is its own.)"""
        p = self.proportion
        if p is None:
            return None
        p = min(max(p, 0.0), 1.0)
        errors = [e / self.scale for e in (self.clustered, self.stderr, self.cr2) if e is not None and self.scale]
        variance = max((e * e for e in errors), default=0.0)
        if variance > 0 and 0 < p < 1:
            cap = min(self.n or math.inf, self.working_model_n or math.inf) if self.by_rule else self.n or math.inf
            return min(p * (1 - p) / variance, cap)
        if variance > 0:  # spread at 0 % or 100 %: the values leave the scale's bounds, Wilson does not apply
            return None
        rows = self.n if self.n is not None else self.n_clusters
        if rows is None:
            return None
        if self.kish_clusters is not None:  # unequal clusters stand for fewer than their count (issue 98)
            return float(max(min(self.kish_clusters, rows), 1.0))
        return effective_n(rows, math.nan, self.n_clusters if self.n_clusters is not None else rows)

    def interval_n(self, level: float = LEVEL) -> float | None:
        """The effective n the interval uses: `effective_n`, times Korn and Graubard's (1998) degrees-of-freedom
        factor (t_{n-1} / t_df)² at the interval's level where it comes from an estimated error over C clusters
        (a variance estimated from C clusters has C - 1 degrees of freedom, not n - 1). df = min(C - 1, x), x the
        rows of the rarer outcome, n · min(p, 1 - p): nearly all the variance is in the k clusters that hold it, a sum
        of about k squares, and k ≤ x (one positive row in 120 shows no clustering whatever the truth). The result
        is never below min(n_eff, C): C cluster means on the scale have at most p(1 - p) / C of variance, so the
        clusters' own n bounds it (one positive row gets about that n, as 0 % does). Nothing changes where every
        row is its own cluster (the factor is 1: no clustering to estimate), where no error could be estimated
        (n_eff is then the clusters, with no variance estimate to correct) or where no clusters are recorded."""
        n_eff = self.effective_n()
        estimated = any(e is not None and e > 0 for e in (self.clustered, self.stderr))
        p, clusters = self.proportion, self.n_clusters
        crossed = self.overlap and self.by_rule  # a graph sum: normal, save for the rarer outcome's rows
        if n_eff is None or p is None or not estimated or clusters is None or not self.n or self.n < 2:
            return n_eff
        if not crossed and (clusters < 2 or clusters >= self.n):  # every row its own cluster: Wilson's is a binomial's
            return n_eff
        df = min(self.df or (math.inf if crossed else clusters - 1), self.n * min(max(min(p, 1 - p), 0.0), 0.5))
        floor = min(n_eff, self.units or clusters)
        if df <= 0:
            return floor
        from scipy import stats

        quantile = 1 - (1 - level) / 2
        factor = float(stats.t.ppf(quantile, self.n - 1) / stats.t.ppf(quantile, df)) ** 2
        return max(n_eff * min(factor, 1.0), floor)

    def interval(self, level: float = LEVEL) -> tuple[float, float] | None:
        """The interval shown beside the value, on its scale. A bounded mean of rows: Wilson on the effective n
        (Korn-Graubard's degrees of freedom applied, the rarer outcome's where fewer: `interval_n`), Clopper-Pearson
        on it where that n is no more than the clusters (`rests_on_items`). Otherwise, and for a task's own
        aggregation (`resampled`: its bootstrap error over items), value ± t · error (t with clusters - 1 degrees of
        freedom, the larger error), cut at the scale's ends; None where neither can be made. Under issue 107's rule
        (`by_rule`), joined with the cluster score test's interval (`_with_score`). A task's own interval
        (`own_interval`), where recorded, is the one shown."""
        if self.why_no_interval:
            return None
        if self.own_interval is not None and len(self.own_interval) == 2:
            return self.own_interval[0], self.own_interval[1]
        found = self._korn_graubard(level)
        return _with_score(self, found, level) if self.by_rule and not self.resampled else found

    def _korn_graubard(self, level: float) -> tuple[float, float] | None:
        n_eff = None if self.resampled else self.interval_n(level)
        p = self.proportion
        if n_eff is not None and p is not None and self.scale:
            bounded = min(max(p, 0.0), 1.0)
            exact = self.rests_on_items(n_eff)
            low, high = (clopper_pearson_interval if exact else wilson_interval)(bounded, n_eff, level)
            return low * self.scale, high * self.scale
        error = self.error
        if self.value is None or error is None or error <= 0:
            return None
        low, high = interval(self.value, error, level, self.df)
        if not math.isfinite(low):
            return None
        if self.resampled and self.scale:  # a score on a bounded scale: its interval inside it
            low, high = max(low, 0.0), min(high, self.scale)
        return float(low), float(high)

    def rests_on_items(self, n: float) -> bool:
        """Whether an interval on `n` (`interval_n`, from an estimated error) stands on no more units than the
        clusters: the rows then count as C draws or fewer, where Wilson's interval covers below its level near 0 and
        1 (Brown, Cai and DasGupta 2001) and Clopper-Pearson's on Korn and Graubard's n (their own proposal) does
        not. In a seeded grid of 3 to 15 clusters at ρ up to .9 and p .02 to .98, Wilson there covered 85.3 % at
        worst (3 rows an item, 8 items, ρ .9, p .98) and this rule 95.1 % (bench/report_interval_coverage.py). Where no
        error was estimated (every row alike) n is the clusters and Wilson's interval stays, as it does where every
        row is its own cluster (a binomial's, nothing clustered)."""
        estimated = any(e is not None and e > 0 for e in (self.clustered, self.stderr))
        clusters, units = self.n_clusters, self.units
        return estimated and clusters is not None and self.n is not None and clusters < self.n and n <= (units or 0)


def _with_score(estimate: Estimate, found: tuple[float, float] | None, level: float) -> tuple[float, float] | None:
    """Issue 107's rule: the values the cluster score test keeps (`small_sample.score_bounds`: its clustered sum of
    squares is CR1's before C / (C - 1), a crossed design's graph sum as it is), cut at the scale's ends and joined
    with the Korn-Graubard interval `found`, so that the interval covers where either does: the score test where a
    few clusters carry the variance (the t statistic of their terms, which a dominant cluster cannot push past 1),
    Korn and Graubard's where the outcome is rare or the clusters agree (docs/statistics.md)."""
    value, clustered, units, slope, clusters = (
        estimate.value, estimate.clustered, estimate.kish_clusters, estimate.slope, estimate.n_clusters
    )  # fmt: skip
    if value is None or clustered is None or units is None or slope is None or not clusters:
        return found
    raw = clustered * clustered * (1.0 if estimate.overlap or clusters < 2 else (clusters - 1) / clusters)
    bounds = score_bounds(value, raw, slope, units, critical_value(None if estimate.overlap else clusters, level))
    if bounds is None:
        return found
    low, high = (max(bounds[0], 0.0), min(bounds[1], estimate.scale)) if estimate.scale else bounds
    if found is None:
        return (low, high) if high > low else None
    return min(found[0], low), max(found[1], high)


def estimate_of(data: ModelResults, name: str, metric: str, scale: float | None = None) -> Estimate:
    """`metric` of the task or group `name`, with its errors and, from the results' `uncertainty` section (or, for
    an older file, the task's scored samples), its rows and clusters."""
    entry = data.results.get(name) or data.groups.get(name) or {}
    behind = _uncertainty_of(data.sources.get(name), name, metric)
    rows = count(behind.get("n"))
    if rows is None and name in data.results:
        rows = count(data.counters(name).get("n_scored"))
    values = (
        entry.get(f"{metric},none"),
        entry.get(f"{metric}_stderr,none"),
        entry.get(f"{metric}_stderr_clustered,none"),
    )
    return estimate_behind(*values, rows, scale, behind)


def estimate_behind(
    value: object,
    stderr: object,
    clustered: object,
    rows: int | None,
    scale: float | None,
    behind: Mapping[str, object],
) -> Estimate:
    """An estimate from a results file's value, errors and `uncertainty` entry (`behind`): the one constructor the
    report (`estimate_of`) and the viewer read, so that they show the same interval for the same rows."""
    return Estimate(
        number(value),
        number(stderr),
        number(clustered),
        rows,
        count(behind.get("n_clusters")),
        scale,
        number(behind.get("design_effect")),
        method if isinstance(method := behind.get("method"), str) else None,
        number(behind.get("stderr_cr2")),
        number(behind.get("df")),
        number(behind.get("kish_clusters")),
        count(behind.get("largest_cluster")),
        own_interval(behind.get("interval")),
        number(behind.get("slope")),
        positive(behind.get("working_model_n")),
        behind.get("overlap") is True,
        rule if isinstance(rule := behind.get("interval_rule"), str) else None,
    )


def positive(value: object) -> float | None:
    """A number above 0, an infinity ("inf": no bound) included; else None."""
    if value == "inf":
        return math.inf
    found = number(value)
    return found if found is not None and found > 0 else None


def own_interval(recorded: object) -> tuple[float, ...] | None:
    """A recorded task's own interval: its two bounds, () where it gave none, None where none is recorded (or it is
    not two numbers)."""
    if not isinstance(recorded, list):
        return None
    bounds = [number(b) for b in recorded]
    if not bounds:
        return ()
    low, high = (bounds + [None, None])[:2]
    return (low, high) if len(bounds) == 2 and low is not None and high is not None else None


def _uncertainty_of(source: Mapping[str, object] | None, name: str, metric: str) -> Mapping[str, object]:
    """The results file's `uncertainty.<name>.<metric>` entry, or {} where any level is missing or not an object (a
    results file from elsewhere may hold anything there)."""
    found: object = source
    for key in ("uncertainty", name, metric):
        found = found.get(key) if isinstance(found, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def _significant(value: float) -> str:
    """An error with two significant digits (0.031, 1.2, 14): a small one never rounds to "0.0"."""
    if value == 0:
        return "0"
    digits = max(1, 1 - math.floor(math.log10(abs(value))))
    return f"{value:.{digits}f}"


def interval_text(estimate: Estimate, factor: float = 1.0, decimals: int = 1) -> str:
    """`5.0 [0.9, 23.6]`: the value and its 95 % interval times `factor` (100: a proportion shown as a percentage);
    an unbounded value `3.2 ± 0.41`, or `3.2 (no spread)` where every row scored the same."""
    if estimate.value is None:
        return "N/A"
    shown = f"{estimate.value * factor:.{decimals}f}"
    bounds = estimate.interval()
    if bounds is None and (why := estimate.why_no_interval):
        return f"{shown} ({why})"
    if bounds is not None and estimate.scale is not None:
        low, high = (b * factor for b in bounds)
        return f"{shown} {bounds_text(low, high, decimals)}"
    if estimate.error is None:
        return shown
    if estimate.error == 0:
        return f"{shown} (no spread)"
    return f"{shown} ± {_significant(estimate.error * factor)}"


def mean_of(parts: list[Estimate]) -> Estimate | None:
    """The unweighted mean of estimates that share no item (an average over categories made of different datasets):
    its errors sqrt(Σ se²)/k, its rows and clusters summed; None unless every part has a value."""
    if not parts or any(p.value is None for p in parts):
        return None
    k = len(parts)

    def pooled(errors: list[float | None]) -> float | None:
        if any(e is None for e in errors):
            return None
        return math.sqrt(sum(e * e for e in errors if e is not None)) / k

    plain = pooled([p.stderr for p in parts])
    clustered = pooled([p.clustered for p in parts])
    rows = [p.n for p in parts]
    clusters = [p.n_clusters for p in parts]
    deff = (clustered / plain) ** 2 if clustered is not None and plain else None
    return Estimate(
        sum(p.value for p in parts if p.value is not None) / k,
        plain,
        clustered,
        sum(r for r in rows if r is not None) if all(r is not None for r in rows) else None,
        sum(c for c in clusters if c is not None) if all(c is not None for c in clusters) else None,
        parts[0].scale,
        deff,
    )
