"""MMLongBench's row: its columns and how a planned row becomes one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from datasets import Features, List, Value

from builders.core import contract
from builders.core.contract_rows import IMAGE_COLUMNS, PROMPT_COLUMN, TOKEN_COLUMNS, row_features
from builders.mmlongbench.leaves import DEPTHS, Config


def features(image_storage: str = contract.SHARED) -> Features:
    """The columns of every MMLongBench config; `images` only when the rows embed them."""
    return row_features(
        image_storage,
        {
            "source_id": Value("string"),  # the release's id; the depth/permutation rows of one example share it
            "eval_index": Value("int32"),  # the row's place in the official evaluation order of its file
            "category": Value("string"),
            "dataset": Value("string"),
            "length": Value("int32"),
        },  # the length label L in tokens (8192 ... 131072)
        PROMPT_COLUMN,  # the official user message; <image> marks each image in order
        {
            "answer_prefix": Value("string"),  # prefilled as the assistant turn, prepended to the output
            "max_new_tokens": Value("int32"),
            "answer": Value("string"),  # the gold as JSON, exactly as the official scorer receives it
            "answer_format": Value("string"),  # DocVQA: Integer, Float, String, List or None
            "needle": Value("string"),  # "depth", "permutation" or ""
            "needle_position": Value("int32"),  # which of the id's 6 depths / 3 permutations; -1 without
            "depth": Value("float32"),  # 0.0 (start) ... 1.0 (end) for single-needle rows, else null
            "doc_name": Value("string"),
            "answer_pages": List(Value("int32")),  # DocVQA: the answer's pages in the original document
            "claims": List(Value("string")),
        },  # summarization: the judge's atomic claims of the reference
        IMAGE_COLUMNS,
        TOKEN_COLUMNS,
    )


@dataclass
class PlannedRow:
    """A row before its images are read: what the official loader made of a release row."""

    id: str
    source_id: str
    eval_index: int
    prompt: str
    images: list[str]  # paths under mmlb_image/
    answer: str  # JSON
    answer_format: str = ""
    variant: int = -1
    extras: dict[str, Any] = field(default_factory=dict)
    where: str = ""  # the release line it came from (file:line and id), for errors

    def to_json(self) -> dict[str, Any]:
        return self.__dict__

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PlannedRow:
        return cls(**data)


def make_row(cfg: Config, plan: PlannedRow) -> dict[str, object]:
    """One row's own columns (`id` and `prompt` among them; the images are `plan.images`)."""
    leaf = cfg.leaf
    needle = leaf.needle if plan.variant >= 0 else ""
    return {
        "id": plan.id,
        "source_id": plan.source_id,
        "eval_index": plan.eval_index,
        "category": leaf.category,
        "dataset": leaf.dataset,
        "length": cfg.tokens,
        "prompt": plan.prompt,
        "answer_prefix": leaf.answer_prefix,
        "max_new_tokens": leaf.max_new_tokens,
        "answer": plan.answer,
        "answer_format": plan.answer_format,
        "needle": needle,
        "needle_position": plan.variant if needle else -1,
        "depth": DEPTHS[plan.variant] if needle == "depth" and plan.variant < len(DEPTHS) else None,
        "doc_name": plan.extras.get("doc_name", ""),
        "answer_pages": plan.extras.get("answer_pages", []),
        "claims": plan.extras.get("claims", []),
    }
