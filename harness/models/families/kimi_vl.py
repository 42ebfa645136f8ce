"""Kimi-VL-A3B (Instruct, Thinking and Thinking-2506), a family the papers never ran: its image tokens (MoonViT's 14-px
patches, at most `in_token_limit` of them before the image is scaled down, padded to 28 px and merged 2x2, + the
template's `<|media_start|>image<|media_content|>` ... `<|media_end|>`), its chat as its published template renders
it, and its aliases on `vllm`, the one maintained path that loads it: transformers 5.20.2 has no Kimi-VL class (its
`kimi_k25` is Kimi K2.5), vLLM 0.33.0 registers `KimiVLForConditionalGeneration` (`model_executor/models/kimi_vl.py`).

Sources. The rule is vLLM's count (`kimi_vl.py:167-201`, `KimiVLProcessingInfo.get_num_image_tokens`, which reads the
checkpoint's image processor) with Kimi-VL-A3B-Instruct's `preprocessor_config.json` settings (`in_token_limit` 4096,
`patch_size` 14, `merge_kernel_size` [2, 2], `pad_input` true) as third-party copies in the searched index quote
them; Kimi-VL-A3B-Thinking-2506's own file (its model card announces higher-resolution input) is in no stored public
source, so its estimate uses the same settings unless `in_token_limit` is given. The template is the checkpoint's own
(`chat_template.jinja`, MoonshotAI's), rendered as it is: sglang's `kimi-vl` conversation (`python/sglang/srt/
conversation.py`, which cites it) and llama-cpp-python's `KimiVLChatHandler` transcribe it: a default system turn
`<|im_system|>system<|im_middle|>You are a helpful assistant<|im_end|>`, `<|im_user|>user<|im_middle|>`, each image
`<|media_start|>image<|media_content|><|media_pad|><|media_end|>` in place, `<|im_assistant|>assistant<|im_middle|>`
to generate. The checkpoints' tokenizer and processor are their own code: the aliases trust it, their checkpoint only.

The Thinking models write `◁think▷...◁/think▷` before their answer (VLMEvalKit's `vlmeval/vlm/kimi_vl.py`
`extract_summary` reads it after decoding with `skip_special_tokens=True`, which keeps these characters): taken out
before scoring, and no answer prefix is sent to them (`thinking`). Context: 131,072 tokens (MoonshotAI/Kimi-VL's
README: 128K), recorded, never a limit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from harness.models.facts.alias import Alias, thinking, vllm
from harness.models.facts.family import ImageTokens, ModelFamily, number
from harness.models.facts.prompt_style import THINKING

PATCH, MERGE = 14, 2
IN_TOKEN_LIMIT = 4096  # Kimi-VL-A3B-Instruct's preprocessor_config.json
THINK = (("◁think▷", "◁/think▷"),)


def image_tokens(width: int, height: int, settings: Mapping[str, object]) -> int:
    """vLLM's `KimiVLProcessingInfo.get_num_image_tokens`: scaled down to at most `in_token_limit` patches, padded to
    whole merged cells; + `<|media_start|>`, `image`, `<|media_content|>` and `<|media_end|>`."""
    limit = number(settings.get("in_token_limit") or IN_TOKEN_LIMIT)
    patches = (width // PATCH) * (height // PATCH)
    if patches > limit:
        scale = math.sqrt(limit / patches)
        width, height = int(width * scale), int(height * scale)
    cell = PATCH * MERGE
    return math.ceil(height / cell) * math.ceil(width / cell) + 4


def _kimi(variant: str, note: str) -> Alias:
    return vllm(f"moonshotai/Kimi-VL-A3B-{variant}", note, 131072)


def _thinking(variant: str, note: str) -> Alias:
    return thinking(vllm(f"moonshotai/Kimi-VL-A3B-{variant}", note, 131072, prompt_style=THINKING.name), THINK)


FAMILY = ModelFamily(
    "Kimi-VL",
    variants=(
        ImageTokens(
            "Kimi-VL",
            image_tokens,
            "a token per 28-px cell (14-px patches merged 2x2, at most in_token_limit patches, default 4,096) + 4 "
            "markers per image",
            model_types=("kimi_vl",),
            architectures=("KimiVLForConditionalGeneration",),
            fragments=("kimi-vl",),
        ),
    ),
    aliases={
        "kimi-vl-a3b": _kimi("Instruct", "Kimi-VL-A3B-Instruct (16B MoE, 3B active) through vLLM"),
        "kimi-vl-a3b-thinking": _thinking("Thinking", "Kimi-VL-A3B-Thinking through vLLM"),
        "kimi-vl-a3b-thinking-2506": _thinking(
            "Thinking-2506",
            "Kimi-VL-A3B-Thinking-2506 through vLLM (its own in_token_limit is not published where the screen can "
            "read it: estimated with 4,096)",
        ),
    },
)
