"""A task's sample metrics aggregated: each `metric_list` entry's aggregation over the scored samples' values, its
standard error where the aggregation is a built-in one, and a mapping kept apart as a breakdown."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from harness.config.task_config import MetricSpec
from harness.errors import UserError
from harness.running.metrics import STDERRS


def _aggregate_one(task: str, aggregation: Callable[..., Any], spec: MetricSpec, column: list[Any]) -> Any:
    """One metric's aggregate; a task's own aggregation that fails on the values is one line naming it."""
    try:
        return aggregation(column)
    except (TypeError, ValueError, ArithmeticError, KeyError, IndexError) as err:
        raise UserError(
            f"task {task!r}: metric {spec.metric!r}: aggregation {spec.aggregation} failed on "
            f"{len(column)} sample values ({type(err).__name__}: {err})"
        ) from None


def aggregate_metrics(
    task: str,
    metric_list: Sequence[MetricSpec],
    aggregations: Mapping[str, Callable[..., Any]],
    judged: Collection[str],
    metric_rows: list[dict[str, Any]],
) -> tuple[dict[str, float], dict[str, float], dict[str, Any]]:
    """Aggregate scored samples' metrics: (values, stderrs, breakdowns); `judged`: the judge's metrics."""
    values: dict[str, float] = {}
    stderrs: dict[str, float] = {}
    breakdowns: dict[str, Any] = {}
    for spec in metric_list:
        # A judge metric is missing where the judge did not run or gave no verdict (left out, as the
        # official judge leaves such rows out); without any value the metric is absent, not 0.
        column = [row[spec.metric] for row in metric_rows if spec.metric in row]
        if not column and spec.metric in judged:
            continue
        result = _aggregate_one(task, aggregations[spec.metric], spec, column)
        if isinstance(result, dict):
            breakdowns[spec.metric] = result
            continue
        try:
            values[spec.metric] = float(result)
        except (TypeError, ValueError):
            raise UserError(
                f"task {task!r}: metric {spec.metric!r}: aggregation {spec.aggregation} returned "
                f"{type(result).__name__}, not a number or a mapping"
            ) from None
        stderr = STDERRS.get(spec.aggregation) if isinstance(spec.aggregation, str) else None
        stderrs[spec.metric] = float(stderr(column)) if stderr else math.nan
    return values, stderrs, breakdowns
