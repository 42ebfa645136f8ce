"""Aggregations over per-sample metric values, and built-in sample metrics.

A task's `metric_list` names an aggregation here (or a `!function`). An aggregation that returns a
mapping is a breakdown (per cell, per depth, ...): it is written under `breakdowns` in the results,
not among the scalar `"metric,none"` keys that lm-eval tools read. Standard errors, plain and clustered, are
`harness.running.task.metric_errors`'s (on `harness.uncertainty`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from builders.core.contract import kind_of

Aggregation = Callable[[Sequence[Any]], Any]


def mean(values: Sequence[float]) -> float:
    """Plain mean; NaN for no values (a task where every sample was excluded)."""
    return sum(values) / len(values) if values else math.nan


def mean_stderr(values: Sequence[float]) -> float:
    """sd(values, ddof=1) / sqrt(n): the sample variance, as lm-eval, lmms-eval and inspect_ai compute it (before
    issue 48 this was the population variance, sqrt(p(1-p)/n) for 0/1 values: smaller by sqrt((n-1)/n)).
    Edge cases: n = 0 or 1 gives NaN; all values equal give 0.0."""
    n = len(values)
    if n < 2:
        return math.nan
    m = mean(values)
    # `d * d`, not `d ** 2`: a difference past 1e154 squares to inf instead of raising OverflowError.
    variance = sum((v - m) * (v - m) for v in values) / (n - 1)
    return math.sqrt(variance / n)


def ratio_of_sums(values: Sequence[Sequence[float]]) -> float:
    """Σ numerators / Σ denominators over `[numerator, denominator]` pairs (micro average).

    Edge cases: pairs with denominator 0 add nothing; no denominator at all gives NaN.
    """
    den = sum(v[1] for v in values)
    return sum(v[0] for v in values) / den if den else math.nan


def total(values: Sequence[float]) -> float:
    return float(sum(values))


def mean_by_key(values: Sequence[Sequence[Sequence[Any]]]) -> dict[str, dict[str, float]]:
    """Group `[[key, value], ...]` lists (one list per sample, any number of pairs) by key.

    Returns `{key: {"mean": m, "n": n, "stderr": se}}`, keys in first-seen order sorted
    naturally by the caller if needed. Samples with an empty list contribute nothing.
    """
    groups: dict[str, list[float]] = {}
    for pairs in values:
        for key, value in pairs:
            groups.setdefault(str(key), []).append(float(value))
    return {k: {"mean": mean(v), "n": len(v), "stderr": mean_stderr(v)} for k, v in groups.items()}


def _is_number(value: object) -> bool:
    return isinstance(value, int | float)


def _is_key(value: object) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def _is_pair(value: object) -> bool:
    return isinstance(value, list | tuple) and len(value) == 2 and all(_is_number(v) for v in value)


def _is_breakdown(value: object) -> bool:
    return isinstance(value, list | tuple) and all(
        isinstance(p, list | tuple) and len(p) == 2 and _is_key(p[0]) and _is_number(p[1]) for p in value
    )


# What one sample's value must be for each built-in aggregation: (test, the words an error says it expected).
# A journal line whose value has another shape is not used (`harness.running.journal.sample_store`): its sample runs again.
SAMPLE_SHAPES: dict[str, tuple[Callable[[object], bool], str]] = {
    "mean": (_is_number, "a number"),
    "sum": (_is_number, "a number"),
    "ratio_of_sums": (_is_pair, "a [numerator, denominator] pair of numbers"),
    "mean_by_key": (_is_breakdown, "a list of [key, number] pairs"),
}


def sample_value_problem(aggregation: str, value: object) -> str | None:
    """Why `value` cannot be one sample's value of a metric aggregated by the built-in `aggregation`, or None
    (None too for an aggregation of a task's own, whose shape only its function knows)."""
    shape = SAMPLE_SHAPES.get(aggregation)
    if shape is None or shape[0](value):
        return None
    return f"expected {shape[1]} (aggregation {aggregation}), got {kind_of(value)}"


AGGREGATIONS: dict[str, Aggregation] = {
    "mean": mean,
    "ratio_of_sums": ratio_of_sums,
    "sum": total,
    "mean_by_key": mean_by_key,
}


def exact_match(target: str, response: str) -> float:
    """1.0 when the response equals the target after stripping surrounding whitespace."""
    return float(response.strip() == target.strip())


SAMPLE_METRICS: dict[str, Callable[[str, str], float]] = {"exact_match": exact_match}
