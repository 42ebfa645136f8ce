"""Gemma 4 (E2B, E4B, 12B, 26B-A4B, 31B, instruction-tuned), a family the papers never ran: its image tokens (the image
scaled, up or down, keeping its shape, to the largest size of at most `max_soft_tokens` x 9 patches of 16 px whose
sides are whole 48-px cells, then pooled 3x3: about `max_soft_tokens` tokens, + `<|image>` ... `<image|>`), its chat
as its published template renders it, and its aliases on `hf` (`Gemma4ForConditionalGeneration`, and
`Gemma4UnifiedForConditionalGeneration`, transformers' class for google/gemma-4-12B-it; vLLM 0.33.0 registers both).

Sources. The rule is transformers 5.20.2's (`models/gemma4/image_processing_pil_gemma4.py`:
`get_aspect_ratio_preserving_size`, `Gemma4ImageProcessorPil._preprocess`, soft tokens = patches // 9; the processor
writes `boi_token`, that many `image_token`s and `eoi_token` for each image, `processing_gemma4.py`,
`replace_image_token`), with the image processor's defaults (`patch_size` 16, `max_soft_tokens` 280, one of 70, 140,
280, 560 and 1,120, `pooling_kernel_size` 3): the checkpoints' own `preprocessor_config.json` is in no stored source.
The template is the checkpoints' own, rendered as it is; the tests render google/gemma-4-31B-it's as llama.cpp keeps it
(`models/templates/google-gemma-4-31B-it.jinja`, its commit 3fc65063d, "better align to the updated official gemma4
template", #21704): `<bos>`, `<|turn>user\\n`, each image `<|image|>` in place, `<|turn>model\\n` to generate, and,
thinking being off unless `enable_thinking` (which no alias sets), an empty thought channel
(`<|channel>thought\\n<channel|>`) that the model answers after. The checkpoints and the context, 262,144 tokens (recorded,
never a limit), are xorbitsai/inference's registry's ("gemma-4" at 7ecec16). The template writes its BOS itself, as
Gemma 3's does (`bos="template"`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from harness.models.facts.alias import Alias, hf
from harness.models.facts.family import ImageTokens, ModelFamily, number
from harness.models.facts.prompt_style import PromptStyle

PATCH, POOL, MAX_SOFT_TOKENS = 16, 3, 280  # Gemma4ImageProcessor's defaults
MARKERS = 2  # boi_token, eoi_token
WINDOW = 262144


def image_tokens(width: int, height: int, settings: Mapping[str, object]) -> int:
    """transformers' `get_aspect_ratio_preserving_size`, then patches // 9; + the two markers."""
    max_patches = number(settings.get("max_soft_tokens") or MAX_SOFT_TOKENS) * POOL**2
    side = POOL * PATCH
    factor = math.sqrt(max_patches * PATCH**2 / (height * width))
    target_h, target_w = int(factor * height // side) * side, int(factor * width // side) * side
    longest = (max_patches // POOL**2) * side
    if target_h == 0:
        target_h, target_w = side, min(int(width // height) * side, longest)
    elif target_w == 0:
        target_w, target_h = side, min(int(height // width) * side, longest)
    return (target_h // PATCH) * (target_w // PATCH) // POOL**2 + MARKERS


def _gemma4(size: str) -> Alias:
    return hf(
        f"google/gemma-4-{size}-it", f"Gemma 4 {size} instruction-tuned, thinking off", WINDOW, prompt_style="gemma4"
    )


FAMILY = ModelFamily(
    "Gemma 4",
    variants=(
        ImageTokens(
            "Gemma 4",
            image_tokens,
            "the image scaled to at most max_soft_tokens (default 280) x 9 patches of 16 px, whole 48-px cells, pooled "
            "3x3: a token per cell + 2 markers",
            model_types=("gemma4", "gemma4_unified"),
            architectures=("Gemma4ForConditionalGeneration", "Gemma4UnifiedForConditionalGeneration"),
            fragments=("gemma-4", "gemma4"),
        ),
    ),
    styles=(PromptStyle("gemma4", bos="template"),),
    aliases={f"gemma4-{size.lower()}": _gemma4(size) for size in ("E2B", "E4B", "12B", "26B-A4B", "31B")},
)
