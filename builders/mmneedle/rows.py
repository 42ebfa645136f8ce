"""MMNeedle's row: its columns (`features`) and how a planned sample becomes one (`make_row`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from datasets import Features, List, Value

from builders.core import contract
from builders.core.images import EncodedImage
from builders.core.tokens import TextTokenCounter
from builders.mmneedle.configs import NeedleConfig
from builders.mmneedle.images import TILE_SIZE
from builders.mmneedle.plan import Pool, RowPlan, all_locations
from builders.mmneedle.prompts import (
    canonical_answer,
    official_instruction,
    paper_instruction,
    with_placeholders,
)


def features(image_storage: str = contract.EMBEDDED) -> Features:
    """The columns of every MMNeedle config, in order; `images` only when the rows embed them."""
    c = contract.row_features(image_storage)
    columns: dict[str, Any] = {
        "id": c[contract.ID],
        "sample_id": Value("int32"),
        "M": Value("int32"),
        "N": Value("int32"),
        "K": Value("int32"),
        "is_positive": Value("bool"),
        "in_paper_subset": Value("bool"),
    }
    if contract.IMAGES in c:
        columns[contract.IMAGES] = c[contract.IMAGES]
    columns.update({
        "image_sha256": c[contract.IMAGE_SHA256],
        "image_sizes": c[contract.IMAGE_SIZES],
        "num_images": c[contract.NUM_IMAGES],
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
        "text_tokens": c[contract.TEXT_TOKENS],
        "image_tokens": c[contract.IMAGE_TOKENS],
    })
    return Features(columns)


FEATURES = features(contract.EMBEDDED)


def image_tokens_per_image(cfg: NeedleConfig) -> int:
    size = cfg.N * TILE_SIZE
    return contract.image_tokens(size, size)


def make_row(cfg: NeedleConfig, plan: RowPlan, pool: Pool, images: Sequence[EncodedImage], captions: list[str],
             counter: TextTokenCounter, embed_images: bool, negative_start: int) -> dict[str, Any]:
    """One row; `captions` are the K needles' captions, `images` the haystack's encoded images."""
    grids = [list(pool.tiles(key)) for key in plan.haystack]
    instruction = official_instruction(cfg.M, cfg.N, captions)
    row: dict[str, Any] = {
        "id": f"{cfg.name}-{plan.sample_id:05d}",
        "sample_id": plan.sample_id,
        "M": cfg.M,
        "N": cfg.N,
        "K": cfg.K,
        "is_positive": plan.positive,
        "in_paper_subset": cfg.in_paper_subset(plan.sample_id, negative_start),
    }
    if embed_images:
        row["images"] = [{"bytes": image.data, "path": f"{key}.jpg"} for image, key in zip(images, plan.haystack, strict=True)]
    row.update({
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
        "all_locations": [all_locations(name, grids, cfg.N) if plan.positive else [] for name in plan.needle_files],
        "haystack_ids": list(plan.haystack),
        "haystack_subimages": grids,
        "text_tokens": counter.count(instruction),
        "image_tokens": [image_tokens_per_image(cfg)] * cfg.M,
    })
    return row
