"""MiniCPM-V 4.5, a family the papers never ran: its image tokens (a 448-px overview and up to 9 slices of 64 query
tokens each, with their markers), its chat as its official `model.chat` builds it, its thinking mode, and its aliases on
`vllm`, the one maintained path that loads it: transformers 5.20.2 has MiniCPM-V 4.6 and 4.7 classes only, vLLM 0.33.0
registers `MiniCPMV` and picks its 4.5 model by the checkpoint's version (`model_executor/models/minicpmv.py`,
`MiniCPMV4_5`).

Sources. The slicing is MiniCPM-V's image processor's (`scale_resolution` 448, `max_slice_nums` 9: the grid of 8-10
slices, at most 9, whose shape is closest to the image's; transformers' `MiniCPMV4_6ImageProcessorPil.get_sliced_grid`
restates it, `image_processing_pil_minicpmv4_6.py:132-159`), each image `<image_id>N</image_id><image>`...`</image>`
then its slices as rows of `<slice>`...`</slice>` joined by newlines (`processing_minicpmv4_6.py:146-167`; vLLM hands
4.5's own to the checkpoint's remote processor, `transformers_utils/processors/minicpmv.py`). 64 query tokens a slice
is the checkpoint's `query_num`, which vLLM reads from its config: the 4.5 checkpoint's files are in no stored public
source, so the figure is the estimate's, not read from them. The prompt is `model.chat`'s, as xorbitsai/inference
reimplements it (`xinference/model/llm/transformers/multimodal/minicpmv45.py` at 7ecec16, "Based on MiniCPM-V-2.6"):
each image `(<image>./</image>)` in place, the pieces joined by newlines, one string rendered by the tokenizer's
template. The checkpoint's own template, whose thinking switch VLMEvalKit edits (`vlmeval/vlm/minicpm_v.py`,
`MiniCPM_V_4_5`: the generation prompt's `<think>\\n`), is rendered as it is; the one vLLM 0.33.0 ships for 4.5
checkpoints (`transformers_utils/chat_templates/template_minicpmv45.jinja`, its renderer's last resort where a
checkpoint has none, which the vllm backend's count takes too) is what the tests render: ChatML over string content,
no system turn unless one is sent, an empty thinking block after the generation prompt unless `enable_thinking`.

Thinking: `model.chat(enable_thinking=True)` as VLMEvalKit runs its long-reasoning benchmarks (`minicpm-v-4.5-thinking`,
the template given `enable_thinking=True`, no answer prefix); its `<think>`...`</think>` is taken out before scoring.
Without it the model answers directly (vLLM's MiniCPM-V parser, `vllm/parser/minicpmv.py`). Context: 32,768 tokens
(xorbitsai's registry, `context_length`), recorded, never a limit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from harness.models.facts.alias import thinking, vllm
from harness.models.facts.family import ImageTokens, ModelFamily, number
from harness.models.facts.prompt_style import PromptStyle

SCALE, MAX_SLICES, QUERIES = 448, 9, 64
IMAGE_ID = 3  # <image_id>, the number, </image_id>
MARKER = "(<image>./</image>)"  # model.chat's, and vLLM's placeholder (MiniCPMV.get_placeholder_str)


def sliced_grid(width: int, height: int, max_slices: int) -> tuple[int, int] | None:
    """(rows, cols) of the slices, or None where the image is kept whole."""
    multiple = min(math.ceil(width * height / (SCALE * SCALE)), max_slices)
    if multiple <= 1:
        return None
    best, best_error = (1, 1), math.inf
    log_ratio = math.log(width / height)
    for slices in (multiple - 1, multiple, multiple + 1):
        if slices == 1 or slices > max_slices:
            continue
        for rows in range(1, slices + 1):
            if slices % rows == 0:
                error = abs(log_ratio - math.log((slices // rows) / rows))
                if error < best_error or (error == best_error and rows > best[0]):
                    best, best_error = (rows, slices // rows), error
    return best


def image_tokens(width: int, height: int, settings: Mapping[str, object]) -> int:
    grid = sliced_grid(width, height, number(settings.get("max_slice_nums") or MAX_SLICES))
    overview = IMAGE_ID + QUERIES + 2  # <image> ... </image>
    if grid is None:
        return overview
    rows, cols = grid
    return overview + rows * cols * (QUERIES + 2) + (rows - 1)  # <slice> ... </slice>, a newline between rows


def _style(name: str, prefill: bool = True, template_kwargs: tuple[tuple[str, bool], ...] = ()) -> PromptStyle:
    """`model.chat`'s one string: each image as its marker, the pieces joined by newlines."""
    return PromptStyle(
        name,
        content="string",
        image_marker=MARKER,
        joiner="\n",
        prefill=prefill,
        assistant_content="string",
        template_kwargs=template_kwargs,
    )


FAMILY = ModelFamily(
    "MiniCPM-V",
    variants=(
        ImageTokens(
            "MiniCPM-V 4.5",
            image_tokens,
            "64 tokens for a 448-px overview and for each slice (at most max_slice_nums, default 9) + markers",
            # its config's `MiniCPMV` and `minicpmv` are every MiniCPM-V's: known by its checkpoint's name
            fragments=("minicpm-v-4_5", "minicpm-v-4.5"),
        ),
    ),
    styles=(
        _style("minicpm_v"),
        _style("minicpm_v_thinking", prefill=False, template_kwargs=(("enable_thinking", True),)),
    ),
    aliases={
        "minicpm-v-4.5": vllm(
            "openbmb/MiniCPM-V-4_5", "MiniCPM-V 4.5 8B through vLLM", 32768, prompt_style="minicpm_v"
        ),
        "minicpm-v-4.5-thinking": thinking(
            vllm(
                "openbmb/MiniCPM-V-4_5",
                "MiniCPM-V 4.5 8B in its thinking mode (enable_thinking=True) through vLLM",
                32768,
                prompt_style="minicpm_v_thinking",
            )
        ),
    },
)
