"""Anthropic's Claude: 3.7 Sonnet at Anthropic's OpenAI-compatible endpoint through the `openai` backend (as
MMLongBench's `openai_model.py:65-69` reached it), 3 Opus through the `anthropic` backend (Anthropic's SDK, as
MMNeedle's `needle.py:149-181` called it); Anthropic's published image rule (at most 1,568 px a side and about 1.15
megapixels, then a token per 750 px), the images a request its API takes; no seed (no official call sent one). Known
by their API names."""

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
            {"model": "claude-3-7-sonnet-20250219", "base_url": ANTHROPIC, "max_images": "100", "send_seed": "false"},
            "Claude 3.7 Sonnet at Anthropic's OpenAI-compatible endpoint, as openai_model.py reaches it (an Anthropic "
            "key as api_key=... or OPENAI_API_KEY)",
            200000,
        ),
        "claude-3-opus": Alias(
            "anthropic",
            {"model": "claude-3-opus-20240229", "max_images": "20"},
            "Claude 3 Opus through Anthropic's SDK, as needle.py called it (20 images a request; key from "
            "ANTHROPIC_API_KEY); Anthropic has deprecated the snapshot",
            200000,
        ),
    },
)
