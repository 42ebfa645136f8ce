"""What running one task gives: its aggregated metrics, its samples counted per status, and how the run got them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.api import EMPTY, OK, GenerationSettings
from harness.running.metric_errors import Influences
from harness.running.task import Task
from harness.running.task_aggregation import Aggregated
from harness.uncertainty.variance import ClusteredError


@dataclass
class TaskResult:
    task: Task
    settings: GenerationSettings
    fingerprint: str
    aggregated: Aggregated  # its metrics' values, errors and breakdowns (`harness.running.task_aggregation`)
    counts: dict[str, int]  # samples per status, over the evaluated documents
    n_effective: int
    resumed: int  # samples found finished in the journal
    changed: int  # journalled samples whose inputs changed since, generated again
    generated: int  # samples sent to the model in this run
    seconds: float
    usage: dict[str, int] = field(default_factory=dict)  # token usage summed over the task's samples
    answer_usages: list[dict[str, int]] = field(default_factory=list)  # each answer's, priced one by one (`cost`)
    task_docs: int = 0  # documents of the task before sharding
    rescored: str | None = None  # why and how many stored replies were scored again (`SampleStore.rescoring`)
    truncated: int = 0  # samples the task's truncation rule cut to fit the model
    judge_counts: dict[str, int] = field(default_factory=dict)  # n_judged, n_judge_unparsed, n_judge_error
    judge_usage: dict[str, int] = field(default_factory=dict)  # the judge's token usage, summed over its calls
    judge_usages: list[dict[str, int]] = field(default_factory=list)  # each judge call's, priced one by one

    @property
    def values(self) -> dict[str, float]:
        return self.aggregated.values

    @property
    def stderrs(self) -> dict[str, float]:
        return self.aggregated.stderrs

    @property
    def breakdowns(self) -> dict[str, Any]:
        return self.aggregated.breakdowns

    @property
    def errors(self) -> dict[str, ClusteredError]:
        """Per metric: plain and clustered errors, clusters, design effect."""
        return self.aggregated.errors

    @property
    def influences(self) -> Influences:
        """Its metrics in first-order form, for the task's groups."""
        return self.aggregated.influences

    @property
    def n_scored(self) -> int:
        return self.counts.get(OK, 0) + self.counts.get(EMPTY, 0)
