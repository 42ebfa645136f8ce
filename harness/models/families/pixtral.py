"""Pixtral 12B (transformers' LLaVA conversion, the checkpoint MMLongBench ran): one token per 16-px patch at most
1,024 px a side, a break token per row; its chat as the official wrapper (`vlm_model/pixtral.py`) builds it, text
parts under the key `content` (which the checkpoint's own template reads), the prefix a string; its alias, full-size
images."""

from __future__ import annotations

import math
from collections.abc import Mapping

from harness.models.facts.alias import hf
from harness.models.facts.family import ImageTokens, ModelFamily
from harness.models.facts.prompt_style import PromptStyle


def image_tokens(width: int, height: int, settings: Mapping[str, object]) -> int:
    scale = min(1.0, 1024 / max(width, height))
    rows, cols = math.ceil(height * scale / 16), math.ceil(width * scale / 16)
    return rows * (cols + 1)  # a break token after each row of 16-px patches (the last one ends the image)


FAMILY = ModelFamily(
    "Pixtral",
    variants=(
        # Its config says `llava` (a LLaVA conversion): known by its checkpoint's name.
        ImageTokens(
            "Pixtral",
            image_tokens,
            "one token per 16-px patch at most 1,024 px a side, + one per row",
            fragments=("pixtral",),
        ),
    ),
    styles=(PromptStyle("pixtral", text_key="content", assistant_content="string"),),
    aliases={
        "pixtral": hf(
            "mistral-community/pixtral-12b",
            "Pixtral 12B (transformers' LLaVA conversion, the checkpoint the paper ran)",
            131072,
            prompt_style="pixtral",  # text parts under "content", which the checkpoint's own template reads
        ),
    },
)
