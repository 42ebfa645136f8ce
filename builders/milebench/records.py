"""One release record -> a planned row: the record checked field by field, its prompt assembled for the
config's presentation (`prompts.assemble`), and the files its images come from. No image is read here.

A record that the official code could not evaluate is refused with a `BuildError` naming the file, the
record (its position and `sample_id`) and what was expected: a missing field, an instruction id outside the
instruction list, a multiple-choice gold that is not among its options (the official scorer asserts it), an
image count outside what the context places.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from builders.core.errors import BuildError
from builders.core.release_paths import relative_name
from builders.milebench.prompts import assemble
from builders.milebench.subsets import (
    COMBINED,
    MULTIPLE_CHOICE,
    NEEDLE,
    SUBSTRING,
    Config,
    image_quantity_level,
)

COMBINED_FIELD = "combined_1_images"  # `combine_images.py --max_img_num 1` writes this field and folder
COMBINED_FOLDER = "combined_1_images"


@dataclass
class PlannedRow:
    id: str
    sample_id: int
    instruction_id: int
    instruction: str
    context: str
    prompt: str
    question: str
    choices: list[str]
    answer: str
    answer_index: int  # multiple choice: the gold's option (the official `choice_list.index`); else -1
    source_images: list[str]  # every image of the record, `images/<path>` inside the subset folder
    images: list[str]  # the files shown, in prompt order (release files; for a built grid, its source images)
    combined_from_release: bool = False
    where: str = ""  # file and record, for messages
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def level(self) -> str:
        return image_quantity_level(len(self.source_images))


def check_meta(meta: Mapping[str, object], cfg: Config, where: str) -> list[str]:
    """The instruction list; the release's question type must send the subset to its Table 6 scorer."""
    instructions = meta.get("task_instruction")
    if not isinstance(instructions, list) or not instructions or not all(isinstance(i, str) for i in instructions):
        raise BuildError(f"{where}: meta_data.task_instruction must be a non-empty list of strings")
    question_type = meta.get("question_type")
    if cfg.subset.family in (NEEDLE, SUBSTRING):
        return instructions  # dispatched by name before the question type is looked at
    if question_type != cfg.subset.question_type:
        raise BuildError(
            f"{where}: meta_data.question_type is {question_type!r}; {cfg.subset.name} is scored by "
            f"{cfg.subset.family} (Table 6), which the official evaluate.py reaches only with "
            f"{cfg.subset.question_type!r}"
        )
    return instructions


def _field(record: Mapping[str, object], name: str, kind: type | tuple[type, ...], what: str, where: str) -> Any:
    value = record.get(name)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise BuildError(f"{where}: '{name}' must be {what}, got {value!r}"[:400])
    return value


def _answer_index(cfg: Config, answer: str, options: list[str] | None, gold_index: Any, where: str) -> int:
    """The gold option's index for a multiple-choice subset (`gold_index`, the official rule); -1 for the others."""
    if cfg.subset.family != MULTIPLE_CHOICE:
        return -1
    if options is None:
        raise BuildError(f"{where}: a multiple-choice record needs task_instance.choice_list")
    index = gold_index(answer, options)
    if index is None:
        raise BuildError(
            f"{where}: the gold answer {answer!r} is not among its options {options!r} (the "
            "official scorer asserts it is)"[:600]
        )
    return int(index)


def plan_record(
    record: Any, position: int, cfg: Config, instructions: Sequence[str], file: str, gold_index: Any
) -> PlannedRow:
    """`gold_index(answer, choices)` gives the official gold option index, or None when it is absent."""
    sample = record.get("sample_id") if isinstance(record, Mapping) else None
    where = f"{file} record {position} (sample_id {sample!r})"
    if not isinstance(record, Mapping):
        raise BuildError(f"{file} record {position}: expected an object, got {type(record).__name__}")
    sample_id = _field(record, "sample_id", int, "an integer", where)
    instruction_id = _field(record, "task_instruction_id", int, "an integer", where)
    if not 0 <= instruction_id < len(instructions):
        raise BuildError(
            f"{where}: task_instruction_id {instruction_id} is outside meta_data.task_instruction "
            f"(0..{len(instructions) - 1})"
        )
    instance = _field(record, "task_instance", dict, "an object", where)
    context = _field(instance, "context", str, "a string", where)
    paths = _field(instance, "images_path", list, "a list of image paths", where)
    if not paths or not all(isinstance(p, str) and p for p in paths):
        raise BuildError(f"{where}: task_instance.images_path must list at least one image path")
    if "response" not in record or record["response"] is None:
        raise BuildError(f"{where}: 'response' (the gold answer) is missing")
    answer = str(record["response"])
    choices = instance.get("choice_list")
    if choices is not None and (
        not isinstance(choices, list) or not all(isinstance(c, str | int | float) for c in choices)
    ):
        raise BuildError(f"{where}: task_instance.choice_list must be a list of options")
    options = [str(c) for c in choices] if choices is not None else None
    answer_index = _answer_index(cfg, answer, options, gold_index, where)
    combined = cfg.mode == COMBINED
    assembled = assemble(
        instructions[instruction_id],
        context,
        options,
        len(paths),
        lettered=cfg.subset.lettered,
        combined=combined,
        where=where,
    )
    # Paths are joined to the subset's `images/` folder, as the official `os.path.join(img_dir, p)` does, and must
    # stay inside it (that join would take an absolute path, or `../`, anywhere on the machine).
    source = [f"images/{relative_name(p, f'{where}: task_instance.images_path')}" for p in paths]
    row = PlannedRow(
        id=f"{cfg.subset.name}/{sample_id}",
        sample_id=sample_id,
        instruction_id=instruction_id,
        instruction=assembled.instruction,
        context=assembled.context,
        prompt=assembled.prompt,
        question=assembled.question,
        choices=options or [],
        answer=answer,
        answer_index=answer_index,
        source_images=source,
        images=[source[i] for i in assembled.images],
        where=where,
    )
    if combined:
        released = instance.get(COMBINED_FIELD)
        if released is not None:
            if not isinstance(released, list) or len(released) != 1 or not isinstance(released[0], str):
                raise BuildError(
                    f"{where}: {COMBINED_FIELD} must name exactly one image (the official code supports "
                    f"one combined image per sample), got {released!r}"[:400]
                )
            row.images = [f"{COMBINED_FOLDER}/{relative_name(released[0], f'{where}: {COMBINED_FIELD}')}"]
            row.combined_from_release = True
        else:
            row.images = list(source)  # the grid is built from them
    return row


def plan_file(annotation: Mapping[str, Any], cfg: Config, file: str, gold_index: Any) -> list[PlannedRow]:
    """Every record of one annotation file, in file order; sample ids must be unique."""
    instructions = check_meta(annotation["meta_data"], cfg, f"{file} meta_data")
    if not annotation["data"]:
        raise BuildError(f"{file}: 'data' holds no records (config {cfg.name} reads it)")
    rows = [plan_record(record, i, cfg, instructions, file, gold_index) for i, record in enumerate(annotation["data"])]
    seen: dict[int, str] = {}
    for row in rows:
        if row.sample_id in seen:
            raise BuildError(f"{row.where}: sample_id {row.sample_id} repeats {seen[row.sample_id]}")
        seen[row.sample_id] = row.where
    return rows
