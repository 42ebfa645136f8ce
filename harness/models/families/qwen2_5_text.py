"""Qwen2.5 Instruct, the text LLMs (no vision): run on the `hf` backend's text-only path (`text_only=true`,
`harness.models.backends.hf.text_only`) as MMLongBench's official text-only wrapper ran them (`vlm_model/text_only_model.py`;
`scripts/run_analysis.sh:35-63,132-160`): the images dropped (their `<image>` placeholders left in the text), the chat
rendered by the checkpoint's own template (ChatML, its default Qwen system turn) with the answer prefix continued, and
a row's context cut at its end to the row's length less the answer's tokens. No image-token rule: they take no image.

Their training window is 32,768 positions (`max_position_embeddings`); the model card extends them to 131,072 with
YaRN (factor 4), which a paper's run sets (`yarn_factor`) where it used it."""

from __future__ import annotations

from harness.models.facts.alias import Alias, hf
from harness.models.facts.family import ModelFamily


def _qwen2_5(size: str) -> Alias:
    return hf(
        f"Qwen/Qwen2.5-{size}-Instruct",
        f"Qwen2.5 {size} Instruct, a text LLM: text only (images dropped), the context cut at its end to fit",
        32768,
        text_only="true",
        prompt_style="text_only",
    )


FAMILY = ModelFamily(
    "Qwen2.5 (text)", aliases={"qwen2.5-7b-instruct": _qwen2_5("7B"), "qwen2.5-32b-instruct": _qwen2_5("32B")}
)
