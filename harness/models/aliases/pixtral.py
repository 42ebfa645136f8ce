"""Pixtral 12B, as MMLongBench's `vlm_model/pixtral.py` runs it: full-size images; where `run_eval.sh` halves them
(every task at 64K/128K) is MMLongBench's."""

from __future__ import annotations

from harness.models.aliases.alias import Alias
from harness.models.aliases.common import hf

ALIASES: dict[str, Alias] = {
    "pixtral": hf(
        "mistral-community/pixtral-12b",
        "Pixtral 12B (transformers' LLaVA conversion, the checkpoint the paper ran)",
        131072,
        prompt_style="pixtral",  # text parts under "content", which the checkpoint's own template reads
    ),
}
