"""The last touches MileBench's official inference code gives a prompt (MileBench/MileBench @9583e1f), after the
builder's `prompt` and the left truncation:

- `MileBenchDataset.__getitem__` (`utils.py`) tokenizes every text piece of the context (the text around its
  images) with the model's tokenizer and decodes it again, truncated or not, before it joins the pieces; with a
  SentencePiece tokenizer this can change whitespace (a piece's leading space, for one). The instruction is
  joined as it is. `round_trip` (the task's `text_round_trip` hook) does the same where the harness has the
  model's tokenizer (`harness.inputs.round_trip`);
- the LLaVA worker (`workers/model_workers.py`, the only worker the repository ships) then puts two adjacent image
  markers on lines of their own, "for the special cases in CLEVR-Change": `<image><image>` becomes
  `<image>\\n<image>\\n` (`str.replace`, so three in a row become `<image>\\n<image>\\n<image>`).

`final_prompt` assembles a prompt from its kept pieces in that order: pieces (re-decoded or not), joined around
their images, the instruction before, then the worker's line breaks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from builders.core.contract import IMAGE_PLACEHOLDER

ADJACENT = IMAGE_PLACEHOLDER * 2


def worker_line_breaks(prompt: str) -> str:
    """The LLaVA worker's `question.replace('<ImageHere><ImageHere>', '<ImageHere>\\n<ImageHere>\\n')`."""
    return prompt.replace(ADJACENT, f"{IMAGE_PLACEHOLDER}\n{IMAGE_PLACEHOLDER}\n")


def final_prompt(instruction: str, pieces: Sequence[str], *, starts_with_image: bool, combined: bool) -> str:
    """The prompt the official worker sends: interleaved, the instruction, a newline, an image first when the walk
    kept one before its first piece, then the pieces around their images; combined, the grid, a newline, the
    instruction, a newline and the one piece."""
    context = IMAGE_PLACEHOLDER.join(pieces)
    if combined:
        return worker_line_breaks(f"{IMAGE_PLACEHOLDER}\n{instruction}\n{context}")
    return worker_line_breaks(f"{instruction}\n{IMAGE_PLACEHOLDER if starts_with_image else ''}{context}")


def pieces(doc: dict[str, Any]) -> list[str]:
    """The row's context text pieces: around its images (interleaved), or the whole context (combined)."""
    return [doc["context"]] if doc["mode"] == "combined" else doc["context"].split(IMAGE_PLACEHOLDER)


def doc_to_text(doc: dict[str, Any]) -> str:
    """The row's whole prompt (nothing truncated) as the official worker sends it."""
    return worker_line_breaks(doc["prompt"])


def _kept(doc: dict[str, Any], prompt: str) -> tuple[list[str], bool]:
    """Which of the row's pieces `prompt` holds, and whether an image opens its context: the prompt is the whole
    row (`doc_to_text`) or one the left truncation cut from it (`truncation.truncate_left`), so it holds the last
    pieces of the row, the first of them possibly only its tail (a question longer than the budget)."""
    instruction, combined, all_pieces = doc["instruction"], doc["mode"] == "combined", pieces(doc)
    images = prompt.count(IMAGE_PLACEHOLDER)
    shapes = [(False, 1)] if combined else [(False, images + 1), (True, images)]
    for starts_with_image, count in shapes:
        kept = all_pieces[len(all_pieces) - count :] if 1 <= count <= len(all_pieces) else None
        if (
            kept is not None
            and final_prompt(instruction, kept, starts_with_image=starts_with_image, combined=combined) == prompt
        ):
            return kept, starts_with_image
    head = final_prompt(instruction, [""], starts_with_image=False, combined=combined)
    if images == int(combined) and prompt.startswith(head) and all_pieces[-1].endswith(prompt[len(head) :]):
        return [prompt[len(head) :]], False
    raise ValueError(
        f"row {doc.get('id')!r}: the prompt is not one this task makes from the row (its context, "
        "whole or cut from the left)"
    )


def round_trip(doc: dict[str, Any], prompt: str, decode_encode: Callable[[str], str]) -> str:
    """`prompt` with every context piece it holds re-decoded by the model's tokenizer (`decode_encode`), the
    instruction and the worker's line breaks left as they are: the prompt the official code sends this model."""
    kept, starts_with_image = _kept(doc, prompt)
    return final_prompt(
        doc["instruction"],
        [decode_encode(piece) for piece in kept],
        starts_with_image=starts_with_image,
        combined=doc["mode"] == "combined",
    )
