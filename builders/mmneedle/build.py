"""Build MMNeedle configs into a Hub-shaped dataset folder (`OUT/mmneedle`).

Stages, each over the union of all requested configs:
1. plan every row (cheap, no pixels) to learn which stitched pool images are shown;
2. decode + resize each source image those pool images need, once (tile store);
3. stitch + encode each needed pool image, once (encoded store): its bytes are then reused by
   every row and config that shows it;
4. write each config's rows in sample-id order, re-planning each row (plans are pure functions),
   into sharded Parquet; then the README and the manifest; then move the folder into place.
Stages 2 and 3 run on `num_proc` worker threads.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

from datasets import Features, List, Value
from datasets import Image as ImageFeature
from PIL import Image
from tqdm import tqdm

from builders.core.card import CardConfig, front_matter, render_card
from builders.core.errors import BuildError
from builders.core.images import JPEG_SETTINGS, TILE_SIZE, FileJpegEncoder, stitch
from builders.core.output import MANIFEST_FORMAT, StagedOutput, environment, write_manifest
from builders.core.parallel import run_parallel
from builders.core.sources import CaptionedImageSource, open_source
from builders.core.store import encoded_store, tile_store
from builders.core.tokens import TextTokenCounter, image_tokens, make_text_counter
from builders.core.writer import SHARD_BYTES, ConfigResult, ShardedParquetWriter
from builders.mmneedle.configs import NeedleConfig, parse_configs
from builders.mmneedle.official import OfficialMetadata, OfficialPlanner
from builders.mmneedle.plan import Planner, RegeneratePlanner, RowPlan, all_locations
from builders.mmneedle.prompts import (
    canonical_answer,
    official_instruction,
    paper_instruction,
    with_placeholders,
)

BUILDER_VERSION = "1.0.0"
logger = logging.getLogger(__name__)
DATASET_NAME = "mmneedle"
DEFAULT_MEMORY_BUDGET_MB = 4096

FEATURES = Features(
    {
        "id": Value("string"),
        "sample_id": Value("int32"),
        "M": Value("int32"),
        "N": Value("int32"),
        "K": Value("int32"),
        "is_positive": Value("bool"),
        "in_paper_subset": Value("bool"),
        "images": List(ImageFeature()),
        "image_sha256": List(Value("string")),
        "image_sizes": List(List(Value("int32"))),
        "num_images": Value("int32"),
        "prompt": Value("string"),
        "prompt_paper": Value("string"),
        "captions": List(Value("string")),
        "answer": Value("string"),
        "needle_index": List(Value("int32")),
        "needle_row": List(Value("int32")),
        "needle_col": List(Value("int32")),
        "needle_files": List(Value("string")),
        "all_locations": List(List(Value("string"))),
        "haystack_ids": List(Value("string")),
        "haystack_subimages": List(List(Value("string"))),
        "text_tokens": Value("int32"),
        "image_tokens": List(Value("int32")),
    }
)


def build_mmneedle(
    source: str | CaptionedImageSource = "synthetic",
    out_dir: str | os.PathLike[str] = "data",
    configs: list[str] | None = None,
    *,
    official_metadata: str | os.PathLike[str] | None = None,
    full: bool = False,
    limit: int | None = None,
    seed: int = 0,
    num_proc: int = 2,
    text_tokenizer: str = "approx",
    strip_captions: bool = False,
    overwrite: bool = False,
    progress: bool = False,
    memory_budget_mb: int = DEFAULT_MEMORY_BUDGET_MB,
    shard_bytes: int = SHARD_BYTES,
) -> Path:
    """Build the requested configs (default: all 21) into `out_dir/mmneedle` and return that path.

    `source`: "synthetic", "synthetic:COUNT", "coco=DIR" or a source object. `official_metadata`:
    the authors' `metadata_stitched/` folder (needs a COCO source). Rows per config: the paper's
    evaluated subset, all 10,000 with `full`, at most `limit` per polarity with `limit`.
    """
    cfgs = parse_configs(configs)
    if limit is not None and limit < 1:
        raise BuildError(f"--limit must be at least 1, got {limit}")
    if num_proc < 1:
        raise BuildError(f"--num-proc must be at least 1, got {num_proc}")
    if seed < 0:
        raise BuildError(f"--seed must be a non-negative integer, got {seed}")
    if memory_budget_mb < 0:
        raise BuildError(f"--memory-budget-mb must be at least 0, got {memory_budget_mb}")
    src = open_source(source, seed) if isinstance(source, str) else source
    counter = make_text_counter(text_tokenizer)

    planner: Planner
    official_files = None
    if official_metadata is not None:
        if src.kind != "coco":
            raise BuildError(
                "--official-metadata needs --source coco=DIR (the COCO val2014 images the metadata names)"
            )
        metadata = OfficialMetadata(official_metadata)
        official_files = metadata.fingerprint(cfgs)
        planner = OfficialPlanner(metadata)
    else:
        for cfg in cfgs:
            needed = cfg.min_source_images()
            if len(src) < needed:
                raise BuildError(
                    f"source {src.spec} has {len(src)} images; config {cfg.name} needs at least {needed} "
                    f"(a haystack of {cfg.M}x{cfg.N}x{cfg.N} = {cfg.slots} sub-images plus {cfg.K} negative needle(s) outside it)"
                )
        planner = RegeneratePlanner(src.names, seed)

    request = {
        "benchmark": DATASET_NAME,
        "builder_version": BUILDER_VERSION,
        "mode": planner.mode,
        "seed": seed,
        "source": src.describe(),
        "official_metadata": official_files,
        "configs": [cfg.name for cfg in cfgs],
        "rows": "full" if full else "paper",
        "limit": limit,
        "strip_captions": strip_captions,
        "text_tokenizer": counter.name,
        "images": {"tile_size": TILE_SIZE, "resize": "bicubic, aspect not preserved", "jpeg": JPEG_SETTINGS},
        "image_tokens": "qwen2-vl smart_resize, factor 28, min 56*56, max 28*28*16384 pixels",
    }
    request = json.loads(json.dumps(request))  # as it will read back from the manifest
    inputs = {
        "source": src.spec,
        "official_metadata": str(official_metadata) if official_metadata is not None else None,
    }
    staged = StagedOutput(Path(out_dir), DATASET_NAME, request, overwrite)
    with staged as staging:
        build = _Build(src, planner, cfgs, full, limit, counter, strip_captions, num_proc, progress, staging)
        results, stats = build.run(memory_budget_mb * 1024 * 1024, shard_bytes)
        manifest = _manifest(request, inputs, cfgs, results, stats)
        (staging / "README.md").write_text(_card(manifest, cfgs, results), encoding="utf-8")
        write_manifest(staging, manifest)  # last: a folder with a manifest is complete
        return staged.commit()


class _Build:
    def __init__(
        self,
        source: CaptionedImageSource,
        planner: Planner,
        cfgs: list[NeedleConfig],
        full: bool,
        limit: int | None,
        counter: TextTokenCounter,
        strip_captions: bool,
        num_proc: int,
        progress: bool,
        staging: Path,
    ) -> None:
        self.source = source
        self.planner = planner
        self.cfgs = cfgs
        self.full = full
        self.limit = limit
        self.counter = counter
        self.strip_captions = strip_captions
        self.num_proc = num_proc
        self.progress = progress
        self.staging = staging

    def run(self, memory_budget: int, shard_bytes: int) -> tuple[list[ConfigResult], dict[str, Any]]:
        clock = time.perf_counter()
        shown = self._shown_pool_images()
        tiles_needed = sorted({name for N, key in shown for name in self.planner.pool(N).tiles(key)})
        clock = _log_stage("plan", clock, f"{len(shown)} pool images, {len(tiles_needed)} source images")
        # Tiles are read many times in random order: memory, up to the budget (then a spill file).
        # Each encoded image is written once and read once per row that shows it: straight to a
        # spool file (page cache), so memory does not grow with the number of stitched images.
        tiles = tile_store(self.staging / ".tiles.spill", memory_budget)
        encoded = encoded_store(self.staging / ".images.spool", 0)
        try:
            run_parallel(
                tiles_needed,
                lambda name: tiles.put(name, self.source.load_tile(name, TILE_SIZE)),
                self.num_proc,
                "decode+resize source images",
                "img",
                self.progress,
                chunk=16,
            )
            clock = _log_stage("decode+resize", clock, f"{tiles.spilled_bytes} bytes spilled")

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

            run_parallel(
                shown, stitch_one, self.num_proc, "stitch+encode pool images", "img", self.progress, chunk=2
            )
            clock = _log_stage("stitch+encode", clock, f"{encoded.spilled_bytes} bytes spilled")
            stats = {
                "source_images_decoded": len(tiles_needed),
                "stitched_images_encoded": {
                    f"{N}x{N}": sum(1 for n, _ in shown if n == N) for N in sorted({n for n, _ in shown})
                },
            }
            tiles.close()
            total_rows = sum(len(cfg.sample_ids(self.full, self.limit)) for cfg in self.cfgs)
            with tqdm(
                total=total_rows, desc="write rows", unit="row", disable=not self.progress, dynamic_ncols=True
            ) as bar:
                results = [self._write_config(cfg, encoded, shard_bytes, bar) for cfg in self.cfgs]
            _log_stage("write", clock, f"{sum(r.num_bytes for r in results)} bytes")
        finally:
            tiles.close()
            encoded.close()
        return results, stats

    def _shown_pool_images(self) -> list[tuple[int, str]]:
        shown: set[tuple[int, str]] = set()
        for cfg in self.cfgs:
            for sample_id in cfg.sample_ids(self.full, self.limit):
                shown.update((cfg.N, key) for key in self.planner.plan(cfg, sample_id).haystack)
        return sorted(shown)

    def _write_config(self, cfg: NeedleConfig, encoded, shard_bytes: int, bar: tqdm) -> ConfigResult:  # noqa: ANN001
        ids = cfg.sample_ids(self.full, self.limit)
        pool = self.planner.pool(cfg.N)
        size = cfg.N * TILE_SIZE
        tokens_per_image = image_tokens(size, size)
        with ShardedParquetWriter(
            self.staging, cfg.name, FEATURES, _content_digest, shard_bytes=shard_bytes
        ) as writer:
            bar.set_description(f"write {cfg.name}")
            for sample_id in ids:
                plan = self.planner.plan(cfg, sample_id)
                images = [encoded.get((cfg.N, key)) for key in plan.haystack]
                row = self._row(cfg, plan, pool, images, tokens_per_image)
                writer.write(row, sum(len(image.data) for image in images) + 1024)
                bar.update(1)
            return writer.close()

    def _row(self, cfg: NeedleConfig, plan: RowPlan, pool, images, tokens_per_image: int) -> dict[str, Any]:  # noqa: ANN001
        grids = [list(pool.tiles(key)) for key in plan.haystack]
        captions = [self.source.caption(name) for name in plan.needle_files]
        if self.strip_captions:
            captions = [caption.strip() for caption in captions]
        instruction = official_instruction(cfg.M, cfg.N, captions)
        return {
            "id": f"{cfg.name}-{plan.sample_id:05d}",
            "sample_id": plan.sample_id,
            "M": cfg.M,
            "N": cfg.N,
            "K": cfg.K,
            "is_positive": plan.positive,
            "in_paper_subset": cfg.in_paper_subset(plan.sample_id),
            "images": [
                {"bytes": image.data, "path": f"{key}.jpg"}
                for image, key in zip(images, plan.haystack, strict=True)
            ],
            "image_sha256": [image.sha256 for image in images],
            "image_sizes": [[image.width, image.height] for image in images],
            "num_images": cfg.M,
            "prompt": with_placeholders(cfg.M, instruction),
            "prompt_paper": with_placeholders(cfg.M, paper_instruction(cfg.M, cfg.N, captions)),
            "captions": captions,
            "answer": canonical_answer(plan.locations),
            "needle_index": [m + 1 if m >= 0 else -1 for m, _, _ in plan.locations],
            "needle_row": [r + 1 if r >= 0 else -1 for _, r, _ in plan.locations],
            "needle_col": [c + 1 if c >= 0 else -1 for _, _, c in plan.locations],
            "needle_files": list(plan.needle_files),
            "all_locations": [
                all_locations(name, grids, cfg.N) if plan.positive else [] for name in plan.needle_files
            ],
            "haystack_ids": list(plan.haystack),
            "haystack_subimages": grids,
            "text_tokens": self.counter.count(instruction),
            "image_tokens": [tokens_per_image] * cfg.M,
        }


def _log_stage(stage: str, since: float, detail: str) -> float:
    now = time.perf_counter()
    logger.info("stage %s: %.2f s (%s)", stage, now - since, detail)
    return now


def _content_digest(row: dict[str, Any]) -> bytes:
    """A row's identity for the content hash: every column, images by their sha256 and path
    (the bytes themselves are already hashed in `image_sha256`)."""
    view = dict(row)
    view["images"] = [image["path"] for image in row["images"]]
    return json.dumps(view, sort_keys=True, ensure_ascii=False).encode("utf-8") + b"\n"


def _manifest(
    request: dict[str, Any],
    inputs: dict[str, Any],
    cfgs: list[NeedleConfig],
    results: list[ConfigResult],
    stats: dict[str, Any],
) -> dict[str, Any]:
    configs: dict[str, Any] = {}
    for cfg, result in zip(cfgs, results, strict=True):
        ids = cfg.sample_ids(request["rows"] == "full", request["limit"])
        positives = sum(1 for i in ids if i < 5000)
        configs[cfg.name] = {
            "M": cfg.M,
            "N": cfg.N,
            "K": cfg.K,
            "rows": result.num_rows,
            "positives": positives,
            "negatives": result.num_rows - positives,
            "num_bytes": result.num_bytes,
            "content_sha256": result.content_sha256,
            "files": [{"path": f.path, "num_bytes": f.num_bytes, "sha256": f.sha256} for f in result.files],
        }
    content = hashlib.sha256(
        json.dumps({n: c["content_sha256"] for n, c in configs.items()}, sort_keys=True).encode()
    )
    return {
        "format": MANIFEST_FORMAT,
        "benchmark": DATASET_NAME,
        "builder": "builders.mmneedle",
        "builder_version": BUILDER_VERSION,
        "content_hash": "sha256:" + content.hexdigest(),
        "request": request,
        "inputs": inputs,
        "environment": environment(),
        "stats": stats,
        "configs": configs,
    }


def _card(manifest: dict[str, Any], cfgs: list[NeedleConfig], results: list[ConfigResult]) -> str:
    yaml_text = front_matter(
        [CardConfig(r.name, FEATURES, r.num_rows, r.num_bytes) for r in results],
        license="cc-by-4.0",
        pretty_name="MMNeedle",
        language=["en"],
        task_categories=["visual-question-answering"],
        tags=["multimodal", "long-context", "needle-in-a-haystack", "mmlongeval"],
        size_categories=[_size_category(sum(r.num_rows for r in results))],
    )
    return render_card(DATASET_NAME, yaml_text, manifest=manifest, configs=manifest["configs"])


def _size_category(rows: int) -> str:
    for bound, label in (
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
    ):
        if rows < bound:
            return label
    return "1M<n<10M"
