"""Pixtral 12B, as MMLongBench's `vlm_model/pixtral.py` and `run_eval.sh` run it: full-size images at 8K-32K and,
where the commands pass `--image_resize 0.5` (every task at 64K/128K), every image resized to half each side (LANCZOS).
The paper's App. C speaks of the half-size images without naming lengths; the run scripts apply them at 64K/128K only,
and the alias follows the scripts."""

from __future__ import annotations

from harness.models.aliases.alias import Alias
from harness.models.aliases.common import hf, mmlb
from harness.models.aliases.rules import DOCUMENTS, LONG, NATURAL, rule, tasks

RULES = (
    rule(
        tasks(NATURAL + DOCUMENTS, LONG),
        "run_eval.sh: --image_resize 0.5 (LANCZOS) on every task at 64K/128K",
        image_scale=0.5,
    ),
)

ALIASES: dict[str, Alias] = {
    "pixtral": hf(
        "mistral-community/pixtral-12b",
        "Pixtral 12B (transformers' LLaVA conversion, the checkpoint the paper ran)",
        131072,
        mmlb("Pixtral-12B", "mistral-community/pixtral-12b"),
        rules=RULES,
        prompt_style="pixtral",  # text parts under "content", which the checkpoint's own template reads
    ),
}
