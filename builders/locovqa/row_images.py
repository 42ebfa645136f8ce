"""LoCoVQA's row images, each made once before any row is written (stages 1 and 2 of `build.py`).

cmp: each distinct context image is fitted into a cell (decoded at reduced JPEG scale), and each row's grid composed
and encoded, on worker threads; int: each distinct context image's bytes are read once (digits drawn once).
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from builders.core.images import EncodedImage, FileJpegEncoder
from builders.core.parallel import run_parallel
from builders.core.store import BudgetedStore, TileStore
from builders.locovqa.compose import compose
from builders.locovqa.plan import RowPlan
from builders.locovqa.sources import Sources


def make_row_images(
    plans: dict[str, list[RowPlan]],
    sources: Sources,
    cell_size: int,
    encoded: BudgetedStore[EncodedImage],
    cells: TileStore,
    workers: int,
    progress: bool,
) -> dict[str, int]:
    """Put every row's images into `encoded` (a cmp row's grid under its row id, an int row's images under their
    keys), fitting cells through `cells` (closed on return); what was made, counted for the manifest."""
    cmp_plans = [p for config_plans in plans.values() for p in config_plans if p.cfg.mode == "cmp"]
    int_keys = sorted(
        {k for config_plans in plans.values() for p in config_plans if p.cfg.mode == "int" for k in p.context}
    )
    cell_keys = sorted({k for p in cmp_plans for k in p.context})
    local = threading.local()

    def encoder() -> FileJpegEncoder:
        if not hasattr(local, "encoder"):
            local.encoder = FileJpegEncoder()
        return local.encoder

    # A cell shown by several grids is fitted once and kept (within the memory budget, spilled beyond it) until
    # its last grid is composed; a cell shown once (every digit of a transcription row) is fitted when its grid
    # is composed and kept nowhere: memory stays flat in rows instead of growing to the budget.
    uses = Counter(key for plan in cmp_plans for key in plan.context)
    shared = [key for key in cell_keys if uses[key] > 1]
    remaining, counting = dict(uses), threading.Lock()

    def cell(key: str) -> Any:
        if uses[key] == 1:
            return sources.cell(key, cell_size)
        image = cells.get(key)
        with counting:
            remaining[key] -= 1
            last = remaining[key] == 0
        if last:
            cells.discard(key)
        return image

    try:
        run_parallel(
            shared,
            lambda key: cells.put(key, sources.cell(key, cell_size)),
            workers,
            "fit images into cells",
            "img",
            progress,
            chunk=16,
        )

        def grid(plan: RowPlan) -> None:
            image = compose((cell(key) for key in plan.context), plan.cfg.grid_side, cell_size)
            encoded.put(plan.row_id, encoder().encode(image))

        run_parallel(cmp_plans, grid, workers, "compose grids", "grid", progress, chunk=2)
        cells.close()
        run_parallel(
            int_keys,
            lambda key: encoded.put(key, sources.original(key)),
            workers,
            "read interleaved images",
            "img",
            progress,
            chunk=16,
        )
    finally:
        cells.close()
    return {"cells_fitted": len(cell_keys), "grids_composed": len(cmp_plans), "interleaved_images": len(int_keys)}
