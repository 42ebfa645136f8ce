"""Build MMNeedle configs into a Hub-shaped dataset folder (`OUT/mmneedle`).

Stages, each over the union of all requested configs:
1. plan every row (cheap, no pixels) to learn which stitched pool images are shown;
2. decode + resize each source image those pool images need, once (tile store);
3. stitch + encode each needed pool image, once (encoded store): its bytes are then reused by
   every row and config that shows it (or, with shared image storage, written once to the image table);
4. write each config's rows in sample-id order, re-planning each row (plans are pure functions),
   into sharded Parquet; then `DatasetBuild` writes the card and manifest and moves the folder into place.
Stages 2 and 3 run on `num_proc` worker threads.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from functools import cached_property
from pathlib import Path
from typing import Any

from datasets import Features
from PIL import Image
from tqdm import tqdm

from builders.core import contract
from builders.core.benchmark_build import BenchmarkBuild, OpenedSource
from builders.core.dataset_build import BuilderInfo, DatasetBuild
from builders.core.errors import BuildError
from builders.core.estimate import BuildEstimate
from builders.core.hub_source import is_hub_source
from builders.core.images import JPEG_SETTINGS, EncodedImage, FileJpegEncoder
from builders.core.options import BuildOptions
from builders.core.parallel import run_parallel
from builders.core.parquet_writer import ConfigResult
from builders.core.store import BudgetedStore, TileStore, encoded_store
from builders.mmneedle.configs import CONFIGS, NeedleConfig, parse_configs
from builders.mmneedle.estimate import estimate_build
from builders.mmneedle.images import TILE_SIZE, stitch
from builders.mmneedle.official import OfficialMetadata, OfficialPlanner, hub_metadata
from builders.mmneedle.options import MMNeedleOptions
from builders.mmneedle.plan import Planner, RegeneratePlanner
from builders.mmneedle.prompts import official_instruction
from builders.mmneedle.rows import features, make_row
from builders.mmneedle.sources import CaptionedImageSource, open_source

BUILDER_VERSION = "1.1.0"  # 1.1: K > 1 positives follow the official sampler (distinct slots, not images)
logger = logging.getLogger(__name__)
INFO = BuilderInfo(
    name="mmneedle",
    module="builders.mmneedle",
    version=BUILDER_VERSION,
    card={  # the licence comes from the source (`CaptionedImageSource.card_licence`)
        "pretty_name": "MMNeedle",
        "language": ["en"],
        "task_categories": ["visual-question-answering"],
        "tags": ["multimodal", "long-context", "needle-in-a-haystack", "mmlongeval"],
    },
)


def build_mmneedle(
    source: str | CaptionedImageSource | None = None,
    out_dir: str | os.PathLike[str] = "data",
    configs: list[str] | None = None,
    **options: Any,
) -> Path | None:
    """Build the requested configs (default: all 21) into `out_dir/mmneedle` and return that path.

    `source`: "synthetic" (None: the default), "synthetic:COUNT", "coco=DIR" or a source object. `options`: the
    fields of `MMNeedleOptions` (`official_metadata`: the authors' `metadata_stitched/` folder, which needs a COCO
    source; rows per config: the paper's evaluated subset, all 10,000 with `full`, at most `limit` per polarity)
    and of `BuildOptions` (`image_storage`: "embedded", each row holds its images, or "shared", each pool image once;
    the same build already in `out_dir` gets the missing configs added unless `overwrite`; `command`: the
    `builders build` argv to record; with `progress` or `dry_run` the plan goes to stderr first, and `dry_run`
    stops there and returns None).
    """
    if source is not None:
        options["source"] = source
    return MMNeedleBuild.build(out_dir, configs, **options)


class MMNeedleBuild(BenchmarkBuild[MMNeedleOptions]):
    """MMNeedle's parts: a captioned image source, a planner (regenerated, or the authors' metadata), and the
    stages of the module's docstring."""

    info = INFO
    Options = MMNeedleOptions
    config_order = list(CONFIGS)
    default_image_storage = contract.EMBEDDED  # what `load_dataset(repo, "m10_n4_k1")` users expect
    parallel = True
    uses_work_folder = False  # its spills live in the staging folder

    def __init__(
        self, options: MMNeedleOptions, configs: list[str] | None = None, run: BuildOptions | None = None
    ) -> None:
        super().__init__(options, configs, run)
        self.cfgs = parse_configs(self.asked_configs)  # requested

    def features(self, image_storage: str) -> Features:
        return features(image_storage)

    def needs_work_folder(self) -> bool:
        """A work folder (inside --out) for the official metadata taken out of the Hub release's zip."""
        return is_hub_source(self.options.official_metadata)

    def open_source(self, work: Path | None) -> OpenedSource:
        source = self.options.source
        self.src = (
            open_source(source, self.options.seed, self.options.min_image_coverage)
            if isinstance(source, str)
            else source
        )
        metadata = self.options.official_metadata
        inputs: dict[str, Any] = {
            "source": self.src.spec,
            "official_metadata": str(metadata) if metadata is not None else None,
        }
        folder = metadata
        if is_hub_source(metadata) and self.src.kind == "coco":
            assert work is not None
            folder, fetched = hub_metadata(str(metadata), self.cfgs, work, self.progress)
            inputs["hub"] = fetched.record()
        self.planner, self.official_files = _planner(self.src, self.cfgs, folder, self.options.seed)
        return OpenedSource(inputs, card=dict(self.src.card_licence))

    def request(self) -> dict[str, Any]:
        return {
            "mode": self.planner.mode,
            "seed": self.options.seed,
            "source": self.src.describe(),
            "official_metadata": self.official_files,
            "configs": [cfg.name for cfg in self.cfgs],
            "rows": "full" if self.options.full else "paper",
            "limit": self.options.limit,
            "strip_captions": self.options.strip_captions,
            "text_tokenizer": self.counter.name,
            "images": {"tile_size": TILE_SIZE, "resize": "bicubic, aspect not preserved", "jpeg": JPEG_SETTINGS},
        }

    def card_context(self) -> dict[str, Any]:
        return {"licence": self.src.licence_note}

    def held_configs(self, build: DatasetBuild) -> list[str]:
        return [cfg.name for cfg in self.cfgs]  # those asked for, as MMNeedle's plan has always named them

    def plan(self, build: DatasetBuild) -> None:
        # Over every config the folder will hold, those carried over included.
        build.caveats = _caveats(
            self.src,
            self.planner,
            [CONFIGS[name] for name in build.request["configs"]],
            self.options.full,
            self.options.limit,
        )
        self.pending = [cfg for cfg in self.cfgs if cfg.name in build.pending]
        fewer = _fewer_than_asked(self.planner, self.cfgs, self.options.full, self.options.limit)
        if fewer:
            print(fewer, file=sys.stderr)

    @cached_property
    def _shown(self) -> tuple[list[tuple[int, str]], list[str]]:
        """The (N, key) of every pool image the rows show, and the source images those need."""
        clock = time.perf_counter()
        shown = self._shown_pool_images()
        tiles_needed = sorted({name for N, key in shown for name in self.planner.pool(N).tiles(key)})
        _log_stage("plan", clock, f"{len(shown)} pool images, {len(tiles_needed)} source images")
        return shown, tiles_needed

    def estimate(self, kept: int) -> BuildEstimate:
        shown, tiles_needed = self._shown
        return estimate_build(
            self.src,
            self.planner,
            self.pending,
            self._ids,
            shown,
            len(tiles_needed),
            self.image_storage,
            self.workers,
            kept,
        )

    def write(self, build: DatasetBuild) -> dict[str, Any]:
        assert build.staging is not None, "run inside the DatasetBuild"
        self.staging = build.staging
        memory_budget = self.options.memory_budget_mb * 1024 * 1024
        shown, tiles_needed = self._shown
        clock = time.perf_counter()
        # Tiles are read many times in random order: memory, up to the budget (then a spill file).
        tiles = TileStore(self.staging / ".tiles.spill", memory_budget)
        # Each encoded image is written once and read once per row that shows it: straight to a spool
        # file (page cache), so memory does not grow with the number of stitched images.
        encoded = encoded_store(self.staging / ".images.spool", 0)
        try:
            self._decode(tiles_needed, tiles)
            clock = _log_stage("decode+resize", clock, f"{tiles.spilled_bytes} bytes spilled")
            self._stitch(shown, tiles, encoded)
            clock = _log_stage("stitch+encode", clock, f"{encoded.spilled_bytes} bytes spilled")
            tiles.close()
            results = self._write(build, encoded)
            _log_stage("write", clock, f"{sum(r.num_bytes for r in results)} bytes")
        finally:
            tiles.close()
            encoded.close()
        return {
            "source_images_decoded": len(tiles_needed),
            "stitched_images_encoded": {
                f"{N}x{N}": sum(1 for n, _ in shown if n == N) for N in sorted({n for n, _ in shown})
            },
        }

    def _shown_pool_images(self) -> list[tuple[int, str]]:
        shown: set[tuple[int, str]] = set()
        for cfg in self.pending:
            for sample_id in self._ids(cfg):
                shown.update((cfg.N, key) for key in self.planner.plan(cfg, sample_id).haystack)
        return sorted(shown)

    def _ids(self, cfg: NeedleConfig) -> list[int]:
        return cfg.sample_ids(
            self.options.full, self.options.limit, self.planner.negative_start(cfg), self.planner.sample_end(cfg)
        )

    def _decode(self, names: list[str], tiles: TileStore) -> None:
        run_parallel(
            names,
            lambda name: tiles.put(name, self.src.load_tile(name, TILE_SIZE)),
            self.workers,
            "decode+resize source images",
            "img",
            self.progress,
            chunk=16,
        )

    def _stitch(self, shown: list[tuple[int, str]], tiles: TileStore, encoded: BudgetedStore[EncodedImage]) -> None:
        workspace = threading.local()  # per worker thread: JPEG encoder, canvases, scratch tile

        def stitch_one(item: tuple[int, str]) -> None:
            N, key = item
            if not hasattr(workspace, "encoder"):
                workspace.encoder, workspace.canvases = FileJpegEncoder(), {}
                workspace.scratch = Image.new("RGB", (TILE_SIZE, TILE_SIZE))
            grid = (tiles.get_into(name, workspace.scratch) for name in self.planner.pool(N).tiles(key))
            image = stitch(grid, N, canvas=workspace.canvases.get(N))
            if N > 1:
                workspace.canvases[N] = image
            encoded.put(item, workspace.encoder.encode(image))

        run_parallel(shown, stitch_one, self.workers, "stitch+encode pool images", "img", self.progress, chunk=2)

    def _write(self, build: DatasetBuild, encoded: BudgetedStore[EncodedImage]) -> list[ConfigResult]:
        total = sum(len(self._ids(cfg)) for cfg in self.pending)
        results = []
        with tqdm(total=total, desc="write rows", unit="row", disable=not self.progress, dynamic_ncols=True) as bar:
            for cfg in self.pending:
                result = self._write_config(build, cfg, encoded, bar)
                split = self.planner.negative_start(cfg)
                positives = sum(1 for i in self._ids(cfg) if i < split)
                build.add_config(
                    result,
                    {
                        "M": cfg.M,
                        "N": cfg.N,
                        "K": cfg.K,
                        "positives": positives,
                        "negatives": result.num_rows - positives,
                    },
                )
                results.append(result)
        return results

    def _write_config(
        self, build: DatasetBuild, cfg: NeedleConfig, encoded: BudgetedStore[EncodedImage], bar: tqdm
    ) -> ConfigResult:
        pool = self.planner.pool(cfg.N)
        with self.rows(build, cfg.name) as writer:
            bar.set_description(f"write {cfg.name}")
            for sample_id in self._ids(cfg):
                plan = self.planner.plan(cfg, sample_id)
                captions = [self.src.caption(name) for name in plan.needle_files]
                if self.options.strip_captions:
                    captions = [caption.strip() for caption in captions]
                instruction = official_instruction(cfg.M, cfg.N, captions)
                row = make_row(cfg, plan, pool, captions, instruction, self.planner.negative_start(cfg))
                writer.write(
                    row,
                    [encoded.get((cfg.N, key)) for key in plan.haystack],
                    [f"{key}.jpg" for key in plan.haystack],
                    counted_text=instruction,
                    other_bytes=1024,
                )
                bar.update(1)
            return writer.close()


def _fewer_than_asked(planner: Planner, cfgs: list[NeedleConfig], full: bool, limit: int | None) -> str | None:
    """One line when `--limit L` asks more positives and negatives per config than the build takes: the paper's
    subset without `--full` (1,000 or 100 of each), or all there are with it; None when every config has L + L."""
    if limit is None:
        return None
    counts: dict[tuple[int, int], list[str]] = {}
    more = False
    for cfg in cfgs:
        start, end = planner.negative_start(cfg), planner.sample_end(cfg)
        ids = cfg.sample_ids(full, limit, start, end)
        positives = sum(1 for i in ids if i < start)
        if min(positives, len(ids) - positives) < limit:
            counts.setdefault((positives, len(ids) - positives), []).append(cfg.name)
            more = more or len(cfg.sample_ids(True, limit, start, end)) > len(ids)
    if not counts:
        return None
    held = "; ".join(f"{', '.join(names)} {p:,} + {n:,}" for (p, n), names in counts.items())
    asked = f"note: --limit {limit} asks for {limit:,} positives + {limit:,} negatives per config"
    if more:  # without --full: the paper's subset
        return f"{asked}, and without --full the build keeps to the paper's subset: {held}; add --full for up to {limit:,} + {limit:,}"
    return f"{asked}; there are only {held}, all built"


def _caveats(
    src: CaptionedImageSource, planner: Planner, cfgs: list[NeedleConfig], full: bool, limit: int | None
) -> dict[str, str]:
    """Why numbers on this build are not comparable with the paper's (recorded in the manifest and the card,
    said by `builders push` and `harness report`)."""
    caveats = {}
    if src.kind == "synthetic":
        caveats["synthetic"] = (
            f"synthetic images and captions drawn by the builder (source `{src.spec}`), "
            "not MS COCO: scores are not comparable with the paper's"
        )
    short = [
        cfg.name
        for cfg in cfgs
        if len(cfg.sample_ids(full, limit, planner.negative_start(cfg), planner.sample_end(cfg))) < 2 * cfg.paper_count
    ]
    if short:
        cap = f"`--limit {limit}`" if limit is not None else "official metadata with fewer samples"
        which = "every config" if len(short) == len(cfgs) else f"configs {', '.join(short)}"
        caveats["limited"] = (
            f"fewer rows than the paper evaluated ({cap}; {which}): scores are not comparable with the paper's"
        )
    return caveats


def _planner(
    src: CaptionedImageSource, cfgs: list[NeedleConfig], official_metadata: str | os.PathLike[str] | None, seed: int
) -> tuple[Planner, dict[str, str] | None]:
    """The planner for the build's mode, and the official metadata files' fingerprints (official mode)."""
    if official_metadata is not None:
        if src.kind != "coco":
            raise BuildError("--official-metadata needs --source coco=DIR (the COCO val2014 images the metadata names)")
        metadata = OfficialMetadata(official_metadata)
        return OfficialPlanner(metadata), metadata.fingerprint(cfgs)
    for cfg in cfgs:
        needed = cfg.min_source_images()
        if len(src) < needed:
            raise BuildError(
                f"source {src.spec} has {len(src)} images; config {cfg.name} needs at least {needed} "
                f"(a haystack of {cfg.M}x{cfg.N}x{cfg.N} = {cfg.slots} sub-images plus {cfg.K} negative needle(s) outside it)"
            )
    return RegeneratePlanner(src.names, seed), None


def _log_stage(stage: str, since: float, detail: str) -> float:
    now = time.perf_counter()
    logger.info("stage %s: %.2f s (%s)", stage, now - since, detail)
    return now
