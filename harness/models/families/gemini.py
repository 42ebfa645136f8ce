"""Google's Gemini through the `gemini` backend (google-genai, as MMLongBench's `vlm_model/gemini.py` called it, images
uploaded as PNGs): Google's published image rule for Gemini 2 (258 tokens an image, or per 768-px tile past 384 px) and
for Gemini 3 (a fixed number an image by its `media_resolution`: 280 low, 560 medium, 1,120 high, the default for
images, 2,240 ultra high; the Gemini 3 developer guide, ai.google.dev/gemini-api/docs/gemini-3, and Vertex AI's Gemini
3 Flash page, "default resolution tokens: 1,120"),
temperature left to the API's default unless a paper's run sets it (MMLongBench's: 1.0). No `max_output_tokens` for
2.0-Flash-Thinking, 2.5-Flash and 2.5-Pro, as the wrapper sent none to them (`gemini.py:125-130`, for the SDK's
bug googleapis/python-genai#626: with a limit, thinking spends it and the answer comes back empty), whose answers the
cost estimate prices at the models' own output limit (`output_limit`, never sent); no seed (the wrapper sent none).
Gemini 3 thinks by default (`thinking_level` high) and its guide "strongly recommend[s] keeping the temperature
parameter at its default value of 1.0" (below it, "looping or degraded performance"): its aliases send no temperature
and, as the 2.5 models', no `max_output_tokens` (output limit 64K: 65,536 on Vertex AI's Gemini 3 Flash page).
Known by their API names."""

from __future__ import annotations

import math
from collections.abc import Mapping

from harness.models.facts.alias import Alias
from harness.models.facts.family import ImageTokens, ModelFamily

RETIRED = "Google retired this preview snapshot; the alias runs only where an endpoint still serves it"
# The thinking Gemini 3 applies where a request sends no thinking_config (the Gemini 3 developer guide,
# ai.google.dev/gemini-api/docs/gemini-3: thinking_level "defaults to high"; read 2026-11-27).
GEMINI3_THINKING = (
    "high",
    "Google's Gemini 3 developer guide (ai.google.dev/gemini-api/docs/gemini-3): thinking_level defaults to high",
)


def thinking_default(model: str) -> tuple[str, str] | None:
    """The thinking level Gemini applies to `model` where none is sent, and where Google says so; None: not known."""
    return GEMINI3_THINKING if model.startswith("gemini-3") else None


# The output limit of 2.0-Flash-Thinking (exp-01-21), 2.5-Flash and 2.5-Pro, thinking included, as Google's model pages
# give it (https://ai.google.dev/gemini-api/docs/models): what an answer sent no cap can be billed for at most.
THINKING_OUTPUT_LIMIT = 65536


def image_tokens(width: int, height: int, settings: Mapping[str, object]) -> int:
    """Google's published rule for Gemini 2: 258 tokens for an image at most 384 px a side, else 258 per 768-px
    tile."""
    if width <= 384 and height <= 384:
        return 258
    return 258 * math.ceil(width / 768) * math.ceil(height / 768)


# Gemini 3's tokens an image by `media_resolution` (the request's processor setting, where an alias sets one).
MEDIA_RESOLUTION = {"low": 280, "medium": 560, "high": 1120, "ultra_high": 2240}


def gemini3_tokens(width: int, height: int, settings: Mapping[str, object]) -> int:
    """Gemini 3's published rule: a fixed number of tokens an image, by its media resolution (high by default)."""
    level = str(settings.get("media_resolution") or "high").lower().removeprefix("media_resolution_")
    if level not in MEDIA_RESOLUTION:
        raise ValueError(f"media_resolution must be one of {', '.join(MEDIA_RESOLUTION)}, got {level!r}")
    return MEDIA_RESOLUTION[level]


def _gemini(model: str, note: str, *, thinking: bool = False) -> Alias:
    args = {"model": model, "send_temperature": "false"}
    if thinking:  # gemini.py:126-130: the thinking and 2.5 series get no max_output_tokens
        args["max_output_tokens"] = "none"
        args["output_limit"] = str(THINKING_OUTPUT_LIMIT)  # never sent: what the cost estimate prices an answer at
    return Alias("gemini", args, f"{note}; key from GEMINI_API_KEY", 1048576)


FAMILY = ModelFamily(
    "Gemini",
    variants=(
        ImageTokens(
            "Gemini 3",
            gemini3_tokens,
            "Google's published rule for Gemini 3, 1,120 tokens an image at the default media resolution (high)",
            fragments=("gemini-3",),
        ),
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
            "gemini-2.0-flash-thinking-exp-01-21", f"Gemini 2.0 Flash Thinking; {RETIRED}", thinking=True
        ),
        "gemini-2.5-flash": _gemini("gemini-2.5-flash-preview-04-17", f"Gemini 2.5 Flash; {RETIRED}", thinking=True),
        "gemini-2.5-pro": _gemini("gemini-2.5-pro-preview-03-25", f"Gemini 2.5 Pro; {RETIRED}", thinking=True),
        "gemini-3.1-pro-preview": _gemini("gemini-3.1-pro-preview", "Gemini 3.1 Pro (preview)", thinking=True),
        "gemini-3-pro-preview": _gemini(
            "gemini-3-pro-preview", "Gemini 3 Pro (preview), deprecated for gemini-3.1-pro-preview", thinking=True
        ),
        "gemini-3-flash-preview": _gemini("gemini-3-flash-preview", "Gemini 3 Flash (preview)", thinking=True),
    },
)
