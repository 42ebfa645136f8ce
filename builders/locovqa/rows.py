"""LoCoVQA's row: its columns (one schema for every config) and how a plan becomes one."""

from __future__ import annotations

from typing import Any

from datasets import Features, List, Value

from builders.core import contract
from builders.core.contract_rows import IMAGE_COLUMNS, PROMPT_COLUMN, TOKEN_COLUMNS, row_features
from builders.locovqa.plan import RowPlan
from builders.locovqa.prompts import MNIST_QUESTION, NEEDLE_QUESTION, vqa_text, with_images


def features(image_storage: str = contract.SHARED) -> Features:
    return row_features(
        image_storage,
        {
            "task": Value("string"),
            "mode": Value("string"),
            "context_length": Value("int32"),
            "item_id": Value("string"),
        },
        IMAGE_COLUMNS,
        PROMPT_COLUMN,
        {
            "question": Value("string"),
            "answer": Value("string"),
            "answers": List(Value("string")),
            "choices": List(Value("string")),
            "subset": Value("string"),
            "digits": List(Value("int32")),
            "num_digits": Value("int32"),
            "content_positions": List(Value("int32")),
            "needle_depth": Value("float32"),
            "grid_side": Value("int32"),
            "cell_size": Value("int32"),
            "context_ids": List(Value("string")),
            "n_resamples": Value("int32"),
            "entity_lister": Value("string"),
        },
        TOKEN_COLUMNS,
    )


def question_text(plan: RowPlan) -> str:
    task, mode = plan.cfg.task, plan.cfg.mode
    if task == "mnist":
        return MNIST_QUESTION[mode]
    if task == "needle":
        return NEEDLE_QUESTION[mode]
    return vqa_text(plan.question)


def make_row(plan: RowPlan, images: int, text: str, cell_size: int, lister: str) -> dict[str, Any]:
    """One row's own columns (`id` and `prompt` among them); `images`: how many the model sees (one grid for cmp,
    the context for int), `text`: the question as `question_text` words it."""
    cfg = plan.cfg
    n = cfg.length
    return {
        "id": plan.row_id,
        "task": cfg.task,
        "mode": cfg.mode,
        "context_length": n,
        "item_id": plan.item_id,
        "prompt": with_images(images, text),
        "question": plan.question or text,
        "answer": plan.answer,
        "answers": plan.answers,
        "choices": plan.choices,
        "subset": plan.subset,
        "digits": plan.digits,
        "num_digits": len(plan.digits),
        "content_positions": plan.content_positions,
        "needle_depth": (plan.content_positions[0] / (n - 1) if n > 1 else 0.0) if cfg.task == "needle" else 0.0,
        "grid_side": cfg.grid_side if cfg.mode == "cmp" else 0,
        "cell_size": cell_size if cfg.mode == "cmp" else 0,
        "context_ids": plan.context,
        "n_resamples": plan.n_resamples,
        "entity_lister": lister if cfg.task in ("okvqa", "mmstar") else "",
    }
