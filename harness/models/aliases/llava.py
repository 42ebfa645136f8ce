"""LLaVA-1.5 and LLaVA-1.6 (MileBench's), LLaVA-NeXT Llama-3 (MMNeedle's) and LLaVA-OneVision, through their llava-hf
conversions."""

from __future__ import annotations

from harness.models.aliases.alias import Alias
from harness.models.aliases.common import hf


def _llava(version: str, size: str, checkpoint: str, original: str) -> Alias:
    return hf(checkpoint, f"LLaVA-{version} {size.upper()} (the llava-hf conversion of {original})", 4096)


ALIASES: dict[str, Alias] = {
    "llava-1.5-7b": _llava("1.5", "7b", "llava-hf/llava-1.5-7b-hf", "liuhaotian/llava-v1.5-7b"),
    "llava-1.5-13b": _llava("1.5", "13b", "llava-hf/llava-1.5-13b-hf", "liuhaotian/llava-v1.5-13b"),
    "llava-1.6-7b": _llava("1.6", "7b", "llava-hf/llava-v1.6-vicuna-7b-hf", "liuhaotian/llava-v1.6-vicuna-7b"),
    "llava-1.6-13b": _llava("1.6", "13b", "llava-hf/llava-v1.6-vicuna-13b-hf", "liuhaotian/llava-v1.6-vicuna-13b"),
    "llava-next-llama3": hf(
        "llava-hf/llama3-llava-next-8b-hf",
        "LLaVA-NeXT Llama-3 8B (the llava-hf conversion of lmms-lab/llama3-llava-next-8b)",
        8192,
    ),
    "llava-onevision": hf(
        "llava-hf/llava-onevision-qwen2-7b-ov-hf",
        "LLaVA-OneVision 7B (Qwen2 LM); AnyRes tiling per image (no paper here ran it: at 64K/128K tokens of images "
        "its inputs exceed 500K)",
        32768,
    ),
}
