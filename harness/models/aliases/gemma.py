"""Gemma 3, as MMLongBench's `vlm_model/gemma3.py` runs it: the processor's defaults (pan-and-scan off: every image at
896 px, 256 tokens), and where `run_eval.sh` passes `--max_image_num 400` (VH and ICL at 128K) the last 400 images.
The paper reports its 128K cells although its images alone pass 128K tokens by a quarter: nothing is capped."""

from __future__ import annotations

from harness.models.aliases.alias import Alias
from harness.models.aliases.common import hf, mmlb
from harness.models.aliases.rules import rule, tasks

RULES = (
    rule(
        tasks(("vh", "icl"), ("128k",)), "run_eval.sh: --max_image_num 400 on VH and ICL at 128K", keep_last_images=400
    ),
)


def _gemma3(size: str) -> Alias:
    checkpoint = f"google/gemma-3-{size.lower()}-it"
    return hf(
        checkpoint,
        f"Gemma 3 {size} instruction-tuned",
        131072,
        mmlb(f"Gemma3-{size}", checkpoint),
        rules=RULES,
        prompt_style="gemma3",
    )


ALIASES: dict[str, Alias] = {"gemma3-4b": _gemma3("4B"), "gemma3": _gemma3("12B"), "gemma3-27b": _gemma3("27B")}
