"""The API models, each snapshot its own alias (so `--model NAME` is the same model whatever the tasks), through the
`openai` backend: one user turn, images in place, the answer prefix never sent as an extra assistant turn (the
official wrappers send the user turn only). Anthropic's and Google's models at their OpenAI-compatible endpoints.
What each paper sent them (`detail`, temperature, image limits per task) is that benchmark's
(`tasks/<benchmark>/paper_models.py`).
"""

from __future__ import annotations

from harness.models.aliases.alias import Alias

ANTHROPIC = "https://api.anthropic.com/v1/"
GOOGLE = "https://generativelanguage.googleapis.com/v1beta/openai/"
RETIRED = "Google retired this preview snapshot; the alias runs only where an endpoint still serves it"


def _gemini(model: str, note: str) -> Alias:
    # temperature left to the API's default (1.0): the official wrapper passed its own default temperature=1.0
    return Alias("openai", {"model": model, "base_url": GOOGLE, "send_temperature": "false"}, note, 1048576)


ALIASES: dict[str, Alias] = {
    "gpt-4o": Alias(
        "openai", {"model": "gpt-4o-2024-11-20"}, "GPT-4o, the November-2024 snapshot; key from OPENAI_API_KEY", 128000
    ),
    "gpt-4o-2024-05-13": Alias(
        "openai", {"model": "gpt-4o-2024-05-13"}, "GPT-4o, the May-2024 snapshot; key from OPENAI_API_KEY", 128000
    ),
    "gpt-4-turbo": Alias(
        "openai",
        {"model": "gpt-4-turbo-2024-04-09"},
        "GPT-4 Turbo with vision, the April-2024 snapshot",
        128000,
    ),
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
        "Claude 3 Opus at Anthropic's OpenAI-compatible endpoint (20 images a request); Anthropic has deprecated the "
        "snapshot",
        200000,
    ),
    "gemini-2.0-flash": _gemini("gemini-2.0-flash-001", "Gemini 2.0 Flash"),
    "gemini-2.0-flash-thinking": _gemini(
        "gemini-2.0-flash-thinking-exp-01-21", f"Gemini 2.0 Flash Thinking; {RETIRED}"
    ),
    "gemini-2.5-flash": _gemini("gemini-2.5-flash-preview-04-17", f"Gemini 2.5 Flash; {RETIRED}"),
    "gemini-2.5-pro": _gemini("gemini-2.5-pro-preview-03-25", f"Gemini 2.5 Pro; {RETIRED}"),
}
