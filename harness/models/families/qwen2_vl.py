"""Qwen2-VL and Qwen2.5-VL: dynamic resolution (the rows' own token rule, 14-px patches merged 2x2), the chat as the
official wrapper (MMLongBench's `vlm_model/qwen2_vl.py`) builds it, and the aliases: the processor's default pixel
limits, no truncation at any length, no YaRN (§6.3 of that paper; its YaRN runs are an ablation), the AWQ 72Bs in
FP16 (`--no_bf16`).

MiMo-VL-7B (SFT, RL and their 2508 releases, XiaomiMiMo/MiMo-VL-7B-*), a family the papers never ran, is a Qwen2.5-VL
checkpoint: "The MiMo-VL-7B series maintain full compatibility with the `Qwen2_5_VLForConditionalGeneration`
architecture" (XiaomiMiMo/MiMo-VL's README, "Deployment"), its vision encoder Qwen2.5-ViT and its language model
MiMo-7B (the README, "Model Details"), so it is known by Qwen2.5-VL's config names and counted by its rule. It reasons
before answering, in `<think>...</think>`: taken out before scoring, and no answer prefix is sent (`thinking`). Its
template is the checkpoint's own, rendered as it is (no stored source holds it). Context: 32,768 tokens (the report's
long-context stage, 32K sequences), recorded, never a limit."""

from __future__ import annotations

from collections.abc import Mapping

from builders.core.contract import MAX_PIXELS, MIN_PIXELS, TOKEN_RULE
from builders.core.contract import image_tokens as qwen_image_tokens
from harness.models.facts.alias import Alias, hf, thinking
from harness.models.facts.family import ImageTokens, ModelFamily, number
from harness.models.facts.prompt_style import THINKING, PromptStyle

WINDOW = 32768  # MMLongBench's Table 10: every Qwen2/2.5-VL size


def image_tokens(width: int, height: int, settings: Mapping[str, object]) -> int:
    lo = number(settings.get("min_pixels") or MIN_PIXELS)
    hi = number(settings.get("max_pixels") or MAX_PIXELS)
    return qwen_image_tokens(width, height, min_pixels=lo, max_pixels=hi) + 2  # <|vision_start|> ... <|vision_end|>


def _qwen(checkpoint: str, note: str, **args: str) -> Alias:
    return hf(checkpoint, note, WINDOW, prompt_style="qwen", **args)


def _mimo(version: str) -> Alias:
    note = f"MiMo-VL-7B-{version} (a Qwen2.5-VL checkpoint), thinking in <think>...</think>"
    alias = hf(f"XiaomiMiMo/MiMo-VL-7B-{version}", note, WINDOW, prompt_style=THINKING.name)
    return thinking(alias)


FAMILY = ModelFamily(
    "Qwen2-VL",
    variants=(
        ImageTokens(
            "Qwen2-VL",
            image_tokens,
            f"dynamic resolution ({TOKEN_RULE}, the rows' own rule) + 2 markers per image",
            model_types=("qwen2_vl", "qwen2_5_vl"),
            architectures=("Qwen2VLForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration"),
            fragments=("qwen2-vl", "qwen2.5-vl", "qwen2_vl", "qwen2_5_vl", "mimo-vl"),
        ),
    ),
    # vlm_model/qwen2_vl.py: typed parts, the prefix a string
    styles=(PromptStyle("qwen", assistant_content="string"),),
    aliases={
        "qwen2-vl-2b": _qwen("Qwen/Qwen2-VL-2B-Instruct", "Qwen2-VL 2B"),
        "qwen2-vl": _qwen("Qwen/Qwen2-VL-7B-Instruct", "Qwen2-VL 7B"),
        "qwen2-vl-72b-awq": _qwen(
            "Qwen/Qwen2-VL-72B-Instruct-AWQ", "Qwen2-VL 72B, AWQ, in FP16 as run_eval.sh", dtype="float16"
        ),
        "qwen2.5-vl-3b": _qwen("Qwen/Qwen2.5-VL-3B-Instruct", "Qwen2.5-VL 3B"),
        "qwen2.5-vl": _qwen(
            "Qwen/Qwen2.5-VL-7B-Instruct",
            "Qwen2.5-VL 7B; trained on 32K, run past it as the official wrapper ran it (no YaRN, default pixel limits)",
        ),
        "qwen2.5-vl-32b": _qwen("Qwen/Qwen2.5-VL-32B-Instruct", "Qwen2.5-VL 32B"),
        "qwen2.5-vl-72b-awq": _qwen(
            "Qwen/Qwen2.5-VL-72B-Instruct-AWQ", "Qwen2.5-VL 72B, AWQ, in FP16 as run_eval.sh", dtype="float16"
        ),
        **{f"mimo-vl-7b-{v.lower()}": _mimo(v) for v in ("SFT", "RL", "SFT-2508", "RL-2508")},
    },
)
