"""Google's Gemini, at Google's OpenAI-compatible endpoint through the `openai` backend: Google's published image
rule for Gemini 2 (258 tokens an image, or per 768-px tile past 384 px), temperature left to the API's default (the
official wrapper passed its own default, 1.0). Known by their API names."""

from __future__ import annotations

import math
from collections.abc import Mapping

from harness.models.alias import Alias
from harness.models.families.family import ImageTokens, ModelFamily

GOOGLE = "https://generativelanguage.googleapis.com/v1beta/openai/"
RETIRED = "Google retired this preview snapshot; the alias runs only where an endpoint still serves it"


def image_tokens(width: int, height: int, settings: Mapping[str, object]) -> int:
    """Google's published rule for Gemini 2: 258 tokens for an image at most 384 px a side, else 258 per 768-px
    tile."""
    if width <= 384 and height <= 384:
        return 258
    return 258 * math.ceil(width / 768) * math.ceil(height / 768)


def _gemini(model: str, note: str) -> Alias:
    return Alias("openai", {"model": model, "base_url": GOOGLE, "send_temperature": "false"}, note, 1048576)


FAMILY = ModelFamily(
    "Gemini",
    variants=(
        ImageTokens(
            "Gemini",
            image_tokens,
            "Google's published rule, 258 tokens per image, or per 768-px tile past 384 px",
            fragments=("gemini",),
        ),
    ),
    aliases={
        "gemini-2.0-flash": _gemini("gemini-2.0-flash-001", "Gemini 2.0 Flash"),
        "gemini-2.0-flash-thinking": _gemini(
            "gemini-2.0-flash-thinking-exp-01-21", f"Gemini 2.0 Flash Thinking; {RETIRED}"
        ),
        "gemini-2.5-flash": _gemini("gemini-2.5-flash-preview-04-17", f"Gemini 2.5 Flash; {RETIRED}"),
        "gemini-2.5-pro": _gemini("gemini-2.5-pro-preview-03-25", f"Gemini 2.5 Pro; {RETIRED}"),
    },
)
