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
