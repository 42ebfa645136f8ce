"""MM-NIAH's hooks for `harness view` (docs/viewing.md): the sample table's axes (context-length bin, depth bin,
their heat-map cell), the heat map whose cells open their samples, each task's place on task, needle and split for
the group pages, and the order of those axes. A row's `score` is no score of its own (its heat-map cell and decision,
which the task's official score averages by cell): its page reads each row on `acc`, the official decision, and
names the three fields. A multiple-choice gold is shown as the option's letter a reply gives (the release holds its
index, counted from 0)."""

from __future__ import annotations

import json
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


def gold_shown(doc: dict[str, object], gold: str) -> str | None:
    """A multiple-choice row's gold as its letter (`1` is B: the official `ord(reply) - ord("a") == answer`), with
    the index the release holds; None for any other row (its gold as it is)."""
    if doc.get("answer_kind") != "choice":
        return None
    answer = json.loads(gold)
    choices, images = doc.get("choices"), doc.get("num_choice_images")
    options = (len(choices) if isinstance(choices, list) else 0) or (images if isinstance(images, int) else 0)
    if isinstance(answer, bool) or not isinstance(answer, int) or not 0 <= answer < max(options, 1):
        return None
    return f"{chr(ord('A') + answer)}  (the release's answer {answer}: options counted from 0)"


VIEW_HOOKS = ViewHooks(
    sample_axes=SAMPLE_AXES,
    sample_axes_of=sample_axes_of,
    sample_cells=SAMPLE_CELLS,
    task_axes=task_axes,
    group_grid=GROUP_GRID,
    axis_order=AXIS_ORDER,
    metric_fields={"score": ("length bin", "depth bin", "acc")},
    row_scores={"score": "acc"},
    gold_shown=gold_shown,
)
