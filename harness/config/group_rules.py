"""The registered group aggregations (`mean`, `weighted_mean`, `strict_mean`; see `harness.outputs.results.groups`) and the member
score they read: apart from `harness.outputs.results.groups`, which needs the task configuration, so that the configuration can
check an aggregation's name without importing the module that applies it."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class MemberScore:
    name: str
    value: float  # NaN when the member is missing or N/A
    stderr: float  # NaN when unknown
    n: int  # samples scored

    @property
    def missing(self) -> bool:
        return math.isnan(self.value)


GroupAggregation = Callable[[Sequence[MemberScore]], "float | tuple[float, float]"]


def mean(scores: Sequence[MemberScore], weight_by_size: bool = False) -> tuple[float, float]:
    """Mean of the members with a value and its stderr.

    Weighted by size it is the micro mean Σ n_i v_i / Σ n_i with stderr sqrt(Σ n_i² se_i²) / Σ n_i;
    unweighted it is the macro mean with stderr sqrt(Σ se_i²) / k (members are independent samples).
    N/A members are left out; unknown stderrs are left out of the stderr.
    """
    kept = [s for s in scores if not s.missing]
    if not kept:
        return math.nan, math.nan
    if weight_by_size:
        n_total = sum(s.n for s in kept)
        if not n_total:
            return math.nan, math.nan
        value = sum(s.value * s.n for s in kept) / n_total
        se = math.sqrt(sum((s.n * s.stderr) ** 2 for s in kept if not math.isnan(s.stderr))) / n_total
    else:
        value = sum(s.value for s in kept) / len(kept)
        se = math.sqrt(sum(s.stderr**2 for s in kept if not math.isnan(s.stderr))) / len(kept)
    return value, se


def weighted_mean(scores: Sequence[MemberScore]) -> tuple[float, float]:
    return mean(scores, weight_by_size=True)


def strict_mean(scores: Sequence[MemberScore]) -> tuple[float, float]:
    """Unweighted mean over every member; N/A (NaN) if any member is N/A, and an unknown stderr if any
    member's is unknown. No members: N/A."""
    if not scores or any(s.missing for s in scores):
        return math.nan, math.nan
    value = sum(s.value for s in scores) / len(scores)
    if any(math.isnan(s.stderr) for s in scores):
        return value, math.nan
    return value, math.sqrt(sum(s.stderr**2 for s in scores)) / len(scores)


GROUP_AGGREGATIONS: dict[str, GroupAggregation] = {
    "mean": mean,
    "weighted_mean": weighted_mean,
    "strict_mean": strict_mean,
}
