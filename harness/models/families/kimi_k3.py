"""Kimi K3 (moonshotai/Kimi-K3, 2.8T MoE), Moonshot's current vision-language model, a family the papers never ran:
identified and estimated, with no alias, for the reason `UNAVAILABLE` gives.

Its image tokens are vLLM 0.33.0's count (`vllm/models/kimi_k3/common/mm_preprocess.py`: each
`<|kimi_image_placeholder|>` becomes `<|media_begin|>image {W}x{H}<|media_content|>`, then as many `<|media_pad|>`
as `KimiK25FusedVisionProcessor.media_tokens_calculator` counts, `transformers_utils/processors/
kimi_k25_vision_fused.py`: the image scaled down to at most `in_patch_limit` 14-px patches and `patch_limit_on_one_side`
a side, padded to 28-px cells, a token per cell; then `<|media_end|>`). The checkpoint's `media_proc_cfg` is in no
stored source: the estimate takes transformers' Kimi K2.5 image processor's defaults (`Kimi_K25ImageProcessor`:
16,384 patches, 512 a side, the same MoonViT preprocessing), and counts the text `image {W}x{H}` as about 4 tokens.
The template (`chat_template.jinja`, as llama.cpp keeps it, `models/templates/Kimi-K3.jinja`) thinks by default
(`thinking_effort` max) and writes both channels as XTML elements of special tokens.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from harness.models.facts.family import ImageTokens, ModelFamily, number

PATCH, MERGE = 14, 2
IN_PATCH_LIMIT, SIDE_LIMIT = 16384, 512  # Kimi_K25ImageProcessor's max_patches and size (transformers 5.20.2)
MARKERS = 3 + 4  # <|media_begin|>, <|media_content|>, <|media_end|>; about 4 tokens of "image WxH"

UNAVAILABLE = (
    "vLLM 0.33.0 registers KimiK3ForConditionalGeneration (transformers 5.20.2 has no kimi_k3), but Kimi K3 writes its "
    "thinking and its answer as XTML channels of special tokens (<|open|>think<|sep|>...<|close|>think<|sep|>"
    "<|open|>response<|sep|>..., vLLM's kimi_k3_reasoning_parser), and the vllm backend decodes an answer with "
    "skip_special_tokens=True (harness/models/shared/answer_text.py): the channel names are left in the text "
    "('...thinkresponse...'), where no reasoning tag can take the thinking out"
)


def image_tokens(width: int, height: int, settings: Mapping[str, object]) -> int:
    """vLLM's `navit_resize_image` (no fixed output): scaled down to the patch limits, padded to 28-px cells."""
    limit = number(settings.get("in_patch_limit") or IN_PATCH_LIMIT)
    side = number(settings.get("patch_limit_on_one_side") or SIDE_LIMIT)
    scale = min(1.0, math.sqrt(limit / (max(1, width // PATCH) * max(1, height // PATCH))))
    scale = min(scale, side * PATCH / width, side * PATCH / height)
    new_w = min(max(1, int(width * scale)), side * PATCH)
    new_h = min(max(1, int(height * scale)), side * PATCH)
    cell = PATCH * MERGE
    return math.ceil(new_h / cell) * math.ceil(new_w / cell) + MARKERS


FAMILY = ModelFamily(
    "Kimi K3",
    variants=(
        ImageTokens(
            "Kimi K3",
            image_tokens,
            "a token per 28-px cell (14-px patches merged 2x2, at most in_patch_limit patches, default 16,384, and 512 "
            "a side) + about 7 marker tokens per image",
            model_types=("kimi_k3",),
            architectures=("KimiK3ForConditionalGeneration",),
            fragments=("kimi-k3", "kimi_k3"),
        ),
    ),
    unavailable=UNAVAILABLE,
)
