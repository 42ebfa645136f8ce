"""MileBench's rule for inputs longer than the model's context (`truncation:` of every MileBench task; the harness
calls it for each request that does not fit, `harness.inputs.truncation`).

The paper (§4): "we keep the instruction, and truncate the interleaved image-text question from left so as to
keep the question of a sample". The official `MileBenchDataset.__getitem__` (MileBench/MileBench @9583e1f) does it
so, and so does this hook, piece by piece on the row's figures:

- the budget is what the prompt may take, less the instruction's tokens (the instruction always stays);
- the context's text pieces (around its images) are walked from the end: a piece is kept if it fits what is
  left, then the image before it if that fits too (the last piece is the question and the choice list);
  the walk stops at the first piece or image that does not fit, so everything before it is dropped;
- if the question alone does not fit, only its tail is kept (the official code keeps its last tokens; here the
  tail is cut in proportion to its characters, since the model's tokenizer is not at hand) and no image;
- combined: the grid always goes first and is charged first; the context is one piece;
- the prompt is assembled as the official worker sends it (`official_prompt.final_prompt`: adjacent images on
  lines of their own).

Departures, all because the harness screens with the model's own count: the budget reserves `max_gen_toks` and
what the model counts beyond the rows' figures (the official budget is the context length less the instruction,
generation not reserved; its combined image is not charged); images cost what the model counts for each (the
official code charges one fixed `n_tokens_per_image`); a model with an image cap (`max_images`) stops the walk
at its cap too (the spec's recommendation for API models; the official code caps tokens only).
"""

from __future__ import annotations

import math
from typing import Any

from harness.inputs.truncation import Budget, Truncated
from tasks.milebench.official_prompt import final_prompt, pieces


def _tail(text: str, keep_tokens: int, tokens: int) -> str:
    """The end of `text` holding about `keep_tokens` of its `tokens` (in proportion to its characters)."""
    if keep_tokens <= 0 or not text:
        return ""
    return text[len(text) - math.floor(len(text) * min(1.0, keep_tokens / max(tokens, 1))) :]


def truncate_left(doc: dict[str, Any], budget: Budget) -> Truncated | None:
    instruction = doc["instruction"]
    combined = doc["mode"] == "combined"
    texts = pieces(doc)
    piece_tokens = list(doc["context_tokens"])
    if len(piece_tokens) != len(texts):
        raise ValueError(f"row {doc.get('id')!r}: {len(piece_tokens)} context_tokens for {len(texts)} text pieces")
    costs = list(budget.image_tokens)
    available = math.inf if budget.tokens is None else budget.tokens - int(doc["instruction_tokens"])
    if combined:
        available -= sum(costs)
    if available < 0 or (budget.max_images is not None and budget.max_images < (1 if combined else 0)):
        return None
    left = list(range(len(costs)))  # the images not yet walked past, popped from the end
    kept_pieces: list[str] = []
    kept_images: list[int] = []
    used = 0
    text_kept = 0
    starts_with_image = False
    question_cut = False
    for piece, tokens in zip(reversed(texts), reversed(piece_tokens), strict=True):
        if tokens + used > available:
            if not kept_pieces:  # the question alone is too long: its tail
                kept_pieces.insert(0, _tail(piece, int(available - used), tokens))
                text_kept += int(available - used)
                question_cut = True
            break
        starts_with_image = False
        kept_pieces.insert(0, piece)
        used += tokens
        text_kept += tokens
        if combined or not left:
            continue
        capped = budget.max_images is not None and len(kept_images) >= budget.max_images
        if capped or costs[left[-1]] + used > available:
            break
        starts_with_image = True
        kept_images.insert(0, left.pop())
        used += costs[kept_images[0]]
    prompt = final_prompt(instruction, kept_pieces, starts_with_image=starts_with_image, combined=combined)
    images = tuple(range(len(costs))) if combined else tuple(kept_images)
    record = {"context_tokens_dropped": sum(piece_tokens) - text_kept, "question_cut": question_cut}
    return Truncated(prompt, images, int(doc["instruction_tokens"]) + text_kept, record)
