"""A second model beside the first on a task's or a group's page (`/samples?model=A&task=NAME&vs=B`): B's number
beside A's wherever the page shows one (the headline, each grid cell, each member task), and in the sample table B's
score and answer on the same sample (same task, same sample id), or what B has of it (not run, its status).

B's rows come from B's own journal index (`sample_index`), looked up by sample id for the rows of the page only."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from starlette.datastructures import QueryParams

from harness.view.shown import excerpt
from harness.view.viewer import Viewer


def versus_of(viewer: Viewer, params: QueryParams, model: str, tasks: list[str]) -> str | None:
    """The `vs` model of the page: another model of the folder that ran at least one of `tasks`, else None."""
    other = params.get("vs", "")
    catalog = viewer.catalog
    if not other or other == model or other not in catalog.models:
        return None
    return other if any(task in catalog.models[other].results for task in tasks) else None


def others_of(viewer: Viewer, model: str, tasks: list[str]) -> list[str]:
    """The other models that ran any of `tasks`: the page's choice of a model to set beside."""
    catalog = viewer.catalog
    return [m for m in catalog.model_names() if m != model and any(t in catalog.models[m].results for t in tasks)]


def beside(viewer: Viewer, model: str, rows: list[dict[str, Any]], metric_of: Callable[[str], str | None]) -> None:
    """Each row of the page (`sample_table`'s) gets `b`: `model`'s status, score on the row task's `metric_of` and
    answer on the same sample."""
    for row in rows:
        run = viewer.catalog.task_run(model, row["task"])
        index = viewer.index(run) if run is not None else None
        position = index.position(str(row["sample"])) if index is not None else None
        if index is None or position is None:
            row["b"] = {"status": "not run", "value": None, "answer": "", "error": ""}
            continue
        record = index.record(position)
        metric = metric_of(row["task"])
        values = index.metrics.get(metric) if metric else None
        value = float(values[position]) if values is not None else math.nan
        row["b"] = {
            "status": index.statuses[position],
            "value": None if math.isnan(value) else value,
            "answer": excerpt(record.get("response")),
            "error": excerpt(record.get("error")),
        }
