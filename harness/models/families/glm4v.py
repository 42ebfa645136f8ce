"""GLM-4.1V-9B-Thinking and GLM-4.5V, a family the papers never ran: their image tokens (14-px patches merged 2x2, so
28-px cells, the image resized as `Glm4vImageProcessor.smart_resize` resizes a two-frame still), their chat as their
published templates render it, their thinking taken out before scoring, and their aliases on `hf`
(`Glm4vForConditionalGeneration`, `Glm4vMoeForConditionalGeneration`).

Sources. The resize is transformers' (`models/glm4v/image_processing_glm4v.py:53-86`: sides rounded to 28 px, a small
side scaled up to 28 first, the area of the two frames a still image is processed as kept within the `size` bounds),
with the bounds the family's checkpoints ship in their processor configs, `"size": {"shortest_edge": 12544,
"longest_edge": 9633792}` (zai-org/GLM-OCR's `preprocessor_config.json` at 2e85a628, as a public test quotes it
verbatim, PaddleFormers' GLM-4.5V image-processor test, and a quantizer's glm4v preprocessor derivation all give it),
not the class's own default (`longest_edge` 28 x 28 x 15,000 = 11,760,000): GLM-4.1V-9B-Thinking's and GLM-4.5V's own
files are in no stored public source. GLM-4.5V shares GLM-4.1V's multimodal preprocessing (zai-org/GLM-V's README,
"Model Implementation Code"). The chat templates are the checkpoints' own, rendered as they are; the tests render
GLM-4.1V-9B-Thinking's `chat_template.jinja` at revision 3c1471e5 as a public qualification record quotes it verbatim
(its text hashes to sha256 847603d3...; the record's own `official_chat_template_sha256`, 5232dbe7..., is not its
quoted text's, so the checkpoint's file differs from the quote in some byte the record does not show), and GLM-4.5V's
as xorbitsai/inference's registry (`llm_family.json` at 7ecec16, "glm-4.5v") transcribes it: `[gMASK]<sop>`,
`<|user|>\\n`, each image `<|begin_of_image|><|image|><|end_of_image|>` in place, `<|assistant|>\\n` to generate.

Both think first. GLM-4.1V-Thinking answers `<think>...</think><answer>...</answer>` (zai-org/GLM-V's README,
fine-tuning format): what reaches the scorer is what the answer tags hold, as VLMEvalKit's `GLMThinking.extract_answer`
(`vlmeval/vlm/cogvlm.py`) reads it after decoding with `skip_special_tokens=True`, which keeps these tags. GLM-4.5V
answers after `</think>` without answer tags (the README: "For the GLM-4.5V model, the <answer> and </answer> tags
should be removed"); its template thinks unless `enable_thinking` is false, which no alias sets. Neither is sent the
task's answer prefix (`thinking`). Context: 65,536 tokens (GLM-4.1V: "64k context length", the README;
GLM-4.5V: `Glm4vMoeTextConfig.max_position_embeddings`), recorded, never a limit.

GLM-4.6V (106B-A12B) and GLM-4.6V-Flash (9B) are the same two architectures: transformers' model docs (v5.0.0,
`model_doc/glm4v_moe.md` and `glm4v.md`, "Support Model") list zai-org/GLM-4.6V under `glm4v_moe` and GLM-4.6V-Flash
under `glm4v`, and `model_doc/glm46v.md` names `Glm46VProcessor` (transformers' `glm46v`: Glm4v's image processing, a
new video sampler) as both checkpoints' processor; zai-org/GLM-V's README: "GLM-4.5V and GLM-4.6V model algorithm: see
... glm4v_moe", "128k tokens in training", thinking on by default (`enable_thinking` false turns it off, which no alias
sets). transformers' own `glm46v` model type (`Glm46VForConditionalGeneration`) is declared too. Their chat templates
are the checkpoints' own, rendered as they are; no stored source holds them (the rendering test renders GLM-4.5V's
transcription in their place, the README's "different conversation templates" being GLM-4.1V's against GLM-4.5V's).
Context: 131,072 tokens, recorded, never a limit.
"""

from __future__ import annotations

from collections.abc import Mapping

from builders.core.contract import smart_resize
from harness.models.facts.alias import hf, thinking
from harness.models.facts.family import ImageTokens, ModelFamily, number
from harness.models.facts.prompt_style import THINKING

CELL = 28  # a merged token: 14-px patches, 2x2
MIN_PIXELS, MAX_PIXELS = 12544, 9633792  # the checkpoints' processor configs' `size` (shortest_edge, longest_edge)
FRAMES = 2  # a still image is processed as two frames (temporal_patch_size), whose area the bounds hold


def image_tokens(width: int, height: int, settings: Mapping[str, object]) -> int:
    lo = number(settings.get("min_pixels") or MIN_PIXELS)
    hi = number(settings.get("max_pixels") or MAX_PIXELS)
    if height < CELL or width < CELL:  # scaled up until its smaller side is a cell
        scale = max(CELL / height, CELL / width)
        height, width = int(height * scale), int(width * scale)
    h_bar, w_bar = smart_resize(height, width, factor=CELL, min_pixels=lo // FRAMES, max_pixels=hi // FRAMES)
    return (h_bar // CELL) * (w_bar // CELL) + 2  # <|begin_of_image|> ... <|end_of_image|>


FAMILY = ModelFamily(
    "GLM-V",  # zai-org/GLM-V: GLM-4.1V, GLM-4.5V, GLM-4.6V
    variants=(
        ImageTokens(
            "GLM-4.1V",
            image_tokens,
            "dynamic resolution (14-px patches merged 2x2: a token per 28-px cell, two frames' area within "
            "12,544-9,633,792 pixels) + 2 markers per image",
            model_types=("glm4v", "glm4v_moe", "glm46v"),
            architectures=(
                "Glm4vForConditionalGeneration",
                "Glm4vMoeForConditionalGeneration",
                "Glm46VForConditionalGeneration",
            ),
            fragments=("glm-4.1v", "glm-4.5v", "glm-4.6v"),
        ),
    ),
    aliases={
        "glm-4.1v-thinking": thinking(
            hf(
                "zai-org/GLM-4.1V-9B-Thinking",
                "GLM-4.1V 9B Thinking (answers in <answer> tags after its thinking)",
                65536,
                prompt_style=THINKING.name,
            ),
            answer=("<answer>", "</answer>"),
        ),
        "glm-4.5v": thinking(
            hf("zai-org/GLM-4.5V", "GLM-4.5V 106B-A12B, thinking on", 65536, prompt_style=THINKING.name)
        ),
        "glm-4.6v": thinking(
            hf("zai-org/GLM-4.6V", "GLM-4.6V 106B-A12B, thinking on", 131072, prompt_style=THINKING.name)
        ),
        "glm-4.6v-flash": thinking(
            hf("zai-org/GLM-4.6V-Flash", "GLM-4.6V-Flash 9B, thinking on", 131072, prompt_style=THINKING.name)
        ),
    },
)
