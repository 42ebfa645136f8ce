"""MMLongBench's hooks for `harness view` (docs/viewing.md; the viewer reads them in the benchmark's declarations,
`benchmark.py`): the sample table's axes, the needle image outlined in a VH haystack, each task's category, dataset
and length for the group pages, and which page a row of the report's tables opens."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from harness.view.view_hooks_api import ViewHooks
from tasks.mmlongbench.aggregation import AVERAGE, CATEGORIES

# The sample table's axes (build columns).
SAMPLE_AXES = [
    ("category", "category"),
    ("dataset", "dataset"),
    ("length", "length"),
    ("depth", "depth"),
    ("needle position", "needle_position"),
    ("images", "num_images"),
]
# The rows a VH row's needle is found from: the same example at its other depths (or permutations).
SAMPLE_SIBLINGS = "source_id"


def sample_marks(
    doc: Mapping[str, object], response: object, siblings: Sequence[dict[str, Any]] = ()
) -> list[dict[str, Any]]:
    """VH's needle images outlined in the haystack. The release does not say which image is the needle (the one
    showing the question's anchor object); it is what moves between the example's rows: the image whose removal
    leaves each other depth's row the same list (VH-Single), else every image that changed place (VH-Multi's
    permutations)."""
    if not str(doc.get("dataset") or "").startswith("vh_"):
        return []
    mine = _hashes(doc)
    others = [theirs for s in siblings if (theirs := _hashes(s)) != mine and sorted(theirs) == sorted(mine)]
    if not others:
        return []
    moved = set(mine)
    for theirs in others:
        moved &= {x for x in set(mine) if _without(mine, x) == _without(theirs, x)}
    if not moved:  # no single image moves: the needles swapped places
        moved = {a for theirs in others for a, b in zip(mine, theirs, strict=True) if a != b}
    return [
        {"kind": "gold", "image": i, "row": 1, "col": 1, "n": 1, "legend": "needle image"}
        for i, sha in enumerate(mine)
        if sha in moved
    ]


def _hashes(doc: Mapping[str, object]) -> list[str]:
    values = doc.get("image_sha256")
    return [str(v) for v in values] if isinstance(values, list) else []


def _without(items: list[str], item: str) -> list[str]:
    return [x for x in items if x != item]


_LEAF = re.compile(
    r"mmlongbench_(?:(v1_1|vlmevalkit_as_paper|vlmevalkit)_)?(vrag|niah|icl|summ|docvqa|ablation)_(\w+)_(\d+[km])"
)
_CATEGORY = {name.lower(): name for name in CATEGORIES}


def task_axes(task: str) -> dict[str, str]:
    """A task's values on the axes across tasks (the group pages' filters and grids): category, dataset, length, and
    for another version than the paper's, which (`v1_1`, `vlmevalkit`, `vlmevalkit_as_paper`)."""
    found = _LEAF.fullmatch(task)
    if found is None:
        return {}
    category = _CATEGORY.get(found.group(2), found.group(2))
    axes = {"category": category, "dataset": found.group(3), "length": found.group(4)}
    return {**axes, "version": found.group(1)} if found.group(1) else axes


# A group's grid: the paper's length x category table, each cell the category's group at that length
# (`mmlongbench_niah_8k`: its datasets' mean with MM-NIAH's pairs averaged first, as the report's table reads it).
GROUP_GRID = {"rows": ["category"], "columns": ["length"], "facets": []}
# The ablation sets': one row per set, as the report's ablation table; each set is its own measurement, pooled with
# no other (a category row would hold five different sets, of no group of the results).
ABLATION_GRID = {"rows": ["dataset"], "columns": ["length"], "facets": []}
AXIS_ORDER = {"category": [*CATEGORIES, "ablation"]}


def viewer_row(header: list[str], cells: list[str]) -> tuple[str, dict[str, str]] | None:
    """The page a row of the report's MMLongBench tables opens: a category's or a dataset's samples at every
    length, or an ablation set's."""
    if not cells or not header:
        return None
    label = cells[0].strip()
    if header[0] == "category" and label in CATEGORIES:
        return "mmlongbench", {"category": label}
    if header[0] == "category" and label.startswith(AVERAGE):
        return "mmlongbench", {}
    if header[0] == "dataset" and re.fullmatch(r"\w+", label):
        return "mmlongbench", {"dataset": label}
    if header[0] == "ablation" and re.fullmatch(r"\w+", label):
        return "mmlongbench_ablation", {"dataset": label}
    return None


VIEW_HOOKS = ViewHooks(
    sample_axes=SAMPLE_AXES,
    sample_marks=sample_marks,
    sample_siblings=SAMPLE_SIBLINGS,
    task_axes=task_axes,
    group_grid=GROUP_GRID,
    axis_order=AXIS_ORDER,
    viewer_row=viewer_row,
)
# The ablation report's (`ablation_report`): its sets hold no VH rows, so no needle to find and no marks.
ABLATION_VIEW_HOOKS = ViewHooks(
    sample_axes=SAMPLE_AXES, task_axes=task_axes, group_grid=ABLATION_GRID, axis_order=AXIS_ORDER, viewer_row=viewer_row
)
