"""Gemma 3n (E2B and E4B instruction-tuned), a family the papers never ran: every image at 768 x 768 px, 256 soft tokens
between `<start_of_image>` and `<end_of_image>` with a blank line either side, its chat as its published template
renders it, and its aliases on `hf` (`Gemma3nForConditionalGeneration`). Its registry line comes before Gemma 3's,
whose fragments (`gemma-3`, `gemma3`) its names also hold.

Sources, all transformers' conversion script (`src/transformers/models/gemma3n/convert_gemma3n_weights.py` at
0d9e0ea, which wrote the published checkpoints' processor files): the chat template (`_CHAT_TEMPLATE`: a BOS, each
image as `<image_soft_token>`, `<start_of_turn>model\\n` to generate), the tokenizer (`add_bos_token=True`), the image
processor (`SiglipImageProcessorFast`, `size` 768 x 768, `image_seq_length` 256) and `Gemma3nProcessor`, which
expands each `<image_soft_token>` to `\\n\\n<start_of_image>` + 256 tokens + `<end_of_image>\\n\\n`
(`processing_gemma3n.py`). The template's BOS and the tokenizer's would make two: the prompt is tokenized with one, as
`apply_chat_template(tokenize=True)` gives it (the `gemma3` prompt style). Context: 32,768 tokens
(`Gemma3nTextConfig.max_position_embeddings`), recorded, never a limit.
"""

from __future__ import annotations

from harness.models.facts.alias import Alias, hf
from harness.models.facts.family import ImageTokens, ModelFamily, fixed


def _gemma3n(size: str) -> Alias:
    note = f"Gemma 3n {size} instruction-tuned (its vision tower is timm's MobileNetV5: needs timm)"
    return hf(f"google/gemma-3n-{size}-it", note, 32768, prompt_style="gemma3")


FAMILY = ModelFamily(
    "Gemma 3n",
    variants=(
        ImageTokens(
            "Gemma 3n",
            fixed(256 + 4),
            "256 tokens per image (768 x 768 px) + 4 markers",
            model_types=("gemma3n",),
            architectures=("Gemma3nForConditionalGeneration",),
            fragments=("gemma-3n", "gemma3n"),
        ),
    ),
    aliases={"gemma3n-e2b": _gemma3n("E2B"), "gemma3n-e4b": _gemma3n("E4B")},
)
