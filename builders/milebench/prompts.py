"""The prompt of one release record, assembled as the official `MileBenchDataset.__getitem__` assembles it
(MileBench/MileBench `utils.py` @9583e1f) before any truncation:

1. the instruction is `meta_data.task_instruction[task_instruction_id]`;
2. a record with a `choice_list` key gets `"\\nChoice list: \\n"`, one option per line (`"A. "`, `"B. "`, ...
   before each, except GPR1200's, which has more options than letters) and `"\\nYour answer is: "`;
3. interleaved: `{image#i}` and `{table#i}` for i = 1..n (n = the record's images) become an image; combined:
   they become `<Image i> ` (trailing space), and the one combined image goes first;
4. interleaved: the context is cut at its images and rebuilt from the end, each text piece followed by the
   next image from the end of the list (`raw_img_list.pop(-1)`). With as many images as places this is the
   context unchanged; with more images than places, the images before the last (places + 1) are dropped and
   one more stands before the context (`image_start`); with fewer images than places the official prompt
   names images it does not send, which this builder refuses;
5. interleaved: `instruction + "\\n" + context`; combined: `"<image>\\n" + instruction + "\\n" + context`.

Step 4 with an unlimited budget is the official left truncation keeping everything; the harness applies the
same walk with the model's budget (`tasks/milebench/truncation.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from builders.core.contract import IMAGE_PLACEHOLDER
from builders.core.errors import BuildError


def choice_block(choices: Sequence[str], lettered: bool) -> str:
    lines = [(f"{chr(65 + i)}. " if lettered else "") + str(choice) for i, choice in enumerate(choices)]
    return "\nChoice list: \n" + "\n".join(lines) + "\nYour answer is: "


def replace_references(context: str, count: int, replacement: str | None) -> str:
    """`{image#i}` / `{table#i}` for i = 1..count replaced by `replacement`, or by `<Image i> ` when None."""
    for i in range(1, count + 1):
        new = replacement if replacement is not None else f"<Image {i}> "
        context = context.replace(f"{{image#{i}}}", new).replace(f"{{table#{i}}}", new)
    return context


@dataclass(frozen=True)
class Assembled:
    instruction: str
    context: str  # what follows the instruction: `<image>` per image (interleaved) or `<Image i>` references
    prompt: str  # the whole user message, `<image>` marking each image in order
    images: tuple[int, ...]  # indices into the record's `images_path` of the images sent, in prompt order
    question: str  # the context after its last image (the question and the choice list): what truncation keeps


def assemble(
    instruction: str,
    context: str,
    choices: Sequence[str] | None,
    num_images: int,
    *,
    lettered: bool,
    combined: bool,
    where: str,
) -> Assembled:
    """The official prompt of one record (see the module doc); `where` names the record in errors."""
    if IMAGE_PLACEHOLDER in context or IMAGE_PLACEHOLDER in instruction:
        raise BuildError(
            f"{where}: the text holds {IMAGE_PLACEHOLDER!r} literally, which this dataset's prompts use to mark images"
        )
    if choices is not None:
        context += choice_block(choices, lettered)
    pieces = replace_references(context, num_images, IMAGE_PLACEHOLDER).split(IMAGE_PLACEHOLDER)
    if combined:
        text = replace_references(context, num_images, None)
        prompt = f"{IMAGE_PLACEHOLDER}\n{instruction}\n{text}"
        return Assembled(instruction, text, prompt, (), pieces[-1])
    places = len(pieces) - 1
    if places > num_images:
        raise BuildError(
            f"{where}: the context places {places} images but images_path lists {num_images}; the "
            "official prompt would name images it does not send"
        )
    kept = min(num_images, places + 1)  # one image follows each text piece, walking from the end
    text = IMAGE_PLACEHOLDER.join(pieces)
    if kept > places:  # an image left over after the first piece: it stands before the context
        text = IMAGE_PLACEHOLDER + text
    return Assembled(
        instruction, text, f"{instruction}\n{text}", tuple(range(num_images - kept, num_images)), pieces[-1]
    )


def segments(context: str) -> list[str]:
    """The text pieces of an interleaved context around its images (one more than the images)."""
    return context.split(IMAGE_PLACEHOLDER)
