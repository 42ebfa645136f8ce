"""The API models, as the official code reached them: MMLongBench's `vlm_model/openai_model.py` (the OpenAI SDK, for
GPT-4o and, at Anthropic's OpenAI-compatible endpoint, Claude) and `gemini.py` with `scripts/run_api.sh`; MMNeedle's
`needle.py`; MileBench's papers' dates (its API code is not published). Every one goes through the `openai` backend:
one user turn, images in place, the answer prefix never sent as an extra assistant turn (the official wrappers send
the user turn only).

MMLongBench sends `detail: auto` to GPT-4o, and `low` on the natural-image tasks at 64K/128K (`--image_detail low`);
Gemini gets the last 400 images, each at most 384 px a side, there (`--max_image_num 400 --max_image_size 384`), and
Claude takes at most 100 images a request (the paper's N/A cells).
"""

from __future__ import annotations

from harness.models.aliases.alias import Alias
from harness.models.aliases.common import milebench, mmlb, mmneedle
from harness.models.aliases.rules import LONG, NATURAL, every_length, rule, tasks

ANTHROPIC = "https://api.anthropic.com/v1/"
GOOGLE = "https://generativelanguage.googleapis.com/v1beta/openai/"

GPT4O_RULES = (
    every_length("openai_model.py: detail auto on every image", processor_kwargs={"image_detail": "auto"}),
    rule(
        tasks(NATURAL, LONG),
        "run_api.sh: --image_detail low on natural images at 64K/128K",
        processor_kwargs={"image_detail": "low"},
    ),
)
GEMINI_RULES = (
    rule(
        tasks(NATURAL, LONG),
        "run_api.sh: --max_image_num 400 --max_image_size 384 on natural images at 64K/128K (no Gemini tiling)",
        keep_last_images=400,
        max_image_side=384,
    ),
)
NO_MILEBENCH_CODE = "MileBench's API code is not published: one user turn, images in place, greedy, 512 tokens"
GEMINI_DEPARTS = (
    "Google's OpenAI-compatible endpoint with images inline (the official wrapper uploads PNGs through google-genai); "
    "max_tokens is sent, where the wrapper sent no max_output_tokens to the 2.0-thinking and 2.5 models"
)
RETIRED = "Google retired this preview snapshot; the alias runs only where an endpoint still serves it"


def _gemini(model: str, name: str, note: str) -> Alias:
    return Alias(
        "openai",
        # temperature left to the API's default (1.0): the wrapper passed its own default temperature=1.0
        {"model": model, "base_url": GOOGLE, "send_temperature": "false"},
        note,
        1048576,
        (mmlb(name, model, GEMINI_DEPARTS),),
        GEMINI_RULES,
    )


ALIASES: dict[str, Alias] = {
    "gpt-4o": Alias(
        "openai",
        {"model": "gpt-4o-2024-11-20"},
        "GPT-4o, the snapshot each paper ran; key from OPENAI_API_KEY",
        128000,
        (
            mmlb("GPT-4o", "gpt-4o-2024-11-20", send_temperature="true"),
            milebench(
                "GPT-4o",
                "gpt-4o-2024-05-13",
                NO_MILEBENCH_CODE,
                model="gpt-4o-2024-05-13",
                image_detail="auto",
                send_temperature="true",
            ),
            mmneedle(
                "GPT-4o",
                "gpt-4o through Azure OpenAI (api-version 2024-05-01-preview: the May-2024 gpt-4o-2024-05-13)",
                "OpenAI's own API serves the same snapshot, not the authors' Azure deployment",
                model="gpt-4o-2024-05-13",
                image_detail="high",
                send_temperature="false",  # needle.py sends no temperature: the API's default
            ),
        ),
        GPT4O_RULES,
    ),
    "gpt-4-turbo": Alias(
        "openai",
        {"model": "gpt-4-turbo-2024-04-09"},
        "GPT-4 Turbo with vision (MileBench's GPT-4V, run on 12 April 2024)",
        128000,
        (milebench("GPT-4V", "gpt-4-turbo-2024-04-09", NO_MILEBENCH_CODE),),
    ),
    "claude-3.7-sonnet": Alias(
        "openai",
        {"model": "claude-3-7-sonnet-20250219", "base_url": ANTHROPIC, "max_images": "100"},
        "Claude 3.7 Sonnet at Anthropic's OpenAI-compatible endpoint, as openai_model.py reaches it (an Anthropic "
        "key as api_key=... or OPENAI_API_KEY)",
        200000,
        (
            mmlb(
                "Claude-3.7-Sonnet",
                "claude-3-7-sonnet-20250219",
                "a row of over 100 images is recorded too_many_images, where the paper left its whole category N/A",
            ),
        ),
    ),
    "claude-3-opus": Alias(
        "openai",
        {"model": "claude-3-opus-20240229", "base_url": ANTHROPIC, "max_images": "20"},
        "Claude 3 Opus at Anthropic's OpenAI-compatible endpoint (20 images a request, MileBench §4); Anthropic has "
        "deprecated the snapshot",
        200000,
        (
            milebench("Claude 3 Opus", "claude-3-opus-20240229", NO_MILEBENCH_CODE, send_temperature="true"),
            mmneedle(
                "Claude 3 Opus",
                "claude-3-opus-20240229 through Anthropic's SDK",
                "Anthropic's OpenAI-compatible endpoint, not its own SDK (same images, max_tokens 300, no temperature)",
                send_temperature="false",
            ),
        ),
    ),
    "gemini-2.0-flash": _gemini("gemini-2.0-flash-001", "Gemini-2.0-Flash", "Gemini 2.0 Flash"),
    "gemini-2.0-flash-thinking": _gemini(
        "gemini-2.0-flash-thinking-exp-01-21", "Gemini-2.0-Flash-T", f"Gemini 2.0 Flash Thinking; {RETIRED}"
    ),
    "gemini-2.5-flash": _gemini("gemini-2.5-flash-preview-04-17", "Gemini-2.5-Flash", f"Gemini 2.5 Flash; {RETIRED}"),
    "gemini-2.5-pro": _gemini("gemini-2.5-pro-preview-03-25", "Gemini-2.5-Pro", f"Gemini 2.5 Pro; {RETIRED}"),
}
