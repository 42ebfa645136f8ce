"""Gemma 3: the processor's defaults (pan-and-scan off: every image at 896 px, 256 tokens and 4 markers), the chat as
the official wrapper (MMLongBench's `vlm_model/gemma3.py`) builds it, tokenized in `apply_chat_template` (one BOS),
and the aliases."""

from __future__ import annotations

from harness.models.facts.alias import Alias, hf
from harness.models.facts.family import ImageTokens, ModelFamily, fixed
from harness.models.facts.prompt_style import PromptStyle


def _gemma3(size: str) -> Alias:
    return hf(f"google/gemma-3-{size.lower()}-it", f"Gemma 3 {size} instruction-tuned", 131072, prompt_style="gemma3")


FAMILY = ModelFamily(
    "Gemma 3",
    variants=(
        ImageTokens(
            "Gemma 3",
            fixed(256 + 4),
            "256 tokens per image + 4 markers",
            model_types=("gemma3",),
            architectures=("Gemma3ForConditionalGeneration",),
            fragments=("gemma-3", "gemma3"),
        ),
    ),
    styles=(PromptStyle("gemma3", bos="template"),),
    aliases={"gemma3-4b": _gemma3("4B"), "gemma3": _gemma3("12B"), "gemma3-27b": _gemma3("27B")},
)
