"""Phi-3-vision, Phi-3.5-vision and Phi-4-multimodal: their HD crops (Phi-3/3.5: 336-px crops of 144 tokens, at most
`num_crops`; Phi-4: 448-px crops of 256, at most `dynamic_hd`), the official wrappers' (MMLongBench's
`vlm_model/phi3.py` and `phi4.py`) `num_crops = 4` / `dynamic_hd = 4`, the prompt as one string with each image as
`<|image_N|>` in place (their chat templates concatenate string content), the answer prefix continued; and the
aliases. They load only as remote code for causal LMs, which vLLM serves natively."""

from __future__ import annotations

import math
from collections.abc import Mapping

from harness.models.facts.alias import vllm, wrapper
from harness.models.facts.family import ImageTokens, ModelFamily, closest_tiling, number
from harness.models.facts.prompt_style import PromptStyle


def phi3(width: int, height: int, settings: Mapping[str, object]) -> int:
    """Phi-3/3.5-vision HD transform: the image scaled to a grid of at most `num_crops` 336-px crops, 144 tokens
    per crop and for the global view, 12 newline tokens per row."""
    crops = number(settings.get("num_crops") or 4)
    long, short = max(width, height), min(width, height)
    scale = 1
    while (scale + 1) * math.ceil((scale + 1) * short / long) <= crops:
        scale += 1
    rows = max(1, math.ceil(scale * short / long))
    return (scale * rows + 1) * 144 + 1 + (rows + 1) * 12


def phi4(width: int, height: int, settings: Mapping[str, object]) -> int:
    """Phi-4-multimodal dynamic HD: at most `dynamic_hd` 448-px crops of 256 tokens each, a global view, and a
    newline token per row of features."""
    crops = closest_tiling(width, height, 448, number(settings.get("dynamic_hd") or 36))
    return 256 * (crops + 1) + 16 * (int(math.isqrt(crops)) + 1) + 1


PHI3_RULES = (wrapper("official Phi-3/3.5-vision wrapper: num_crops = 4", processor_kwargs={"num_crops": 4}),)
PHI4_RULES = (wrapper("official Phi-4-multimodal wrapper: dynamic_hd = 4", processor_kwargs={"dynamic_hd": 4}),)

FAMILY = ModelFamily(
    "Phi",
    variants=(
        ImageTokens(
            "Phi-3.5-vision",
            phi3,
            "144 tokens per 336-px crop (at most num_crops, default 4) + a global view + newlines",
            model_types=("phi3_v",),
            architectures=("Phi3VForCausalLM",),
            fragments=("phi-3.5-vision", "phi-3-vision", "phi3_v"),
        ),
        ImageTokens(
            "Phi-4-multimodal",
            phi4,
            "256 tokens per 448-px crop (at most dynamic_hd, default 36) + a global view + newlines",
            model_types=("phi4mm", "phi4_multimodal"),
            architectures=("Phi4MMForCausalLM", "Phi4MultimodalForCausalLM"),
            fragments=("phi-4-multimodal", "phi4_multimodal", "phi4mm"),
        ),
    ),
    styles=(PromptStyle("phi", content="string", image_marker="<|image_{n}|>", assistant_content="string"),),
    aliases={
        "phi3-vision": vllm(
            "microsoft/Phi-3-vision-128k-instruct",
            "Phi-3-vision 4.2B (128K) through vLLM",
            131072,
            PHI3_RULES,
            prompt_style="phi",
        ),
        "phi3.5-vision": vllm(
            "microsoft/Phi-3.5-vision-instruct",
            "Phi-3.5-vision 4.2B through vLLM",
            131072,
            PHI3_RULES,
            prompt_style="phi",
        ),
        "phi4-multimodal": vllm(
            "microsoft/Phi-4-multimodal-instruct",
            "Phi-4-multimodal 5.6B through vLLM (vision only)",
            131072,
            PHI4_RULES,
            prompt_style="phi",
        ),
    },
)
