"""A comparison row's interval and p kept to what the data can say (issue 63, item 3; docs/statistics.md, *Interval
and p*): every interval inside the scale its metric is on, none at all over fewer clusters than a t interval can
stand on, and no interval that collapses to a point shown as one (compare.md says "no spread").

- a `mean` of 0/1 rows (or 0/100 on a percentage scale): Newcombe's hybrid score interval for paired proportions,
  clustered through the effective n (`harness.uncertainty.comparisons.clustered_newcombe`): inside [-1, 1] on its scale, never a
  point; and its p that interval inverted (`inverted_p`), so that p < 1 - level exactly where the interval leaves 0
  out: one decision a row;
- any other row on a known scale (a proportion, or a benchmark's declared 0-100): the clustered t interval cut at the
  scale's ends, ±scale (the difference of two means on it cannot lie outside);
- fewer than `FEW_CLUSTERS` clusters in a partition: no interval, and p from the exact cluster sign-flip test where
  the row is a difference of row totals (`mean`, `sum`), else none; said in the row's warnings.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Hashable, Sequence

import numpy as np

from harness.outputs.compare.paired_runs import float_or_nan
from harness.outputs.report.report_md import scale_of, scales
from harness.outputs.results.compare_file import ComparisonRow
from harness.outputs.results.model_results import ModelResults
from harness.uncertainty.comparisons import FEW_CLUSTERS, cluster_sign_flip_p, clustered_newcombe
from harness.uncertainty.variance import design_from_keys

NAN = math.nan


@functools.lru_cache(maxsize=4096)
def declared_scale(name: str, kind: str) -> int | None:
    """The scale a task's or group's benchmark declares (`report.scales`: 1 or 100), or None (cached: a benchmark's
    report module is looked up once per name, not once per metric)."""
    named = ModelResults(results={name: {}} if kind == "task" else {}, groups={name: {}} if kind == "group" else {})
    return scales(named).get(name)


def scale_for(name: str, kind: str, values: Sequence[object]) -> int | None:
    """The scale `values` of a task or group lie on (`report.scale_of`: its benchmark's, else 1 for values in [0, 1]);
    None for values on no known scale."""
    declared = declared_scale(name, kind)
    return declared if declared is not None else scale_of(name, values, {})


def row_scale(row: ComparisonRow) -> float | None:
    """The scale the row's values lie on (`scale_for`); None for a count (`sum`) or values on no known scale."""
    if row["method"].startswith("sum"):
        return None
    found = scale_for(row["name"], row["kind"], (row["value_a"], row["value_b"]))
    return None if found is None else float(found)


def without_error(row: ComparisonRow, why: str) -> None:
    """A row whose error does not exist (issue 63, item 4): no error, interval, p or MDE, and why in its warnings."""
    for key in ("stderr", "stderr_clustered", "stderr_cr2", "design_effect", "low", "high", "p_value", "mde"):
        row[key] = NAN
    if row["run_to_run_stderr"] is not None:
        row["run_to_run_stderr"] = NAN
    row["warnings"].append(f"`{row['name']}` {row['metric']}: no error and no p: {why}")


def inverted_p(bounds: Callable[[float], tuple[float, float]]) -> float:
    """The two-sided p of a family of intervals (`bounds(level)`, nested: wider as the level rises): 1 - the level at
    which the interval first holds 0, by bisection; so the row's 1 - α interval leaves 0 out exactly where p < α."""

    def holds(level: float) -> bool:
        low, high = bounds(level)
        return not (math.isfinite(low) and math.isfinite(high)) or low <= 0.0 <= high

    excluded, held = 1e-12, 1.0 - 1e-12
    if holds(excluded):
        return 1.0
    if not holds(held):
        return 1e-12
    for _ in range(36):  # to 1e-11
        middle = (excluded + held) / 2
        excluded, held = (excluded, middle) if holds(middle) else (middle, held)
    return 1.0 - held


def few_clusters(row: ComparisonRow) -> bool:
    return not row["overlap"] and 0 < row["n_clusters"] < FEW_CLUSTERS


def settle(
    row: ComparisonRow,
    level: float,
    columns: tuple[Sequence[float], Sequence[float]] | None = None,
    keys: Sequence[Sequence[Hashable]] | None = None,
    right: float | None = None,
) -> None:
    """Set the row's interval (and, over few clusters, its p) by the rules above. `columns`: A's and B's numbers per
    row, where the row is a difference of row totals (`mean`, `sum`); `keys` their cluster keys; `right`: the value
    that means right where every value is 0 or it."""
    if few_clusters(row):
        row["low"], row["high"] = NAN, NAN
        flip = columns is not None and keys is not None
        row["p_value"] = NAN
        if columns is not None and keys is not None:
            labels = design_from_keys(keys).labels
            row["p_value"] = cluster_sign_flip_p(list(np.subtract(columns[0], columns[1])), labels)
        how = "p from the exact cluster sign-flip test" if flip else "no p (no test valid at so few clusters here)"
        row["warnings"].append(
            f"`{row['name']}` {row['metric']}: {row['n_clusters']} clusters, fewer than {FEW_CLUSTERS}: "
            f"no interval (a t interval over so few is not to be trusted); {how}"
        )
        return
    scale = row_scale(row)
    if columns is not None and right is not None and not any([*columns[0], *columns[1]]):
        right = scale  # every row 0 in both runs: the scale says what right would have been
    if columns is not None and right is not None and right == scale and row["method"].startswith("paired"):
        a, b = ([v / right for v in column] for column in columns)
        se, se_clustered = float_or_nan(row["stderr"]), float_or_nan(row["stderr_clustered"])

        def bounds(at: float) -> tuple[float, float]:
            return clustered_newcombe(a, b, se, se_clustered, row["n_clusters"], at)

        low, high = bounds(level)
        row["low"], row["high"] = low * right, high * right
        row["p_value"] = inverted_p(bounds)
        row["method"] += "; Newcombe's hybrid score interval on the effective n, and its p (the interval inverted)"
        return
    if scale is not None:
        low, high = float_or_nan(row["low"]), float_or_nan(row["high"])
        if math.isfinite(low) and math.isfinite(high) and (low < -scale or high > scale):
            row["low"], row["high"] = max(low, -scale), min(high, scale)
            row["method"] += f"; interval cut at ±{scale:g}, the ends of the scale"
