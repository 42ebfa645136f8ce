"""A task's metric errors: each scored row's cluster keys, and per metric its plain and clustered standard errors,
clusters and design effect (`harness.uncertainty`), with the metric in first-order form for its groups.

Which method each aggregation gets (docs/statistics.md):

- `mean`, `sum`: their exact influences; CR1 over the rows' clusters (the graph sum for a crossed design).
- `ratio_of_sums`: its influence function (exact to first order); the plain error stays p(1-p)/Σden (each unit a
  trial), so the design effect shows what the units of one row sharing an answer do to it.
- `mean_by_key` (a breakdown): each cell's mean, clustered on the keys of the rows its pairs come from.
- anything else (a task's `!function`): the seeded bootstrap, rows resampled for the plain error and clusters for the
  clustered one; carried into its groups by the delete-one jackknife, computed only when a group asks for it. Where
  the task's function carries an interval of its own (`with_interval`), the interval is that one, recorded beside the
  errors: a bootstrap cannot fit an aggregation that counts what the rows leave out (MM-NIAH's empty grid cells).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from harness.uncertainty.bootstrap import bootstrap_error
from harness.uncertainty.influence import (
    Linearized,
    linearize_by_jackknife,
    linearize_mean,
    linearize_ratio,
    linearize_sum,
)
from harness.uncertainty.variance import ClusteredError, design_from_keys, mean_error

LINEARIZED = {"mean": linearize_mean, "sum": linearize_sum}
OwnInterval = Callable[..., tuple[float, float] | None]  # (the rows' values, their cluster keys) -> bounds or None
F = TypeVar("F", bound=Callable[..., object])


def with_interval(interval: OwnInterval) -> Callable[[F], F]:
    """Marks a task's aggregation as carrying its own 95 % interval, `interval(values, cluster keys)` over the rows it
    aggregates (None: no interval can be honest on these rows); the report shows it in place of value ± t · SE."""

    def mark(function: F) -> F:
        function.__dict__["interval"] = interval
        return function

    return mark


@dataclass(frozen=True)
class ScoredRow:
    """One scored sample as its task's aggregation reads it: `row` names it ("task/sample id"), `metrics` its values,
    `keys` its cluster keys (never empty: a row with none is keyed by its own name, so it stands alone)."""

    row: str
    metrics: Mapping[str, object]
    keys: tuple[str, ...]


@dataclass
class Influences:
    """A task's (or group's) metrics in first-order form, made when first asked for (`get`): the jackknife of a
    task's own aggregation calls it once per row, which only a group over it needs."""

    makers: dict[str, Callable[[], Linearized | None]] = field(default_factory=dict)
    made: dict[str, Linearized | None] = field(default_factory=dict)

    def add(self, metric: str, maker: Callable[[], Linearized | None]) -> None:
        self.makers[metric] = maker

    def get(self, metric: str) -> Linearized | None:
        if metric not in self.made:
            maker = self.makers.get(metric)
            self.made[metric] = maker() if maker else None
        return self.made[metric]


def bootstrap_seed(task: str, metric: str) -> int:
    """A seed of its own for each task's metric: the same run resamples the same way every time."""
    return int.from_bytes(hashlib.sha256(f"{task}/{metric}".encode()).digest()[:4], "big")


def _pairs(column: Sequence[object]) -> tuple[np.ndarray, np.ndarray]:
    pairs = np.asarray(column, dtype=float).reshape(len(column), 2)
    return pairs[:, 0], pairs[:, 1]


def _linearize(
    aggregation: str, column: Sequence[object], rows: list[str], keys: list[tuple[str, ...]]
) -> Linearized | None:
    """The built-in aggregation's first-order form, or None where its values cannot be read as it reads them."""
    try:
        if aggregation in LINEARIZED:
            return LINEARIZED[aggregation](np.asarray(column, dtype=float), rows, keys)
        if aggregation == "ratio_of_sums":
            numerators, denominators = _pairs(column)
            return linearize_ratio(numerators, denominators, rows, keys)
    except (TypeError, ValueError):
        return None
    return None


def unknown_error(n: int, method: str) -> ClusteredError:
    return ClusteredError(math.nan, math.nan, n, 0, math.nan, False, method)


def breakdown_errors(column: Sequence[object], keys: Sequence[tuple[str, ...]]) -> dict[str, ClusteredError]:
    """Each cell of a `mean_by_key` breakdown (`[[cell, value], ...]` per row): its mean's errors over the pairs in
    it, each pair keyed by the row it came from (a row's pairs in one cell are one unit, never several)."""
    cells: dict[str, tuple[list[float], list[tuple[str, ...]]]] = {}
    for pairs, row_keys in zip(column, keys, strict=True):
        for pair in pairs if isinstance(pairs, list | tuple) else ():
            if isinstance(pair, list | tuple) and len(pair) == 2 and isinstance(pair[1], int | float):
                values, cell_keys = cells.setdefault(str(pair[0]), ([], []))
                values.append(float(pair[1]))
                cell_keys.append(row_keys)
    return {cell: mean_error(values, cell_keys) for cell, (values, cell_keys) in cells.items()}


def metric_errors(
    task: str,
    metric: str,
    aggregation: str | None,
    function: Callable[..., Any],
    scored: Sequence[ScoredRow],
    bootstrap_iters: int,
) -> tuple[ClusteredError | None, Callable[[], Linearized | None]]:
    """(the metric's errors, the maker of its first-order form) over the rows that have it; `aggregation` is the
    built-in's name, or None for a task's own `function`. A breakdown (`mean_by_key`) has no errors of its own here
    (None; `breakdown_errors` gives its cells')."""
    present = [r for r in scored if metric in r.metrics]
    column = [r.metrics[metric] for r in present]
    rows = [r.row for r in present]
    keys = [r.keys for r in present]
    if aggregation == "mean_by_key":
        return None, lambda: None
    if aggregation is not None:
        linearized = _linearize(aggregation, column, rows, keys)
        if linearized is None:
            return unknown_error(len(column), aggregation), lambda: None
        return linearized.error(), lambda: linearized
    if bootstrap_iters <= 0:
        error = unknown_error(len(column), "bootstrap")
    else:
        error = bootstrap_error(function, column, design_from_keys(keys), bootstrap_iters, bootstrap_seed(task, metric))
    own: OwnInterval | None = getattr(function, "interval", None)
    if own is not None:
        error = dataclasses.replace(error, interval=own(column, keys) or ())
    return error, lambda: linearize_by_jackknife(function, column, rows, keys)
