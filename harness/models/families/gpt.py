"""OpenAI's GPT-4o, GPT-4 Turbo (vision) and GPT-5.x, each snapshot its own alias (so `--model NAME` is the same model
whatever the tasks), through the `openai` backend. No seed: no official call sent one (MMLongBench's
`openai_model.py:138-146`, MMNeedle's `needle.py`). Known by their API names (no config: `api_names` fragments).

Images, as OpenAI's vision guide (developers.openai.com/api/docs/guides/images-vision, "Calculating costs" and "Model
sizing behavior") counts them: GPT-4o and GPT-5 by 512-px tiles (85 + 170 a tile; GPT-5's 70 + 140); GPT-5.2, 5.4
and 5.5 by 32-px patches within a patch budget and a longest side (`patch_tokens`): GPT-5.2 1,536 patches and 2,048 px
at `high`; GPT-5.4 and 5.5 2,500 and 2,048 px at `high`, 10,000 and 6,000 px at `original`, where GPT-5.5 takes an
omitted or `auto` detail as `original` and GPT-5.4 as `high`. `low` sends a 512-px version. The guide lists a token
multiplier for the mini and nano models only, so these count one token a patch. At most 1,500 images a request.

GPT-5.x are reasoning models: they refuse `max_tokens` and any temperature but the default ("Unsupported parameter:
'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead"; "Only the default (1) value is
supported": github.com/IBM/chuk-llm/issues/3, repowise-dev/repowise#987), so their aliases send the cap as
`max_completion_tokens` and no temperature. The cap counts their reasoning too (openai-python's
`max_completion_tokens`: "including visible output tokens and reasoning tokens"), so a task's short cap can leave the
answer empty: as MMLongBench's Gemini wrapper sent its thinking models none (`families.gemini`), the GPT-5.x aliases
send no cap (`token_cap=none`) and the cost estimate prices each answer at the model's output limit (`output_limit`,
128,000, never sent); `token_cap=task` (or a number) and `reasoning_effort=...` in `--model_args` say otherwise."""

from __future__ import annotations

import math
from collections.abc import Mapping

from harness.models.facts.alias import Alias
from harness.models.facts.family import ImageRule, ImageTokens, ModelFamily

PATCH = 32
LOW_SIDE = 512  # `low`: "the model receives a low-resolution 512px x 512px version"
# Sent to every reasoning model: the cap under the name it takes, no temperature, no seed.
REASONING = {"token_param": "max_completion_tokens", "send_temperature": "false", "send_seed": "false"}
# What a GPT-5.x answer can be billed for at most, sent no cap (the models' pages: 128K max output tokens).
OUTPUT_LIMIT = "128000"
# The reasoning effort OpenAI applies where a request sends none, by API model name (its start, the longest that
# matches), as OpenAI documents it (read 2026-11-27); a model not here has no default documented here.
_BEFORE_5_1 = "OpenAI's API reference, ReasoningEffort: all models before gpt-5.1 default to medium"
REASONING_EFFORT_DEFAULT = {
    "gpt-5": ("medium", _BEFORE_5_1),
    "gpt-5.1": ("none", "OpenAI's API reference, ReasoningEffort: gpt-5.1 defaults to none, which does not reason"),
    "gpt-5.2": ("none", "OpenAI's GPT-5.2 guide: none, the lowest setting, is the default for GPT-5.2"),
    "gpt-5.5": (
        "medium",
        "OpenAI's reasoning guide (developers.openai.com/api/docs/guides/reasoning): gpt-5.5 "
        "defaults to medium reasoning effort",
    ),
}


def reasoning_effort_default(model: str) -> tuple[str, str] | None:
    """The reasoning effort OpenAI applies to `model` where none is sent, and where it says so; None: not known."""
    starts = sorted((start for start in REASONING_EFFORT_DEFAULT if model.startswith(start)), key=len)
    return REASONING_EFFORT_DEFAULT[starts[-1]] if starts else None


def tile_tokens(base: int, per_tile: int) -> ImageRule:
    """OpenAI's tile rule: `base` tokens at detail low; otherwise the image fitted within 2,048 px, its shorter side
    brought down to 768 px, and `per_tile` tokens per 512-px tile on top of `base`."""

    def rule(width: int, height: int, settings: Mapping[str, object]) -> int:
        if settings.get("image_detail") == "low":
            return base
        scale = min(1.0, 2048 / max(width, height))
        if min(width, height) * scale > 768:
            scale = 768 / min(width, height)
        return base + per_tile * math.ceil(width * scale / 512) * math.ceil(height * scale / 512)

    return rule


def patch_tokens(width: int, height: int, budget: int, max_side: int) -> int:
    """OpenAI's patch rule: the image fitted within `max_side` px, then, if it needs more than `budget` 32-px patches,
    shrunk by sqrt(32² x budget / area), adjusted so that its whole-pixel size stays within the budget; the patches
    that cover it (at most `budget`)."""
    scale = min(1.0, max_side / max(width, height))
    w, h = width * scale, height * scale
    if math.ceil(w / PATCH) * math.ceil(h / PATCH) > budget:
        shrink = math.sqrt(PATCH * PATCH * budget / (w * h))
        shrink *= min(
            max(1, math.floor(w * shrink / PATCH)) / (w * shrink / PATCH),
            max(1, math.floor(h * shrink / PATCH)) / (h * shrink / PATCH),
        )
        w, h = max(1, int(w * shrink)), max(1, int(h * shrink))
    return min(budget, math.ceil(w / PATCH) * math.ceil(h / PATCH))


def patches(levels: Mapping[str, tuple[int, int]], default: str) -> ImageRule:
    """A patch-budget model: each detail level's (patch budget, longest side); an omitted or `auto` detail is
    `default`."""

    def rule(width: int, height: int, settings: Mapping[str, object]) -> int:
        detail = str(settings.get("image_detail") or "auto")
        if detail == "low":
            return patch_tokens(width, height, levels["high"][0], LOW_SIDE)
        budget, side = levels[default if detail == "auto" else detail]
        return patch_tokens(width, height, budget, side)

    return rule


HIGH_1536 = {"high": (1536, 2048)}
ORIGINAL = {"high": (2500, 2048), "original": (10000, 6000)}
image_tokens = tile_tokens(85, 170)  # GPT-4o's


def _gpt5(model: str, note: str, context: int | None, **args: str) -> Alias:
    """A GPT-5.x alias: sent as a reasoning model, no cap (priced at its output limit), at most 1,500 images."""
    sent = {"model": model, **REASONING, "token_cap": "none", "output_limit": OUTPUT_LIMIT, "max_images": "1500"}
    return Alias("openai", {**sent, **args}, f"{note}; key from OPENAI_API_KEY", context)


FAMILY = ModelFamily(
    "GPT-4o",
    variants=(
        ImageTokens(
            "GPT-5.5",
            patches(ORIGINAL, "original"),
            "OpenAI's published rule for GPT-5.5, a token per 32-px patch: at most 2,500 patches and 2,048 px at detail "
            "high, 10,000 and 6,000 px at original (auto or omitted)",
            fragments=("gpt-5.5",),
        ),
        ImageTokens(
            "GPT-5.4",
            patches(ORIGINAL, "high"),
            "OpenAI's published rule for GPT-5.4, a token per 32-px patch: at most 2,500 patches and 2,048 px at detail "
            "high (auto or omitted), 10,000 and 6,000 px at original",
            fragments=("gpt-5.4",),
        ),
        ImageTokens(
            "GPT-5.2",
            patches(HIGH_1536, "high"),
            "OpenAI's published rule for GPT-5.2, a token per 32-px patch, at most 1,536 patches and 2,048 px",
            fragments=("gpt-5.2",),
        ),
        ImageTokens(
            "GPT-5",
            tile_tokens(70, 140),
            "OpenAI's published rule for GPT-5, 70 tokens + 140 per 512-px tile (70 in all at detail low)",
            fragments=("gpt-5-2025", "gpt-5-chat"),
        ),
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
        # Snapshots as openai-python's `ChatModel` names them (gpt-5-2025-08-07, gpt-5.2-2025-12-11,
        # gpt-5.5-2026-04-23); GPT-5.5's context 1,050,000 tokens (its model page).
        "gpt-5": _gpt5("gpt-5-2025-08-07", "GPT-5, the August-2025 snapshot", None),
        "gpt-5.2": _gpt5("gpt-5.2-2025-12-11", "GPT-5.2, the December-2025 snapshot", None),
        "gpt-5.5": _gpt5(
            "gpt-5.5-2026-04-23",
            "GPT-5.5, the April-2026 snapshot, its images at detail high (omitted, it would take them at original: "
            "up to 10,000 tokens an image)",
            1050000,
            image_detail="high",
        ),
        # VLMEvalKit's MMLongBench judge (`MMLongBench.DEFAULT_JUDGE`, vlmeval/dataset/mmlongbench.py), by the name it
        # gives: the snapshot name Azure OpenAI answers GPT-5.5 with (OpenAI's own is gpt-5.5-2026-04-23). As its
        # OpenAIWrapper sends a gpt-5 model: the judge's cap as max_completion_tokens, no temperature.
        "gpt-5.5-2026-04-24": Alias(
            "openai",
            {"model": "gpt-5.5-2026-04-24", **REASONING},
            "GPT-5.5 under VLMEvalKit's judge name (an Azure OpenAI deployment's snapshot name; base_url, api_version "
            "and deployment for Azure, or OPENAI_API_KEY)",
            1050000,
        ),
    },
)
