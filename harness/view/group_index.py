"""The sample table of a group: every member task's journal index (`sample_index`) side by side, one row per sample
of each task, with the task it belongs to. The benchmark's axes across tasks (MMLongBench's length and category,
LoCoVQA's context length, MMNeedle's M, N and K) are one value per task, so they filter and sort the rows of a group
as the per-document axes do the rows of one task."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness.view.sample_index import SampleIndex, read_record
from harness.view.text_columns import concat, concat_clusters

HEADLINE = "headline"  # the metric choice that reads each row on its own task's headline metric


@dataclass
class GroupIndex(SampleIndex):
    """Rows of several tasks: `row_task` names each row's task (an index into `tasks`), whose journal `journals`
    holds its record. Axes are given one value per task (not per document), read through `row_task`: a group of a
    million rows filters and sorts by them in array work over a few values."""

    tasks: list[str] = field(default_factory=list)
    journals: list[Path] = field(default_factory=list)
    row_task: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def record(self, row: int) -> dict[str, Any]:
        return read_record(self.journals[int(self.row_task[row])], int(self.offsets[row]), int(self.lengths[row]))

    def task_of(self, row: int) -> str:
        return self.tasks[int(self.row_task[row])]

    def _by_doc(self, per_doc: np.ndarray, missing: object) -> np.ndarray:
        return np.asarray(per_doc)[self.row_task] if len(per_doc) else np.full(len(self), missing)  # given per task

    def order(
        self, rows: np.ndarray, key: str, descending: bool, axes: dict[str, list[tuple[str, ...]]] | None = None
    ) -> np.ndarray:
        if key != "doc":
            return super().order(rows, key, descending, axes)
        by_task = rows[np.lexsort((self.doc_ids[rows], self.row_task[rows]))]  # each task's documents in turn
        return by_task[::-1] if descending else by_task


def combine(parts: list[tuple[str, SampleIndex, str | None]]) -> GroupIndex:
    """One index over `parts`: (task, its index, its headline metric), in that order. Every metric of any task is a
    column (NaN where a task has none), and `HEADLINE` reads each row on its task's headline metric."""
    group = GroupIndex(Path("."), (0, 0))
    names: dict[str, None] = {}
    for _, index, _ in parts:
        names.update(dict.fromkeys(index.metrics))
    columns: dict[str, list[np.ndarray]] = {HEADLINE: [], **{name: [] for name in names}}
    row_task = []
    for number, (task, index, headline) in enumerate(parts):
        size = len(index)
        group.tasks.append(task)
        group.journals.append(index.path)
        row_task.append(np.full(size, number, np.int64))
        for name in names:
            columns[name].append(index.metrics.get(name, np.full(size, math.nan)))
        columns[HEADLINE].append(index.metrics.get(headline or "", np.full(size, math.nan)))
        group.skipped += index.skipped
        if index.problem:
            group.problem = "; ".join(filter(None, [group.problem, f"{task}: {index.problem}"]))

    def joined(arrays: list[np.ndarray], dtype: Any) -> np.ndarray:
        return np.concatenate(arrays).astype(dtype) if arrays else np.zeros(0, dtype)

    group.row_task = joined(row_task, np.int64)
    group.sample_ids = concat([index.sample_ids for _, index, _ in parts])
    group.statuses = concat([index.statuses for _, index, _ in parts])
    group.clusters = concat_clusters([index.clusters for _, index, _ in parts], group.cluster_of)
    group.doc_ids = joined([index.doc_ids for _, index, _ in parts], np.int64)
    group.tokens = joined([index.tokens for _, index, _ in parts], np.float64)
    group.truncated = joined([index.truncated for _, index, _ in parts], bool)
    group.offsets = joined([index.offsets for _, index, _ in parts], np.int64)
    group.lengths = joined([index.lengths for _, index, _ in parts], np.int64)
    group.metrics = {name: joined(arrays, np.float64) for name, arrays in columns.items()}
    return group
