"""A task's sample metrics aggregated: each `metric_list` entry's aggregation over the scored samples' values, its
plain and clustered standard errors, clusters and design effect (`harness.running.task.metric_errors`), and a mapping kept
apart as a breakdown."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.config.task_config import MetricSpec
from harness.errors import UserError
from harness.running.task.metric_errors import Influences, ScoredRow, breakdown_errors, metric_errors
from harness.uncertainty.bootstrap import DEFAULT_ITERS
from harness.uncertainty.variance import ClusteredError


@dataclass
class Aggregated:
    """A task's aggregates: `values`, plain `stderrs`, `breakdowns`, and per metric its `errors` (plain and clustered,
    clusters, design effect) and first-order form (`influences`, for its groups)."""

    values: dict[str, float] = field(default_factory=dict)
    stderrs: dict[str, float] = field(default_factory=dict)
    breakdowns: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, ClusteredError] = field(default_factory=dict)
    influences: Influences = field(default_factory=Influences)


def _aggregate_one(task: str, aggregation: Callable[..., Any], spec: MetricSpec, column: list[Any]) -> Any:
    """One metric's aggregate; a task's own aggregation that fails on the values is one line naming it."""
    try:
        return aggregation(column)
    except (TypeError, ValueError, ArithmeticError, KeyError, IndexError) as err:
        raise UserError(
            f"task {task!r}: metric {spec.metric!r}: aggregation {spec.aggregation} failed on "
            f"{len(column)} sample values ({type(err).__name__}: {err})"
        ) from None


def _with_cell_errors(
    breakdown: dict[str, object], column: list[object], keys: list[tuple[str, ...]]
) -> dict[str, object]:
    """A `mean_by_key` breakdown with each cell's clustered error, clusters and design effect beside its stderr."""
    errors = breakdown_errors(column, keys)
    for cell, entry in breakdown.items():
        error = errors.get(cell)
        if isinstance(entry, dict) and error is not None:
            entry.update(
                stderr_clustered=error.stderr_clustered, n_clusters=error.n_clusters, design_effect=error.design_effect
            )
    return breakdown


def aggregate_metrics(
    task: str,
    metric_list: Sequence[MetricSpec],
    aggregations: Mapping[str, Callable[..., Any]],
    judged: Collection[str],
    scored: Sequence[ScoredRow],
    bootstrap_iters: int = DEFAULT_ITERS,
) -> Aggregated:
    """Aggregate scored samples' metrics; `judged`: the judge's metrics; `bootstrap_iters`: draws of the bootstrap
    that a task's own aggregation gets its errors from (0: none, its errors unknown)."""
    out = Aggregated()
    for spec in metric_list:
        # A judge metric is missing where the judge did not run or gave no verdict (left out, as the
        # official judge leaves such rows out); without any value the metric is absent, not 0.
        present = [row for row in scored if spec.metric in row.metrics]
        column = [row.metrics[spec.metric] for row in present]
        if not column and spec.metric in judged:
            continue
        function = aggregations[spec.metric]
        result = _aggregate_one(task, function, spec, column)
        builtin = spec.aggregation if isinstance(spec.aggregation, str) else None
        if isinstance(result, dict):
            if builtin == "mean_by_key":
                result = _with_cell_errors(result, column, [row.keys for row in present])
            out.breakdowns[spec.metric] = result
            continue
        try:
            out.values[spec.metric] = float(result)
        except (TypeError, ValueError):
            raise UserError(
                f"task {task!r}: metric {spec.metric!r}: aggregation {spec.aggregation} returned "
                f"{type(result).__name__}, not a number or a mapping"
            ) from None
        if spec.reference:  # a level to compare with (chance), not a score: no error to report
            out.stderrs[spec.metric] = math.nan
            continue
        error, influence = metric_errors(task, spec.metric, builtin, function, present, bootstrap_iters)
        out.stderrs[spec.metric] = error.stderr if error is not None else math.nan
        if error is not None:
            out.errors[spec.metric] = error
        out.influences.add(spec.metric, influence)
    return out
