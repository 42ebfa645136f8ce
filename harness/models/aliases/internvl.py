"""InternVL2, InternVL2.5 and InternVL3, as MMLongBench's `vlm_model/internvl.py` runs them: dynamic 448-px tiling
with at most 4 tiles (+ a thumbnail); where `run_eval.sh` reduces them (one tile per image, the last 400 images on
the natural-image tasks at 64K/128K) is MMLongBench's (`tasks/mmlongbench/paper_models.py`).

InternVL3 runs on `hf` through the transformers-native `-hf` conversions (the same weights; its processor tiles as
the original `dynamic_preprocess`, `max_patches`); InternVL2 and 2.5 have no such conversion of the checkpoints the
paper ran and run on `vllm` with their remote code, which tiles by `max_dynamic_patch`.

The prompt is `model.chat`'s: the conversation template of the checkpoint's config (`internvl2_5` for 2.5 and 3,
`Hermes-2` / `internlm2-chat` / `phi3-chat` for InternVL2-1B / 2B, 8B / 4B) with its system message, each `<image>`
replaced in place, and no prefill (`model.chat` sends the user turn; eval.py adds the prefix to the answer).
"""

from __future__ import annotations

from collections.abc import Mapping

from harness.models.aliases.alias import Alias
from harness.models.aliases.common import hf, vllm, wrapper

HF_TILES: dict[str, object] = {"crop_to_patches": True, "max_patches": 4}
VLLM_TILES: dict[str, object] = {"max_dynamic_patch": 4}


def _own(tiles: Mapping[str, object]) -> tuple:
    return (wrapper("official InternVL wrapper: dynamic tiling with max_num = 4 tiles", processor_kwargs=tiles),)


def _internvl3(size: str) -> Alias:
    return hf(
        f"OpenGVLab/InternVL3-{size}-hf",
        f"InternVL3 {size}, the transformers-native conversion of OpenGVLab/InternVL3-{size}",
        32768,
        _own(HF_TILES),
        prompt_style="internvl2_5",
    )


def _original(version: str, size: str, window: int, style: str) -> Alias:
    return vllm(
        f"OpenGVLab/{version}-{size}",
        f"{version.replace('_', '.')} {size} through vLLM (remote code, as the official wrapper loads it)",
        window,
        _own(VLLM_TILES),
        prompt_style=style,
    )


ALIASES: dict[str, Alias] = {
    "internvl3-1b": _internvl3("1B"),
    "internvl3-2b": _internvl3("2B"),
    "internvl": _internvl3("8B"),
    "internvl3-14b": _internvl3("14B"),
    "internvl3-38b": _internvl3("38B"),
    "internvl2.5-1b": _original("InternVL2_5", "1B", 16384, "internvl2_5"),
    "internvl2.5-2b": _original("InternVL2_5", "2B", 16384, "internvl2_5"),
    "internvl2.5-4b": _original("InternVL2_5", "4B", 16384, "internvl2_5"),
    "internvl2.5-8b": _original("InternVL2_5", "8B", 16384, "internvl2_5"),
    "internvl2.5-26b": _original("InternVL2_5", "26B", 16384, "internvl2_5"),
    "internvl2-1b": _original("InternVL2", "1B", 8192, "internvl2_chatml"),
    "internvl2-2b": _original("InternVL2", "2B", 8192, "internvl2_chatml"),
    "internvl2-4b": _original("InternVL2", "4B", 8192, "internvl2_phi3"),
    "internvl2-8b": _original("InternVL2", "8B", 8192, "internvl2_chatml"),
}
