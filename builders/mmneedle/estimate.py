"""MMNeedle's build plan: the rows and images a build will make, and its size and time scaled from a few
stitched images made the way the build makes them (decode + resize each sub-image, stitch, JPEG-encode)."""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Callable

from builders.core import contract
from builders.core.estimate import WRITE_BYTES_PER_SECOND, BuildEstimate
from builders.core.images import FileJpegEncoder
from builders.mmneedle.configs import NeedleConfig
from builders.mmneedle.images import TILE_SIZE, stitch
from builders.mmneedle.plan import Planner
from builders.mmneedle.sources import CaptionedImageSource

ROW_BYTES = 1500  # a row without its images: prompts, captions, ids and lists (a shared-storage row, measured)
SAMPLE_TILES = 16  # sub-images to decode per grid size; at least one stitched image each


def estimate_build(
    source: CaptionedImageSource,
    planner: Planner,
    cfgs: list[NeedleConfig],
    ids: Callable[[NeedleConfig], list[int]],
    shown: list[tuple[int, str]],
    source_images: int,
    image_storage: str,
    num_proc: int,
    kept: int = 0,
) -> BuildEstimate:
    """`shown`: the (N, pool key) of every stitched image the build shows; `source_images`: how many
    sub-images it decodes."""
    per_grid = Counter(N for N, _ in shown)
    tile_seconds: list[float] = []
    stitch_seconds: dict[int, float] = {}
    image_bytes: dict[int, float] = {}
    encoder = FileJpegEncoder()
    made = 0
    try:
        for N in per_grid:
            keys = [key for n, key in shown if n == N]
            picks = max(1, min(4, SAMPLE_TILES // (N * N)))
            sample = [keys[i * len(keys) // picks] for i in range(min(picks, len(keys)))]
            seconds, sizes = 0.0, []
            made += len(sample)
            for key in sample:
                tiles = []
                for name in planner.pool(N).tiles(key):
                    clock = time.perf_counter()
                    tiles.append(source.load_tile(name, TILE_SIZE))
                    tile_seconds.append(time.perf_counter() - clock)
                clock = time.perf_counter()
                sizes.append(len(encoder.encode(stitch(tiles, N)).data))
                seconds += time.perf_counter() - clock
            stitch_seconds[N] = seconds / len(sample)
            image_bytes[N] = sum(sizes) / len(sizes)
    finally:
        encoder.close()
    rows = {cfg.name: len(ids(cfg)) for cfg in cfgs}
    if image_storage == contract.SHARED:
        images = sum(count * image_bytes[N] for N, count in per_grid.items())
    else:
        images = sum(rows[cfg.name] * cfg.M * image_bytes[cfg.N] for cfg in cfgs)
    num_bytes = images + ROW_BYTES * sum(rows.values())
    per_tile = statistics.median(tile_seconds) if tile_seconds else 0.0  # the first decodes pay one-off setup
    compute = source_images * per_tile + sum(count * stitch_seconds[N] for N, count in per_grid.items())
    seconds = compute / num_proc + num_bytes / WRITE_BYTES_PER_SECOND
    stitched = ", ".join(f"{count:,} of {N}x{N}" for N, count in sorted(per_grid.items()))
    work = f"{source_images:,} source images to decode, stitched images to encode: {stitched or 'none'}"
    basis = f"scaled from {made} stitched image(s) made now"
    return BuildEstimate([cfg.name for cfg in cfgs], sum(rows.values()), num_bytes, seconds, work, basis, kept)
