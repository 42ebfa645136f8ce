"""LLaVA-1.5, LLaVA-NeXT (1.6) and LLaVA-OneVision: their image tokens (336 px; AnyRes tiles; OneVision's tiles up to
6x6, scaled down past 9), LLaVA's own `llava_llama_2` conversation (`conv_templates["llava_llama_2"]`, which
MileBench's LLaVA worker, `workers/model_workers.py`, builds: its system message, `<image>` inline; bundled as
`llava_llama_2.jinja`), and the aliases, through the llava-hf conversions.

LLaVA-OneVision-2 (lmms-lab-encoder/LLaVA-OneVision-2-8B-Instruct, a Qwen3-8B language model), a family the papers never
ran, counts as Qwen2-VL does: vLLM 0.33.0 registers `LlavaOnevision2ForConditionalGeneration` (model type
`llava_onevision2`; transformers 5.20.2 has none) and counts an image as `LlavaOnevision2ProcessingInfo._get_vision_info`
does (`model_executor/models/llava_onevision2.py`: Qwen2-VL's `smart_resize` to cells of patch x merge pixels within
the image processor's min/max pixels, a token per cell, written as that many `<|image_pad|>`). The checkpoint's own
settings are in no stored source: the estimate takes vLLM's fallbacks (`_load_ov2_processor`: 14-px patches, merge 2,
200,704-1,605,632 pixels) and adds Qwen's `<|vision_start|>` and `<|vision_end|>` around each image, which the
checkpoint's own template (in no stored source either) is taken to write as Qwen3's do. Its processor and template
are the checkpoint's own code (its model card: `trust_remote_code=True`), which the `vllm` alias trusts."""

from __future__ import annotations

import math
from collections.abc import Mapping

from harness.models.facts.alias import Alias, hf, vllm
from harness.models.facts.family import ImageRule, ImageTokens, ModelFamily, best_grid, cells, fixed, template
from harness.models.facts.prompt_style import PromptStyle

LLAVA_LLAMA_2_SYSTEM = (
    "You are a helpful language and vision assistant. You are able to understand the visual content that the user "
    "provides, and assist the user with a variety of tasks using natural language."
)
LLAVA_NEXT_GRIDS = ((1, 2), (2, 1), (2, 2), (3, 1), (1, 3))  # (rows, cols) of 336-px tiles
ONEVISION_GRIDS = tuple((r, c) for r in range(1, 7) for c in range(1, 7))  # of 384-px tiles, up to 6x6


def anyres(
    tile: int, side: int, grids: tuple[tuple[int, int], ...], base: int, max_tiles: int | None = None
) -> ImageRule:
    """LLaVA-NeXT/OneVision: a base view of `side`x`side` features, plus the image on the chosen canvas of tiles
    (`side` features per tile side) without its padding, plus one newline feature per row; OneVision scales
    that part down when it exceeds `max_tiles` tiles. The grids are those of at most `max_grid_tiles` tiles where
    the `hf` backend's setting keeps the processor's pinpoints to them (`harness.models.shared.processor_settings`)."""

    def rule(width: int, height: int, settings: Mapping[str, object]) -> int:
        most = settings.get("max_grid_tiles")
        kept = [(r, c) for r, c in grids if not isinstance(most, int) or r * c <= most]
        rows, cols = best_grid(width, height, ((r * tile, c * tile) for r, c in kept))
        rows, cols = rows // tile * side, cols // tile * side
        if width / height > cols / rows:  # wider than the canvas: padded above and below
            rows -= 2 * ((rows - int(round(height * cols / width, 7))) // 2)
        else:
            cols -= 2 * ((cols - int(round(width * rows / height, 7))) // 2)
        features, newlines = rows * cols, rows
        ratio = math.sqrt(rows * cols / (max_tiles * side * side)) if max_tiles else 0.0
        if ratio > 1.1:
            features, newlines = int(rows // ratio) * int(cols // ratio), int(rows // ratio)
        return base + features + newlines

    return rule


def _llava(version: str, size: str, checkpoint: str, original: str) -> Alias:
    return hf(checkpoint, f"LLaVA-{version} {size.upper()} (the llava-hf conversion of {original})", 4096)


FAMILY = ModelFamily(
    "LLaVA",
    variants=(
        ImageTokens(
            "LLaVA-OneVision-2",
            cells(28, 256 * 28 * 28, 1605632),  # vLLM's count (one frame): 28-px cells
            "dynamic resolution (a token per 28-px cell, 200,704-1,605,632 pixels: vLLM's fallbacks) + 2 markers per "
            "image",
            model_types=("llava_onevision2",),
            architectures=("LlavaOnevision2ForConditionalGeneration",),
            fragments=("llava-onevision-2", "llava_onevision2"),
        ),
        ImageTokens(
            "LLaVA-OneVision",
            anyres(384, 27, ONEVISION_GRIDS, 729, 9),
            "AnyRes, 729 tokens of the whole image + up to 9 tiles' worth of 729 + a newline per row",
            model_types=("llava_onevision",),
            architectures=("LlavaOnevisionForConditionalGeneration",),
            fragments=("llava-onevision", "llava_onevision"),
        ),
        ImageTokens(
            "LLaVA-NeXT",
            anyres(336, 24, LLAVA_NEXT_GRIDS, 576),
            "AnyRes, 576 tokens of the whole image + up to 4 tiles of 576, unpadded, + a newline per row",
            model_types=("llava_next",),
            architectures=("LlavaNextForConditionalGeneration",),
            fragments=("llava-next", "llava-v1.6", "llava_next"),
        ),
        ImageTokens(  # after the others: every other `llava` name
            "LLaVA-1.5",
            fixed(576),
            "576 tokens per image (336 px, 14-px patches)",
            model_types=("llava",),
            architectures=("LlavaForConditionalGeneration",),
            fragments=("llava-1.5", "llava-v1.5", "bakllava", "llava"),
        ),
    ),
    styles=(
        PromptStyle(
            "llava_llama_2",
            content="string",
            system=LLAVA_LLAMA_2_SYSTEM,
            chat_template="llava_llama_2",
            template_text=template(__file__, "llava_llama_2"),
        ),
    ),
    aliases={
        "llava-1.5-7b": _llava("1.5", "7b", "llava-hf/llava-1.5-7b-hf", "liuhaotian/llava-v1.5-7b"),
        "llava-1.5-13b": _llava("1.5", "13b", "llava-hf/llava-1.5-13b-hf", "liuhaotian/llava-v1.5-13b"),
        "llava-1.6-7b": _llava("1.6", "7b", "llava-hf/llava-v1.6-vicuna-7b-hf", "liuhaotian/llava-v1.6-vicuna-7b"),
        "llava-1.6-13b": _llava("1.6", "13b", "llava-hf/llava-v1.6-vicuna-13b-hf", "liuhaotian/llava-v1.6-vicuna-13b"),
        # LoCoVQA's LLaVA-1.6-7B (Table 1: the Mistral-7B base)
        "llava-1.6-mistral-7b": hf(
            "llava-hf/llava-v1.6-mistral-7b-hf",
            "LLaVA-1.6 7B Mistral (the llava-hf conversion of liuhaotian/llava-v1.6-mistral-7b)",
            8192,  # LoCoVQA's Table 1
        ),
        "llava-next-llama3": hf(
            "llava-hf/llama3-llava-next-8b-hf",
            "LLaVA-NeXT Llama-3 8B (the llava-hf conversion of lmms-lab/llama3-llava-next-8b)",
            8192,
        ),
        "llava-onevision": hf(
            "llava-hf/llava-onevision-qwen2-7b-ov-hf",
            "LLaVA-OneVision 7B (Qwen2 LM); AnyRes tiling per image, at most 4 tiles as its official wrapper kept its "
            "pinpoints (no paper here ran it: at 64K/128K tokens of images its inputs exceed 500K)",
            32768,
            # vlm_model/llava_onevision.py:44-49: the pinpoints of at most num_crops = 4 tiles of 384 px
            max_grid_tiles="4",
        ),
        "llava-onevision-2-8b": vllm(
            "lmms-lab-encoder/LLaVA-OneVision-2-8B-Instruct",
            "LLaVA-OneVision-2 8B Instruct (Qwen3-8B) through vLLM, its own processor and template (remote code)",
            None,
        ),
    },
)
