"""MM-NIAH's hooks for `harness view` (docs/viewing.md): the sample table's axes (context-length bin, depth bin,
their heat-map cell), the heat map whose cells open their samples, each task's place on task, needle and split for
the group pages, and the order of those axes."""

from __future__ import annotations

from typing import Any

from harness.view.view_hooks_api import ViewHooks
from tasks.mm_niah.scoring import DEPTH_LABELS, LENGTH_LABELS, heat_cell
from tasks.mm_niah.utils import cell_label

SAMPLE_AXES = [("context length", "context_length"), ("depth", "placed_depth"), ("images", "num_images")]
SAMPLE_CELLS = {"acc_by_length_depth": "cell"}
AXIS_ORDER = {
    "task": ["retrieval", "counting", "reasoning"],
    "needle": ["text", "image"],
    "split": ["val", "test"],
    "length": ["<1k", *LENGTH_LABELS],
    "depth": list(DEPTH_LABELS),
}


def sample_axes_of(task: str, columns: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """Each sample's heat-map cell (`length|depth`, the breakdown's key), its length bin and its depth bin."""
    cells = [
        cell_label(*heat_cell(int(length), list(depths)))
        for length, depths in zip(columns.get("context_length", []), columns.get("placed_depth", []), strict=True)
    ]
    return {
        "context length": columns.get("context_length", []),
        "images": columns.get("num_images", []),
        "cell": cells,
        "length": [cell.split("|")[0] for cell in cells],
        "depth": [cell.split("|")[1] for cell in cells],
    }


def task_axes(task: str) -> dict[str, str]:
    """`mm_niah_{task}_{needle}_{split}` -> its task, needle and split."""
    parts = task.split("_")
    if len(parts) != 5 or parts[:2] != ["mm", "niah"]:
        return {}
    return {"task": parts[2], "needle": parts[3], "split": parts[4]}


# A split group's page: the three tasks down, text and image needles across (the paper's six tables).
GROUP_GRID = {"rows": ["task"], "columns": ["needle"], "facets": ["split"]}

VIEW_HOOKS = ViewHooks(
    sample_axes=SAMPLE_AXES,
    sample_axes_of=sample_axes_of,
    sample_cells=SAMPLE_CELLS,
    task_axes=task_axes,
    group_grid=GROUP_GRID,
    axis_order=AXIS_ORDER,
)
