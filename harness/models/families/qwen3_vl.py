"""Qwen3-VL (dense 2B-32B and the 30B-A3B MoE, Instruct and Thinking), a family the papers never ran: its image tokens
(16-px patches merged 2x2, so 32-px cells, within 65,536-16,777,216 pixels, + `<|vision_start|>` and
`<|vision_end|>`), its chat as its published template renders it, and its aliases on `hf`
(`Qwen3VLForConditionalGeneration`, `Qwen3VLMoeForConditionalGeneration`).

Sources. The processor settings are the checkpoints' `preprocessor_config.json` (`"size": {"longest_edge": 16777216,
"shortest_edge": 65536}`, `patch_size` 16, `merge_size` 2, `Qwen2VLImageProcessorFast`), as third-party copies in the
searched index quote it verbatim; the checkpoint repositories themselves (Qwen/Qwen3-VL-*) are in no stored public
source. The chat templates are carried by the checkpoints and rendered as they are (no template is bundled here);
the transcriptions the tests render are xorbitsai/inference's model registry's (`xinference/model/llm/llm_family.json`
at 7ecec16, "Qwen3-VL-Instruct" and "Qwen3-VL-Thinking"): no system message unless one is sent, each image
`<|vision_start|><|image_pad|><|vision_end|>` in place, and, for Thinking, a generation prompt that opens the thinking
(`<|im_start|>assistant\\n<think>\\n`), so its output holds only the closing `</think>`.

The Instruct aliases take the default prompt (typed parts, the task's answer prefix continued). The Thinking aliases
send no answer prefix (`thinking`): the Thinking template writes a final assistant turn as a closed, empty thinking
block followed by the text, so a prefilled prefix would skip the thinking the model was trained to do; their
thinking is taken out before scoring (`<think>`, `</think>`: the end tag alone, the template having opened it).
Context: 262,144 tokens (xorbitsai's registry, `context_length`), recorded, never a limit.

Qwen3.5 (0.8B-27B dense, 35B-A3B, 122B-A10B, 397B-A17B) and Qwen3.6 (27B, 35B-A3B), natively multimodal, are the
second variant: transformers 5.20.2's `qwen3_5`/`qwen3_5_moe` (`Qwen3_5ForConditionalGeneration`,
`Qwen3_5MoeForConditionalGeneration`, vLLM 0.33.0 registers both) take Qwen3-VL's processor (`Qwen3VLProcessor`, its
auto mapping) and a vision tower of 16-px patches merged 2x2 (`Qwen3_5VisionConfig`), so an image counts as Qwen3-VL's
does; their `preprocessor_config.json` is in no stored source, so the estimate uses Qwen3-VL's published bounds (the
`hf` backend counts with the checkpoint's own processor). The checkpoints and their templates are xorbitsai's
registry's ("qwen3.5", "qwen3.6" at 7ecec16, the Qwen/Qwen3.5-* and Qwen/Qwen3.6-* repositories, context 262,144):
hybrid thinking, on by default (the generation prompt opens `<think>\n`; `enable_thinking` false, which no alias
sets, closes it empty), so every alias is a thinking alias, as the Qwen3-VL Thinking ones are.
"""

from __future__ import annotations

from harness.models.facts.alias import Alias, hf, thinking
from harness.models.facts.family import ImageTokens, ModelFamily, cells
from harness.models.facts.prompt_style import THINKING

WINDOW = 262144
CELL = 32  # a merged token: 16-px patches, 2x2
MIN_PIXELS, MAX_PIXELS = 65536, 16777216  # preprocessor_config.json `size`: shortest_edge, longest_edge (areas)


image_tokens = cells(CELL, MIN_PIXELS, MAX_PIXELS)


def _instruct(size: str) -> Alias:
    return hf(f"Qwen/Qwen3-VL-{size}-Instruct", f"Qwen3-VL {size} Instruct", WINDOW)


def _thinking(size: str) -> Alias:
    alias = hf(f"Qwen/Qwen3-VL-{size}-Thinking", f"Qwen3-VL {size} Thinking", WINDOW, prompt_style=THINKING.name)
    return thinking(alias)


SIZES = {"2b": "2B", "4b": "4B", "": "8B", "32b": "32B", "30b-a3b": "30B-A3B"}
# Qwen3.5's and Qwen3.6's checkpoints (xorbitsai's registry), each a hybrid thinking model
QWEN3_5 = {"3.5": ("0.8B", "2B", "4B", "9B", "27B", "35B-A3B", "122B-A10B", "397B-A17B"), "3.6": ("27B", "35B-A3B")}


def _qwen3_5(version: str, size: str) -> Alias:
    note = f"Qwen{version} {size}, thinking on (its template's default)"
    return thinking(hf(f"Qwen/Qwen{version}-{size}", note, WINDOW, prompt_style=THINKING.name))


FAMILY = ModelFamily(
    "Qwen3-VL",
    variants=(
        ImageTokens(
            "Qwen3-VL",
            image_tokens,
            "dynamic resolution (16-px patches merged 2x2: a token per 32-px cell, 65,536-16,777,216 pixels) + 2 "
            "markers per image",
            model_types=("qwen3_vl", "qwen3_vl_moe"),
            architectures=("Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration"),
            fragments=("qwen3-vl", "qwen3_vl"),
        ),
        ImageTokens(
            "Qwen3.5",
            image_tokens,
            "as Qwen3-VL: a token per 32-px cell (16-px patches merged 2x2), 65,536-16,777,216 pixels, + 2 markers "
            "per image",
            model_types=("qwen3_5", "qwen3_5_moe"),
            architectures=("Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration"),
            fragments=("qwen3.5", "qwen3.6", "qwen3_5"),
        ),
    ),
    aliases={
        **{f"qwen3-vl-{key}".rstrip("-"): _instruct(size) for key, size in SIZES.items()},
        **{"-".join(filter(None, ("qwen3-vl", key, "thinking"))): _thinking(size) for key, size in SIZES.items()},
        **{f"qwen{v}-{size.lower()}": _qwen3_5(v, size) for v, sizes in QWEN3_5.items() for size in sizes},
    },
)
