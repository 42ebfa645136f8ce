"""The size a LoCoVQA build will take, measured on a few of its own images before the long stages.

Bytes per grid pixel and bytes per interleaved image differ tenfold between COCO photos and the drawn
stand-in (and with the cell size), so fixed rates misjudge one or the other: a few grids are composed and
encoded and a few interleaved images read, evenly spread over the plan, and the rest scaled from them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from PIL import Image

from builders.core.errors import BuildError
from builders.core.estimate import BuildEstimate, human_bytes
from builders.core.images import FileJpegEncoder
from builders.locovqa.compose import compose
from builders.locovqa.configs import LocoConfig
from builders.locovqa.plan import RowPlan

SAMPLE_GRIDS = 4
SAMPLE_IMAGES = 16
# Besides the images, as the synthetic build writes them: a row's own columns (ids, prompt, answers, token
# figures) ~85 bytes, a config's Parquet file ~14 kB at any size (schema and features), the card and manifest.
ROW_BYTES = 100
CONFIG_BYTES = 14_000
BUILD_BYTES = 20_000
# ~150 Mpx/s composed, encoded and written on a shared 2-core machine (bench/build_locovqa.py); ~2 ms to read and
# hash an interleaved image.
GRID_PIXELS_PER_SECOND = 150e6
IMAGE_SECONDS = 0.002
JPEG_MAX_SIDE = 65_500  # libjpeg's largest image side


def spread(items: Sequence[object], count: int) -> list[Any]:
    """At most `count` of `items`, evenly spaced (the first included): a sample that is the same every time."""
    if len(items) <= count:
        return list(items)
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]


def _grid_bytes_per_pixel(plans: Sequence[RowPlan], cell: Callable[[str, int], Any], cell_size: int) -> float:
    encoder = FileJpegEncoder()
    try:
        encoded = pixels = 0
        for plan in spread(plans, SAMPLE_GRIDS):
            image = compose((cell(key, cell_size) for key in plan.context), plan.cfg.grid_side, cell_size)
            encoded += len(encoder.encode(image).data)
            pixels += image.width * image.height
        return encoded / pixels
    finally:
        encoder.close()


# The build process before any image (Python, pyarrow, datasets, Pillow) ~195 MB resident, and ~3 kB per row
# (its plan, the spool's index): measured, bench/RESULTS.md "LoCoVQA build memory".
BASE_MEMORY = 195e6
ROW_MEMORY = 3_000


def grid_working_set(side: int, cell_size: int) -> float:
    """Memory one worker holds while it composes and encodes one grid: the canvas (Pillow keeps 4 bytes per RGB
    pixel) and about as much again for the encoder's buffers and the cells being pasted."""
    return 2 * 4 * float(side * cell_size) ** 2


def estimate_build(
    plans: dict[str, list[RowPlan]],
    cell: Callable[[str, int], Any],
    original: Callable[[str], Any],
    cell_size: int,
    kept: int,
    workers: int = 1,
    memory_budget: float = float("inf"),
) -> BuildEstimate:
    """`plans` per config; `cell(key, size)` and `original(key)` are the build's own image paths (the sources' cell
    fitting and interleaved bytes), so that the sample costs what the build will. The peak memory and temporary
    disk follow the write stage (`LocoVqaBuild.write`): cells shown by several grids kept within `memory_budget`
    and spilled beyond it, each worker's grid, and every encoded image spooled to disk until the configs are
    written."""
    rows = [plan for config in plans.values() for plan in config]
    grids = [plan for plan in rows if plan.cfg.mode == "cmp"]
    pixels = sum((plan.cfg.grid_side * cell_size) ** 2 for plan in grids)
    keys = sorted({key for plan in rows if plan.cfg.mode == "int" for key in plan.context})
    grid_bytes = pixels * _grid_bytes_per_pixel(grids, cell, cell_size) if grids else 0.0
    sample = spread(keys, SAMPLE_IMAGES)
    image_bytes = sum(len(original(key).data) for key in sample) / len(sample) * len(keys) if keys else 0.0
    size = grid_bytes + image_bytes + len(rows) * ROW_BYTES + len(plans) * CONFIG_BYTES + BUILD_BYTES
    seconds = 2 + pixels / GRID_PIXELS_PER_SECOND + len(keys) * IMAGE_SECONDS
    uses = Counter(key for plan in grids for key in plan.context)
    shared_cells = sum(1 for n in uses.values() if n > 1) * 4.0 * cell_size * cell_size
    largest = max((plan.cfg.grid_side for plan in grids), default=0)
    peak = (
        BASE_MEMORY
        + len(rows) * ROW_MEMORY
        + min(shared_cells, memory_budget)
        + min(workers, max(len(grids), 1)) * grid_working_set(largest, cell_size)
    )
    scratch = grid_bytes + image_bytes + max(0.0, shared_cells - memory_budget)
    return BuildEstimate(
        list(plans),
        len(rows),
        size,
        seconds,
        f"{pixels / 1e6:,.0f} Mpx of grids, {len(keys):,} distinct interleaved images",
        f"sizes measured on {min(len(grids), SAMPLE_GRIDS)} grid(s) and {len(sample)} image(s) of "
        "this build, rates in bench/build_locovqa.py",
        kept,
        peak_memory=peak,
        scratch_bytes=scratch,
    )


def check_grids(cfgs: list[LocoConfig], cell_size: int, workers: int, memory_budget_mb: int) -> None:
    """The largest grid the configs compose fits what Pillow opens without a decompression-bomb error and what JPEG
    holds (65,500 px a side), and the workers' grids fit the memory budget: refused before any work, in one line."""
    grids = [cfg for cfg in cfgs if cfg.mode == "cmp"]
    if not grids:
        return
    largest = max(grids, key=lambda cfg: cfg.grid_side)
    side = largest.grid_side * cell_size
    pillow_pixels = Image.MAX_IMAGE_PIXELS or JPEG_MAX_SIDE**2  # None: Pillow checks no size
    limit = min(JPEG_MAX_SIDE, math.isqrt(pillow_pixels))
    if side > limit:
        raise BuildError(
            f"--cell-size {cell_size}: the {largest.grid_side}x{largest.grid_side} grids of "
            f"{largest.name} would be {side:,} px square, over the {limit:,} px a grid may have (Pillow "
            f"opens at most {pillow_pixels:,} pixels, JPEG at most {JPEG_MAX_SIDE:,} px a side): "
            f"give --cell-size {limit // largest.grid_side} or less for these configs"
        )
    need = workers * grid_working_set(largest.grid_side, cell_size)
    if need > memory_budget_mb * 1e6:
        raise BuildError(
            f"--cell-size {cell_size}: composing the {side:,} px grids of {largest.name} on {workers} "
            f"worker(s) needs about {human_bytes(need)} of memory, over --memory-budget-mb "
            f"{memory_budget_mb}: lower --cell-size or --num-proc, or raise the budget"
        )
