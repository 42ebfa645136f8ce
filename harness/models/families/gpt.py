"""OpenAI's GPT-4o and GPT-4 Turbo (vision), each snapshot its own alias (so `--model NAME` is the same model whatever
the tasks), through the `openai` backend: OpenAI's published image rule (85 tokens + 170 per 512-px tile; 85 in all
at detail low). No seed: no official call sent one (MMLongBench's `openai_model.py:138-146`, MMNeedle's `needle.py`).
Known by their API names (no config: `api_names` fragments)."""

from __future__ import annotations

import math
from collections.abc import Mapping

from harness.models.alias import Alias
from harness.models.families.family import ImageTokens, ModelFamily


def image_tokens(width: int, height: int, settings: Mapping[str, object]) -> int:
    """OpenAI's published rule: 85 tokens at detail low; otherwise the image fitted within 2,048 px, its shorter
    side brought down to 768 px, and 170 tokens per 512-px tile on top of the 85."""
    if settings.get("image_detail") == "low":
        return 85
    scale = min(1.0, 2048 / max(width, height))
    if min(width, height) * scale > 768:
        scale = 768 / min(width, height)
    return 85 + 170 * math.ceil(width * scale / 512) * math.ceil(height * scale / 512)


FAMILY = ModelFamily(
    "GPT-4o",
    variants=(
        ImageTokens(
            "GPT-4o",
            image_tokens,
            "OpenAI's published rule, 85 tokens + 170 per 512-px tile (85 in all at detail low)",
            fragments=("gpt-4o", "gpt-4.1", "chatgpt-4o", "gpt-4-turbo"),
        ),
    ),
    aliases={
        "gpt-4o": Alias(
            "openai",
            {"model": "gpt-4o-2024-11-20", "send_seed": "false"},
            "GPT-4o, the November-2024 snapshot; key from OPENAI_API_KEY",
            128000,
        ),
        "gpt-4o-2024-05-13": Alias(
            "openai",
            {"model": "gpt-4o-2024-05-13", "send_seed": "false"},
            "GPT-4o, the May-2024 snapshot; key from OPENAI_API_KEY",
            128000,
        ),
        "gpt-4-turbo": Alias(
            "openai",
            {"model": "gpt-4-turbo-2024-04-09", "send_seed": "false"},
            "GPT-4 Turbo with vision, the April-2024 snapshot",
            128000,
        ),
    },
)
