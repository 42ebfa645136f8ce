"""Anthropic's Claude, at Anthropic's OpenAI-compatible endpoint through the `openai` backend (as the official
`openai_model.py` reaches it): Anthropic's published image rule (at most 1,568 px a side and about 1.15 megapixels,
then a token per 750 px), the images a request its API takes. Known by their API names."""

from __future__ import annotations

import math
from collections.abc import Mapping

from harness.models.alias import Alias
from harness.models.families.family import ImageTokens, ModelFamily

ANTHROPIC = "https://api.anthropic.com/v1/"


def image_tokens(width: int, height: int, settings: Mapping[str, object]) -> int:
    """Anthropic's published rule: the image scaled to at most 1,568 px a side and about 1.15 megapixels, then one
    token per 750 px."""
    scale = min(1.0, 1568 / max(width, height), math.sqrt(1_150_000 / (width * height)))
    return math.ceil(int(width * scale) * int(height * scale) / 750)


FAMILY = ModelFamily(
    "Claude",
    variants=(
        ImageTokens(
            "Claude",
            image_tokens,
            "Anthropic's published rule, width x height / 750 at most 1,568 px a side",
            fragments=("claude",),
        ),
    ),
    aliases={
        "claude-3.7-sonnet": Alias(
            "openai",
            {"model": "claude-3-7-sonnet-20250219", "base_url": ANTHROPIC, "max_images": "100"},
            "Claude 3.7 Sonnet at Anthropic's OpenAI-compatible endpoint, as openai_model.py reaches it (an Anthropic "
            "key as api_key=... or OPENAI_API_KEY)",
            200000,
        ),
        "claude-3-opus": Alias(
            "openai",
            {"model": "claude-3-opus-20240229", "base_url": ANTHROPIC, "max_images": "20"},
            "Claude 3 Opus at Anthropic's OpenAI-compatible endpoint (20 images a request); Anthropic has deprecated "
            "the snapshot",
            200000,
        ),
    },
)
