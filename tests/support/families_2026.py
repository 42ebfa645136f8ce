"""The 2026 families' test pieces (issue 61, item 2): their published templates with the sha256 of each as its source
holds it, their processors as their checkpoints publish them around a tiny tokenizer (`family_processors`' way), and
tiny configurations of their transformers classes (`tiny_vlm_configs`' way) for the forward pass.

Templates (`published_templates/`, each exactly as its source holds it):
- `qwen3_5`, `qwen3_6`: xorbitsai/inference's model registry (`xinference/model/llm/llm_family.json` at 7ecec16,
  "qwen3.5" and "qwen3.6", their `chat_template`), the Qwen/Qwen3.5-* and Qwen/Qwen3.6-* checkpoints' own.
- `gemma4_31b_it`: google/gemma-4-31B-it's, as llama.cpp keeps it (`models/templates/google-gemma-4-31B-it.jinja` at
  3fc65063d, "common : better align to the updated official gemma4 template (#21704)").
GLM-4.6V's and MiMo-VL's templates are in no stored source: GLM-4.6V renders GLM-4.5V's transcription
(`family_templates.GLM4_5V`), MiMo-VL Qwen2.5-VL's (`family_templates.QWEN2_VL`), in their place.
"""

from __future__ import annotations

from typing import Any

from tests.support import family_templates as templates
from tests.support import tiny_vlm_configs as configs
from tests.support import tiny_vlm_processors as processors
from tests.support.family_processors import tokenizer

PUBLISHED_SHA256 = {
    "qwen3_5": "a4aee8afcf2e0711942cf848899be66016f8d14a889ff9ede07bca099c28f715",
    "qwen3_6": "e84f32a23fdda27689f868aa4a1a5621f41133e51a48d7f3efcbea2839574259",
    "gemma4_31b_it": "85a08664d16d8f3be4416c92427b3ac10df1024ac566cc0b4bc3bab409393f98",
}
QWEN3_5 = templates.published("qwen3_5")
QWEN3_6 = templates.published("qwen3_6")
GEMMA4 = templates.published("gemma4_31b_it")


def qwen3_5(template: str = QWEN3_5) -> Any:
    """Qwen3.5 and Qwen3.6: transformers maps `qwen3_5` to Qwen3-VL's processor; 16-px patches merged 2x2."""
    return processors.qwen3_vl(template)


def glm46v(template: str = templates.GLM4_5V) -> Any:
    """GLM-4.6V and -Flash: `Glm46VProcessor` (their processor_config's class), GLM-4.1V's image processing with the
    family's published pixel bounds (`harness.models.families.glm4v`: no GLM-4.6V file of its own is stored)."""
    from transformers import Glm46VImageProcessorPil, Glm46VProcessor

    from harness.models.hf_image_only import without_video

    made = processors.glm4v(template)
    size = made.image_processor.size  # the bounds the family's processor configs ship
    images = Glm46VImageProcessorPil(patch_size=14, merge_size=2, temporal_patch_size=2, size=dict(size))
    return without_video(Glm46VProcessor)(images, made.tokenizer, chat_template=template)


def gemma4_tokenizer() -> Any:
    """Gemma 4's template around a tiny tokenizer (its processor's module imports torchvision: the tokenizer alone)."""
    specials = ("<|turn>", "<turn|>", "<|channel>", "<channel|>", "<|think|>", "<|image>", "<image|>", "<|image|>")
    made = tokenizer(specials, bos="<bos>")
    made.chat_template = GEMMA4
    return made


def _qwen3_5_text(made: Any, model_type: str, **extra: Any) -> dict[str, Any]:
    """A linear-attention layer and a full-attention one (Qwen3.5's hybrid), at the tiny widths."""
    rope = {"rope_type": "default", "mrope_section": [2, 3, 3], "mrope_interleaved": True}
    linear = {"linear_key_head_dim": 16, "linear_value_head_dim": 16, "linear_num_key_heads": 2}
    layers = {"layer_types": ["linear_attention", "full_attention"], "num_hidden_layers": 2}
    return configs.text(made, model_type, rope_parameters=rope, linear_num_value_heads=4, **linear, **layers, **extra)


QWEN3_5_VISION = {
    "depth": 1,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_heads": 2,
    "out_hidden_size": 64,
    "patch_size": 16,
    "num_position_embeddings": 2304,
}


def qwen3_5_config(made: Any) -> Any:
    from transformers import Qwen3_5Config

    text = _qwen3_5_text(made, "qwen3_5_text")
    return Qwen3_5Config(text_config=text, vision_config=QWEN3_5_VISION, **configs._qwen_ids(made))


def qwen3_5_moe_config(made: Any) -> Any:
    """Qwen3.5/3.6's mixture of experts (35B-A3B, ...): four experts, two a token, one shared."""
    from transformers import Qwen3_5MoeConfig

    moe = {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32}
    text = _qwen3_5_text(made, "qwen3_5_moe_text", shared_expert_intermediate_size=32, **moe)
    return Qwen3_5MoeConfig(text_config=text, vision_config=QWEN3_5_VISION, **configs._qwen_ids(made))
