"""A sample's siblings: the rows of the same model that share one of its cluster keys (the journal's `cluster`, from
its task's `cluster_key:`), in its task and in the other tasks of its benchmark. MMLongBench's same `source_id` at its
other depths and lengths, LoCoVQA's item at its other context lengths, MMNeedle's stitched image across K: the rows
its clustered standard error counts as one item. Read from the viewer's journal indexes (their `clusters`), never
the journals whole."""

from __future__ import annotations

from dataclasses import dataclass

from harness.view.catalog import TaskRun
from harness.view.viewer import Viewer

SIBLINGS_MOST = 200  # listed on a page (the count is of all)


@dataclass(frozen=True)
class Sibling:
    task: str
    sample_id: str
    status: str
    shared: tuple[str, ...]  # the cluster keys it shares with the sample


def same_item_rows(viewer: Viewer, run: TaskRun, keys: tuple[str, ...]) -> list[Sibling]:
    """Every row of `run.model` sharing a key of `keys` (the sample itself left out by its caller), its own task's
    first, then its benchmark's other tasks in their natural order."""
    if not keys:
        return []
    wanted = set(keys)
    catalog = viewer.catalog
    by_task = catalog.hooks.get(run.model, {})
    tasks = [t for t in catalog.tasks(run.model) if t != run.task and by_task.get(t) is run.hooks]
    out = []
    for task in [run.task, *tasks]:
        other = catalog.task_run(run.model, task)
        if other is None:
            continue
        index = viewer.index(other)
        for row in index.clusters.rows_with(wanted).tolist():  # found in Arrow; only those rows read here
            shared = tuple(k for k in index.clusters[row] if k in wanted)
            if shared:
                out.append(Sibling(task, index.sample_ids[row], index.statuses[row], shared))
    return out
