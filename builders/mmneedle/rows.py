"""MMNeedle's row: its columns (`features`) and how a planned sample becomes one (`make_row`; the contract's columns
are filled as it is written, `builders.core.contract_rows`)."""

from __future__ import annotations

from typing import Any

from datasets import Features, List, Value

from builders.core import contract
from builders.core.contract_rows import IMAGE_COLUMNS, PROMPT_COLUMN, TOKEN_COLUMNS, row_features
from builders.mmneedle.configs import NeedleConfig
from builders.mmneedle.plan import Pool, RowPlan, all_locations
from builders.mmneedle.prompts import (
    canonical_answer,
    paper_instruction,
    with_placeholders,
)


def features(image_storage: str = contract.EMBEDDED) -> Features:
    """The columns of every MMNeedle config, in order; `images` only when the rows embed them."""
    return row_features(
        image_storage,
        {
            "sample_id": Value("int32"),
            "M": Value("int32"),
            "N": Value("int32"),
            "K": Value("int32"),
            "is_positive": Value("bool"),
            "in_paper_subset": Value("bool"),
        },
        IMAGE_COLUMNS,
        PROMPT_COLUMN,
        {
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
        },
        TOKEN_COLUMNS,
    )


FEATURES = features(contract.EMBEDDED)


def make_row(
    cfg: NeedleConfig, plan: RowPlan, pool: Pool, captions: list[str], instruction: str, negative_start: int
) -> dict[str, Any]:
    """One row's own columns (`id` and `prompt` among them); `captions` are the K needles' captions, `instruction`
    the official one they make."""
    grids = [list(pool.tiles(key)) for key in plan.haystack]
    return {
        "id": f"{cfg.name}-{plan.sample_id:05d}",
        "sample_id": plan.sample_id,
        "M": cfg.M,
        "N": cfg.N,
        "K": cfg.K,
        "is_positive": plan.positive,
        "in_paper_subset": cfg.in_paper_subset(plan.sample_id, negative_start),
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
    }
