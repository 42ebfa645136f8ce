"""MileBench's row: its columns and how a planned row becomes one."""

from __future__ import annotations

from typing import Any

from datasets import Features, List, Value

from builders.core import contract
from builders.core.contract_rows import IMAGE_COLUMNS, PROMPT_COLUMN, TOKEN_COLUMNS, row_features
from builders.core.tokens import TextTokenCounter
from builders.milebench.prompts import segments
from builders.milebench.records import PlannedRow
from builders.milebench.subsets import COMBINED, Config


def features(image_storage: str = contract.SHARED) -> Features:
    """The columns of every MileBench config; `images` only when the rows embed them."""
    return row_features(
        image_storage,
        {
            "sample_id": Value("int32"),
            "subset": Value("string"),  # the release's name, e.g. CLEVR-Change
            "task_id": Value("string"),  # T-1 ... I-1 (Table 2's columns)
            "category": Value("string"),  # Realistic Temporal | Realistic Semantic | Diagnostic
            "mode": Value("string"),  # interleaved | combined
            "split": Value("string"),  # test | adv
            "metric": Value("string"),  # multiple_choice | rouge_l | needle | substring (the official dispatch)
            "instruction_id": Value("int32"),
            "instruction": Value("string"),
            "context": Value("string"),
        },  # what follows the instruction; `<image>` per image (interleaved)
        PROMPT_COLUMN,  # the official user message before truncation; `<image>` marks each image
        {
            "question": Value("string"),  # the context after its last image: the question and the choice list
            "choices": List(Value("string")),  # the release's choice_list ([] without one)
            "answer": Value("string"),  # the gold (`response`)
            "answer_index": Value("int32"),  # multiple choice: the gold's option (0-based); else -1
            "image_quantity_level": Value("string"),  # Few | Medium | Many, from the record's image count
            "source_num_images": Value("int32"),  # the record's images (images_path)
            "combined_image": Value("string"),  # combined rows: "release" (the authors' grid) or "built"; else ""
            "instruction_tokens": Value("int32"),  # tokens of the instruction, by the build's text counter
            "context_tokens": List(Value("int32")),
        },  # tokens of each text piece of `context` around its images
        IMAGE_COLUMNS,
        TOKEN_COLUMNS,
    )


def make_row(cfg: Config, plan: PlannedRow, counter: TextTokenCounter, combined_image: str = "") -> dict[str, Any]:
    """One row's own columns (`id` and `prompt` among them)."""
    subset = cfg.subset
    return {
        "id": plan.id,
        "sample_id": plan.sample_id,
        "subset": subset.name,
        "task_id": subset.task_id,
        "category": subset.category,
        "mode": cfg.mode,
        "split": cfg.split,
        "metric": subset.family,
        "instruction_id": plan.instruction_id,
        "instruction": plan.instruction,
        "context": plan.context,
        "prompt": plan.prompt,
        "question": plan.question,
        "choices": plan.choices,
        "answer": plan.answer,
        "answer_index": plan.answer_index,
        "image_quantity_level": plan.level,
        "source_num_images": len(plan.source_images),
        "combined_image": combined_image if cfg.mode == COMBINED else "",
        "instruction_tokens": counter.count(plan.instruction),
        "context_tokens": [counter.count(piece) for piece in segments(plan.context)],
    }
