"""LoCoVQA's row: its columns (one schema for every config) and how a plan becomes one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from datasets import Features, List, Value

from builders.core import contract
from builders.core.images import EncodedImage
from builders.core.tokens import TextTokenCounter
from builders.locovqa.plan import RowPlan
from builders.locovqa.prompts import MNIST_QUESTION, NEEDLE_QUESTION, vqa_text, with_images


def features(image_storage: str = contract.SHARED) -> Features:
    c = contract.row_features(image_storage)
    columns: dict[str, Any] = {
        "id": c[contract.ID],
        "task": Value("string"),
        "mode": Value("string"),
        "context_length": Value("int32"),
        "item_id": Value("string"),
    }
    if contract.IMAGES in c:
        columns[contract.IMAGES] = c[contract.IMAGES]
    columns.update({
        "image_sha256": c[contract.IMAGE_SHA256],
        "image_sizes": c[contract.IMAGE_SIZES],
        "num_images": c[contract.NUM_IMAGES],
        "prompt": Value("string"),
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
        "text_tokens": c[contract.TEXT_TOKENS],
        "image_tokens": c[contract.IMAGE_TOKENS],
    })
    return Features(columns)


def question_text(plan: RowPlan) -> str:
    task, mode = plan.cfg.task, plan.cfg.mode
    if task == "mnist":
        return MNIST_QUESTION[mode]
    if task == "needle":
        return NEEDLE_QUESTION[mode]
    return vqa_text(plan.question)


def make_row(plan: RowPlan, images: Sequence[EncodedImage], cell_size: int, lister: str, counter: TextTokenCounter,
             embedded: Sequence[dict[str, Any]] | None) -> dict[str, Any]:
    """One row; `images` are what the model sees (one grid for cmp, the context for int), `embedded` their
    `{"bytes", "path"}` when the rows hold them."""
    cfg = plan.cfg
    text = question_text(plan)
    n = cfg.length
    row: dict[str, Any] = {"id": plan.row_id, "task": cfg.task, "mode": cfg.mode, "context_length": n,
                           "item_id": plan.item_id}
    if embedded is not None:
        row[contract.IMAGES] = list(embedded)
    row.update({
        "image_sha256": [im.sha256 for im in images],
        "image_sizes": [[im.width, im.height] for im in images],
        "num_images": len(images),
        "prompt": with_images(len(images), text),
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
        "text_tokens": counter.count(text),
        "image_tokens": [contract.image_tokens(im.width, im.height) for im in images],
    })
    return row
