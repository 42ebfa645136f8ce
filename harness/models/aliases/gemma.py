"""Gemma 3, as MMLongBench's `vlm_model/gemma3.py` runs it: the processor's defaults (pan-and-scan off: every image at
896 px, 256 tokens); where `run_eval.sh` keeps the last 400 images is MMLongBench's."""

from __future__ import annotations

from harness.models.aliases.alias import Alias
from harness.models.aliases.common import hf


def _gemma3(size: str) -> Alias:
    return hf(f"google/gemma-3-{size.lower()}-it", f"Gemma 3 {size} instruction-tuned", 131072, prompt_style="gemma3")


ALIASES: dict[str, Alias] = {"gemma3-4b": _gemma3("4B"), "gemma3": _gemma3("12B"), "gemma3-27b": _gemma3("27B")}
