"""MileBench's hooks for `harness view` (docs/viewing.md; the viewer reads them in the benchmark's declaration,
`benchmark.py`): the sample table's axes, each task's set, task id and subset for the group pages, and which page a
row of the report's tables opens."""

from __future__ import annotations

import re
from typing import Any

from builders.milebench.subsets import SUBSETS, TASK_IDS
from harness.view.view_hooks_api import ViewHooks

SETS = {"": "test", "_combined": "combined", "_adv": "adversarial"}  # task name suffix -> the set it runs
_BY_KEY = {subset.key: subset for subset in SUBSETS}
_BY_DISPLAY = {subset.display: subset for subset in SUBSETS} | {subset.name: subset for subset in SUBSETS}

# The sample table's axes (build columns, and the set the task's name says).
SAMPLE_AXES = [("subset", "subset"), ("task", "task_id"), ("level", "image_quantity_level"), ("images", "num_images")]


def _set_of(task: str) -> tuple[str, str]:
    """(the task name without its set's suffix, the set)."""
    for suffix, chosen in SETS.items():
        if suffix and task.endswith(suffix):
            return task[: -len(suffix)], chosen
    return task, SETS[""]


def sample_axes(task: str, columns: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """The build's columns, and the set: the test set, the Combined-image Set or the adversarial set."""
    rows = len(next(iter(columns.values()), []))
    chosen = _set_of(task)[1]
    return {"set": [chosen] * rows, **{label: columns.get(column, [None] * rows) for label, column in SAMPLE_AXES}}


def task_axes(task: str) -> dict[str, str]:
    """A task's values on the axes across tasks (the group pages' filters and grids): task id, subset, set."""
    base, chosen = _set_of(task)
    subset = _BY_KEY.get(base.removeprefix("milebench_"))
    if not base.startswith("milebench_") or subset is None:
        return {}
    return {"task id": subset.task_id, "subset": subset.display, "set": chosen}


# A group's grid: the paper's Table 2 task ids down, the sets across (each cell the mean of its subsets' scores).
GROUP_GRID = {"rows": ["task id"], "columns": ["set"], "facets": []}
AXIS_ORDER = {"task id": list(TASK_IDS), "set": list(SETS.values())}


def viewer_row(header: list[str], cells: list[str]) -> tuple[str, dict[str, str]] | None:
    """The page a row of the report's MileBench tables opens: a subset's samples in every set run (the per-subset
    table), or a set's (Table 2's `model (set)` rows, the image-count levels' `set` rows)."""
    if not cells or not header:
        return None
    label = cells[0].strip()
    subset = _BY_DISPLAY.get(label) if header[0] == "subset" else None
    if subset is not None:
        return "milebench_all", {"subset": subset.display}
    named = re.fullmatch(r".+ \((\w+)\)", label)
    chosen = named.group(1) if named and header[0] == "" else label if header[0].startswith("image-count") else None
    return ("milebench_all", {"set": chosen}) if chosen is not None and chosen in SETS.values() else None


VIEW_HOOKS = ViewHooks(
    sample_axes=SAMPLE_AXES,
    sample_axes_of=sample_axes,
    task_axes=task_axes,
    group_grid=GROUP_GRID,
    axis_order=AXIS_ORDER,
    viewer_row=viewer_row,
)
