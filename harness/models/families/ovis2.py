"""Ovis2: 448-px tiles, 256 tokens each (at most `max_patches`, default 9) plus a thumbnail; the official wrapper's
(MMLongBench's `vlm_model/ovis2.py`) `max_partition = 4` (transformers' Ovis2 processor: `crop_to_patches` with
`max_patches = 4`), its prompt `preprocess_inputs` on the query string with `<image>` in place, Qwen's system prompt
and `generation_preface ''` (no prefill); and the aliases, through the transformers-native conversions
(`thisisiron/Ovis2-<size>-hf`, made by transformers' `convert_ovis2_weights_to_hf.py` from the AIDC-AI checkpoints the
paper ran): the authors' checkpoints need remote code that registers no image-text-to-text model, and vLLM's Ovis
fixes `max_partition` at 9, not the official 4."""

from __future__ import annotations

from harness.models.alias import Alias, hf, wrapper
from harness.models.families.family import ImageTokens, ModelFamily, tiles
from harness.models.prompt_style import PromptStyle

RULES = (
    wrapper(
        "official Ovis2 wrapper: max_partition = 4 (transformers' Ovis2 processor: crop_to_patches, max_patches 4)",
        processor_kwargs={"crop_to_patches": True, "max_patches": 4},
    ),
)


def _ovis2(size: str) -> Alias:
    return hf(
        f"thisisiron/Ovis2-{size}-hf",
        f"Ovis2 {size}, the transformers-native conversion of AIDC-AI/Ovis2-{size}",
        32768,
        RULES,
        prompt_style="ovis2",  # the query string with <image> in place, Qwen's system prompt, no prefill
    )


FAMILY = ModelFamily(
    "Ovis2",
    variants=(
        ImageTokens(
            "Ovis2",
            tiles(448, 256, ("max_patches",), 9, 2),
            "256 tokens per 448-px tile (at most max_patches, default 9) + a thumbnail tile + markers",
            model_types=("ovis2",),
            architectures=("Ovis2ForConditionalGeneration",),
            fragments=("ovis2", "ovis-2"),
        ),
    ),
    styles=(PromptStyle("ovis2", content="string", prefill=False),),
    aliases={
        "ovis2-1b": _ovis2("1B"),
        "ovis2": _ovis2("2B"),
        "ovis2-4b": _ovis2("4B"),
        "ovis2-8b": _ovis2("8B"),
        "ovis2-16b": _ovis2("16B"),
        "ovis2-34b": _ovis2("34B"),
    },
)
