"""One MM-NIAH record as the release stores it (README, *Data Format*), checked, and the official model input
built from it (`utils/tools.py::get_input`, as `eval_internvl.py` calls it).

The official input: options follow the question as `\\nA. text` lines (retrieval-image) or `\\nA. <image>` lines
whose images are appended to the record's images (reasoning-image), then "Answer with the option's letter from the
given choices directly."; every other task ends "Answer the question using a single word or phrase.". The user
message is `f"{context}\\n{question}"`, each `<image>` replaced by the next image in order.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from builders.core import contract
from builders.core.errors import BuildError

OPTION_INSTRUCTION = "\nAnswer with the option's letter from the given choices directly."
OPEN_INSTRUCTION = "\nAnswer the question using a single word or phrase."


class Meta(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    placed_depth: float | int | list[float | int]
    context_length: int
    context_length_text: int | None = None
    context_length_image: int | None = None
    num_images: int | None = None
    needles: list[str] | None = None
    choices: list[str] | None = None
    choices_image_path: list[str] | None = None


class Record(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    id: int
    images_list: list[str]
    context: str
    question: str
    answer: str | int | list[Any] | None = None  # absent from the test split, whose answers are private
    meta: Meta


def parse_record(line: bytes, where: str) -> Record:
    """One line of an annotation file; a malformed one is a `BuildError` naming the file and line."""
    try:
        return Record.model_validate(json.loads(line))
    except (ValueError, ValidationError) as exc:
        first = str(exc).splitlines()[:3]
        raise BuildError(f"{where}: not an MM-NIAH record ({' '.join(first)})") from None
    except RecursionError:  # brackets nested past the JSON parser's depth
        raise BuildError(f"{where}: not an MM-NIAH record (nested past the JSON parser's depth)") from None


def official_input(record: Record, where: str) -> tuple[str, list[str]]:
    """The question as `get_input` returns it and the images in prompt order (context, question, then the
    option images), with its checks: the placeholders match the images, and a record has text or image options,
    never both."""
    images = list(record.images_list)
    question = record.question
    meta = record.meta
    placeholders = record.context.count(contract.IMAGE_PLACEHOLDER) + question.count(contract.IMAGE_PLACEHOLDER)
    if placeholders != len(images):
        raise BuildError(f"{where}: {placeholders} <image> placeholders, but images_list names {len(images)} images")
    if meta.choices is not None and meta.choices_image_path is not None:
        raise BuildError(f"{where}: both choices and choices_image_path are set; the official code takes one")
    if meta.choices:
        for index, choice in enumerate(meta.choices):
            question = f"{question}\n{chr(index + ord('A'))}. {choice}"
        question += OPTION_INSTRUCTION
    elif meta.choices_image_path:
        for index, path in enumerate(meta.choices_image_path):
            question = f"{question}\n{chr(index + ord('A'))}. {contract.IMAGE_PLACEHOLDER}"
            images.append(path)
        question += OPTION_INSTRUCTION
    else:  # counting (a list answer) and retrieval/reasoning-text take the same instruction
        question += OPEN_INSTRUCTION
    return question, images


def prompt(record: Record, question: str) -> str:
    """`qs = f'{context}\\n{question}'` (`eval_internvl.py`)."""
    return f"{record.context}\n{question}"


def depths(record: Record) -> list[float]:
    """`placed_depth` as a list (one needle: a one-item list); the scorer averages it as the official code does."""
    depth = record.meta.placed_depth
    return [float(d) for d in depth] if isinstance(depth, list) else [float(depth)]


def haystack_key(record: Record) -> str:
    """Which document a record's haystack is: the context with its text needles taken out and its images' names.
    An image needle is pasted into an image, so its haystack's images differ from the plain document's: rows
    with image needles group with those sharing their (edited) images only."""
    context = record.context
    for needle in record.meta.needles or []:
        if needle and needle in context:
            context = context.replace(needle, "")
    text = " ".join(context.split()) + "\0" + "\0".join(record.images_list)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def answer_kind(record: Record, task: str) -> str:
    """How the official `is_correct` reads the answer: `choice` (an int), `list` (counting: a list or its JSON
    text), `open` (a string); `hidden` where the release holds none (the test split's answers are private)."""
    if record.answer is None:
        return "hidden"
    if task == "counting":
        return "list"
    if isinstance(record.answer, int):
        return "choice"
    if isinstance(record.answer, list):
        return "list"
    return "open"
