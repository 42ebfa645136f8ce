"""The LLaVA family through transformers' llava-hf conversions: LLaVA-1.5 and LLaVA-1.6 as MileBench ran them (its one
published worker, `workers/model_workers.py`'s LLaVA, for the liuhaotian checkpoints), LLaVA-NeXT on Llama 3 as
MMNeedle's "LLaVA-Llama-3", and LLaVA-OneVision, which MMLongBench left out (its 64K/128K inputs pass 500K tokens,
Table 11)."""

from __future__ import annotations

from harness.models.aliases.alias import Alias
from harness.models.aliases.common import hf, milebench, mmneedle
from harness.models.aliases.idefics import NO_NEEDLE_WRAPPER

# LLaVA-1.5's own `process_images` pads each image to a square (image_aspect_ratio "pad"); llava-hf's processor may
# center-crop instead (its preprocessor_config decides; LLaVA-1.6's AnyRes is the same on both sides).
PADDING = (
    "the llava-hf conversion of the same weights, whose image processor may center-crop where LLaVA's own pads each "
    "image to a square"
)


def _llava(version: str, size: str, checkpoint: str, original: str) -> Alias:
    return hf(
        checkpoint,
        f"LLaVA-{version} {size.upper()} (the llava-hf conversion of {original})",
        4096,
        milebench(
            f"LLaVA-{version}-{size.upper()}",
            original,
            PADDING if version == "1.5" else "",
            prompt_style="llava_llama_2",
        ),
    )


ALIASES: dict[str, Alias] = {
    "llava-1.5-7b": _llava("1.5", "7b", "llava-hf/llava-1.5-7b-hf", "liuhaotian/llava-v1.5-7b"),
    "llava-1.5-13b": _llava("1.5", "13b", "llava-hf/llava-1.5-13b-hf", "liuhaotian/llava-v1.5-13b"),
    "llava-1.6-7b": _llava("1.6", "7b", "llava-hf/llava-v1.6-vicuna-7b-hf", "liuhaotian/llava-v1.6-vicuna-7b"),
    "llava-1.6-13b": _llava("1.6", "13b", "llava-hf/llava-v1.6-vicuna-13b-hf", "liuhaotian/llava-v1.6-vicuna-13b"),
    "llava-next-llama3": hf(
        "llava-hf/llama3-llava-next-8b-hf",
        "LLaVA-NeXT Llama-3 8B (the llava-hf conversion of lmms-lab/llama3-llava-next-8b)",
        8192,
        mmneedle("LLaVA-Llama-3", "lmms-lab/llama3-llava-next-8b", NO_NEEDLE_WRAPPER),
    ),
    "llava-onevision": hf(
        "llava-hf/llava-onevision-qwen2-7b-ov-hf",
        "LLaVA-OneVision 7B (Qwen2 LM); AnyRes tiling per image (not evaluated by MMLongBench: its 64K/128K inputs "
        "exceed 500K tokens)",
        32768,
    ),
}
