"""Anthropic's Claude: 3.7 Sonnet at Anthropic's OpenAI-compatible endpoint through the `openai` backend (as
MMLongBench's `openai_model.py:65-69` reached it), 3 Opus through the `anthropic` backend (Anthropic's SDK, as
MMNeedle's `needle.py:149-181` called it), and the Claude 4.5 and 4.6 models through the `anthropic` backend;
Anthropic's published image rule for its Claude 3 and 4 models (at most 1,568 px a side and about 1.15 megapixels,
then a token per 750 px; docs.claude.com/en/docs/vision), the images a request its API takes (100); no seed (no
official call sent one, and the Messages API takes none). Known by their API names.

Claude Sonnet 4.5 and later refuse a request that sets both `temperature` and `top_p` ("`temperature` and `top_p`
cannot both be specified for this model. Please use only one.": BerriAI/litellm#15097, open-webui#17922 for Sonnet
4.5, skydiscover-ai/skydiscover#15 for Sonnet 4.6): their aliases send no `top_p` (`send_top_p=false`), the
temperature alone. Extended thinking is off unless asked (`thinking_budget=N` in `--model_args`: the anthropic
backend).

Anthropic caches a prompt prefix only from a length that depends on the model (`cache_minimum`): a cache mark on a
shorter prefix is not cached and its tokens are billed in full, so the anthropic backend marks none shorter."""

from __future__ import annotations

import math
from collections.abc import Mapping

from harness.models.facts.alias import Alias
from harness.models.facts.family import ImageTokens, ModelFamily

ANTHROPIC = "https://api.anthropic.com/v1/"

# The shortest prefix Anthropic caches, by API model name (its start); 1,024 tokens for the others (Sonnet 4.6 and
# 4.5, Opus 4.1 and 4, Sonnet 4, Sonnet 3.7, Opus 3).
CACHE_MINIMUM = {
    "claude-opus-4-6": 4096,
    "claude-opus-4-5": 4096,
    "claude-haiku-4-5": 4096,
    "claude-3-5-haiku": 2048,
    "claude-3-haiku": 2048,
}
CACHE_MINIMUM_SOURCE = (
    "Anthropic's prompt-caching guide, Cache limitations: platform.claude.com/docs/en/build-with-claude/"
    "prompt-caching, as anthropics/anthropic-sdk-python#1194 quotes it, read 2026-11-27"
)


def cache_minimum(model: str) -> int:
    """The shortest prompt prefix Anthropic caches for `model` (`CACHE_MINIMUM`)."""
    return next((tokens for start, tokens in CACHE_MINIMUM.items() if model.startswith(start)), 1024)


def image_tokens(width: int, height: int, settings: Mapping[str, object]) -> int:
    """Anthropic's published rule: the image scaled to at most 1,568 px a side and about 1.15 megapixels, then one
    token per 750 px."""
    scale = min(1.0, 1568 / max(width, height), math.sqrt(1_150_000 / (width * height)))
    return math.ceil(int(width * scale) * int(height * scale) / 750)


def _claude4(model: str, note: str) -> Alias:
    """A Claude 4.x alias: Anthropic's SDK, no `top_p`, at most 100 images a request (the API's limit), cache marks
    from the model's cache minimum."""
    least = cache_minimum(model)
    return Alias(
        "anthropic",
        {"model": model, "send_top_p": "false", "max_images": "100", "prompt_cache_min_tokens": str(least)},
        f"{note} through Anthropic's SDK; key from ANTHROPIC_API_KEY; prompts cached from {least:,} tokens "
        f"({CACHE_MINIMUM_SOURCE})",
        200000,
    )


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
        # Snapshots as Anthropic's SDK (`anthropic.types.ModelParam`) and pricing page name them.
        # anthropic-sdk's DEPRECATED_MODELS: Opus 4.5 ends 2027-01-22, Sonnet 4.5 2026-11-30
        "claude-opus-4.5": _claude4(
            "claude-opus-4-5-20251101", "Claude Opus 4.5, the November-2025 snapshot (deprecated)"
        ),
        "claude-sonnet-4.5": _claude4(
            "claude-sonnet-4-5-20250929", "Claude Sonnet 4.5, the September-2025 snapshot (deprecated)"
        ),
        "claude-haiku-4.5": _claude4("claude-haiku-4-5-20251001", "Claude Haiku 4.5, the October-2025 snapshot"),
        "claude-opus-4.6": _claude4("claude-opus-4-6", "Claude Opus 4.6"),
        "claude-sonnet-4.6": _claude4("claude-sonnet-4-6", "Claude Sonnet 4.6"),
        "claude-3-opus": Alias(
            "anthropic",
            {"model": "claude-3-opus-20240229", "max_images": "20"},
            "Claude 3 Opus through Anthropic's SDK, as needle.py called it (20 images a request; key from "
            "ANTHROPIC_API_KEY); Anthropic has deprecated the snapshot",
            200000,
        ),
    },
)
