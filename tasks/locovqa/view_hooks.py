"""LoCoVQA's hooks for `harness view` (docs/viewing.md; the viewer reads them in the benchmark's declaration,
`benchmark.py`): the sample table's axes, the question image outlined in its context (a cell of the composed grid,
or one of the interleaved images), each task's source, mode and context length for the group pages, and which page a
row of the report's tables opens."""

from __future__ import annotations

from typing import Any

from harness.view.view_hooks_api import ViewHooks
from tasks.locovqa.series import LEAF, SERIES

# The sample table's axes (build columns).
SAMPLE_AXES = [
    ("task", "task"),
    ("mode", "mode"),
    ("length", "context_length"),
    ("needle depth", "needle_depth"),
    ("subset", "subset"),
]


def sample_marks(doc: dict[str, Any], response: Any) -> list[dict[str, Any]]:
    """The content images among the distractors (`content_positions`: the question's image, MNIST's digits, the
    needle): a cell of the grid in cmp mode (row-major, `grid_side` a side), a whole image in int mode."""
    positions = [p for p in doc.get("content_positions") or [] if isinstance(p, int) and p >= 0]
    grid_side = doc.get("grid_side")
    side = grid_side if isinstance(grid_side, int) else 0
    marks = []
    for position in positions:
        if doc.get("mode") == "cmp" and side > 0 and position < side * side:
            row, col = divmod(position, side)
            marks.append({"kind": "gold", "image": 0, "row": row + 1, "col": col + 1, "n": side})
        elif doc.get("mode") == "int":
            marks.append({"kind": "gold", "image": position, "row": 1, "col": 1, "n": 1})
    return [dict(mark, legend="question image") for mark in marks]


def task_axes(task: str) -> dict[str, str]:
    """A task's values on the axes across tasks (the group pages' filters and grids): source, mode, length."""
    found = LEAF.match(task)
    if found is None:
        return {}
    return {"source": found.group(1), "mode": found.group(2), "length": found.group(3)}


# A group's grid: accuracy (each task's headline metric) by context length, one row per source and mode.
GROUP_GRID = {"rows": ["source", "mode"], "columns": ["length"], "facets": []}
AXIS_ORDER = {"source": ["mmstar", "okvqa", "mnist", "needle"], "mode": ["cmp", "int"]}
_SOURCE_OF_ROW = {row: task for row, task, _, _ in SERIES}


def viewer_row(header: list[str], cells: list[str]) -> tuple[str, dict[str, str]] | None:
    """The page a row of the report's LoCoVQA tables opens: a series' source (and mode), or the task of an
    errors-table row (`task | mode | length`)."""
    if not cells or not header:
        return None
    label = cells[0].strip()
    if header[:3] == ["task", "mode", "length"] and len(cells) >= 3:
        task = f"locovqa_{label}_{cells[1].strip()}_{cells[2].strip()}"
        return (task, {}) if LEAF.match(task) else None
    source = _SOURCE_OF_ROW.get(label) or ("mnist" if label.startswith("Haystack-") else None)
    if header[0] != "series" or source is None:
        return None
    mode = cells[1].strip() if len(header) > 1 and header[1] == "mode" and len(cells) > 1 else ""
    return "locovqa", {"source": source, **({"mode": mode} if mode in ("cmp", "int") else {})}


VIEW_HOOKS = ViewHooks(
    sample_axes=SAMPLE_AXES,
    sample_marks=sample_marks,
    task_axes=task_axes,
    group_grid=GROUP_GRID,
    axis_order=AXIS_ORDER,
    viewer_row=viewer_row,
)
