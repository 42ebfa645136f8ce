"""MMNeedle's hooks for `harness view` (docs/viewing.md; the viewer reads them in the benchmark's declaration,
`benchmark.py`): the sample table's axes, the heat maps whose cells open their samples, the needle cells outlined on
the stitched images, each task's place on M, N, K and the set for the group pages, and which page a row of the
report's tables opens."""

from __future__ import annotations

import re
from typing import Any

from harness.view.view_hooks_api import ViewHooks
from tasks.mmneedle.task_names import config_of

# `harness view`: the sample table's axes (build columns), and which results breakdown each axis indexes, so that a
# cell of the heat map opens the samples whose needle lies in it.
SAMPLE_AXES = [
    ("M", "M"),
    ("N", "N"),
    ("K", "K"),
    ("depth", "needle_index"),
    ("row", "needle_row"),
    ("col", "needle_col"),
]
SAMPLE_CELLS = {"exact_acc_by_cell": "cell", "exact_acc_by_depth": "depth"}
_GUESS = re.compile(r"(\d+)\s*,\s*(\d+)\s*,\s*(\d+)")


def _needles(values: object) -> list[int]:
    return [int(v) for v in (values if isinstance(values, list) else [values]) if isinstance(v, int) and v > 0]


def sample_axes(task: str, columns: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """M, N, K; each needle's depth (image index m), row, column and cell "row,col" (a negative has none)."""
    depth, rows, cols = (columns.get(c, []) for c in ("needle_index", "needle_row", "needle_col"))
    cells = [
        [f"{r},{c}" for r, c in zip(_needles(rs), _needles(cs), strict=False)]
        for rs, cs in zip(rows, cols, strict=True)
    ]
    return {
        "M": columns.get("M", []),
        "N": columns.get("N", []),
        "K": columns.get("K", []),
        "depth": [_needles(d) for d in depth],
        "cell": cells,
        "row": [_needles(r) for r in rows],
        "col": [_needles(c) for c in cols],
    }


def sample_marks(doc: dict[str, Any], response: Any) -> list[dict[str, Any]]:
    """The cells to outline on the stitched images: each needle's (gold) and each "m, r, c" the answer names
    (guess), with the image (0-based), row and column (1-based) and the grid's N."""
    n, m = int(doc.get("N") or 1), int(doc.get("M") or 1)
    marks = [
        {"kind": "gold", "image": i - 1, "row": r, "col": c, "n": n}
        for i, r, c in zip(
            _needles(doc.get("needle_index")),
            _needles(doc.get("needle_row")),
            _needles(doc.get("needle_col")),
            strict=False,
        )
    ]
    for index, row, col in (tuple(int(x) for x in found) for found in _GUESS.findall(str(response or ""))):
        if 1 <= index <= m and 1 <= row <= n and 1 <= col <= n:
            marks.append({"kind": "guess", "image": index - 1, "row": row, "col": col, "n": n})
    return marks


def task_axes(task: str) -> dict[str, str]:
    """A task's values on the axes across tasks (the group pages' filters and grids): M, N, K and the set."""
    config = config_of(task)
    if config is None:
        return {}
    m, n, k, kind = config
    return {"M": str(m), "N": str(n), "K": str(k), "set": "positives" if kind == "pos" else "negatives"}


# A group's grid: M down, N across (the paper's stitching), one grid per K and set, each task's headline metric
# (exact accuracy of positives, existence accuracy of negatives).
GROUP_GRID = {"rows": ["M"], "columns": ["N"], "facets": ["K", "set"]}
AXIS_ORDER = {"set": ["positives", "negatives"]}
_CONFIG_ROW = re.compile(r"M=(\d+) N=(\d+) K=(\d+)")


def viewer_row(header: list[str], cells: list[str]) -> tuple[str, dict[str, str]] | None:
    """The page a row of the report's MMNeedle tables opens: a config's samples (positives and negatives)."""
    found = _CONFIG_ROW.fullmatch(cells[0].strip()) if cells else None
    if found is None:
        return None
    return "mmneedle", dict(zip(("M", "N", "K"), found.groups(), strict=True))


VIEW_HOOKS = ViewHooks(
    sample_axes=SAMPLE_AXES,
    sample_axes_of=sample_axes,
    sample_cells=SAMPLE_CELLS,
    sample_marks=sample_marks,
    task_axes=task_axes,
    group_grid=GROUP_GRID,
    axis_order=AXIS_ORDER,
    viewer_row=viewer_row,
)
