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

    from harness.models.shared.hf_image_only import without_video

    made = processors.glm4v(template)
    size = made.image_processor.size  # the bounds the family's processor configs ship
    images = Glm46VImageProcessorPil(patch_size=14, merge_size=2, temporal_patch_size=2, size=dict(size))
    return without_video(Glm46VProcessor)(images, made.tokenizer, chat_template=template)


# Gemma 4's image and audio tokens, attributes of its tokenizer that Gemma4Processor reads; it refuses a tokenizer
# without the audio ones even for a prompt without audio (`validate_inputs`: `audio is not None and ... or boa_token
# is None or ...`).
GEMMA4_MARKS = {
    "boi_token": "<|image>",
    "eoi_token": "<image|>",
    "image_token": "<|image|>",
    "boa_token": "<|audio>",
    "eoa_token": "<audio|>",
    "audio_token": "<|audio|>",
}


def gemma4_tokenizer() -> Any:
    """Gemma 4's template around a tiny tokenizer with its turn markers and its image and audio tokens."""
    made = tokenizer(("<|turn>", "<turn|>", "<|channel>", "<channel|>", "<|think|>"), bos="<bos>", **GEMMA4_MARKS)
    made.chat_template = GEMMA4
    return made


def gemma4() -> Any:
    """Gemma 4's processor at its published defaults (280 soft tokens an image, 16-px patches pooled 3x3). Its module
    imports torchvision: it runs where torchvision does (a GPU machine's torch), not on this machine's CPU torch."""
    from transformers import Gemma4AudioFeatureExtractor, Gemma4ImageProcessor, Gemma4Processor, Gemma4VideoProcessor

    images, videos = Gemma4ImageProcessor(), Gemma4VideoProcessor()
    return Gemma4Processor(Gemma4AudioFeatureExtractor(), images, gemma4_tokenizer(), videos, chat_template=GEMMA4)


def gemma4_config(made: Any) -> Any:
    """A one-layer Gemma 4 (full attention, no per-layer inputs) over a one-layer vision tower of its published
    patching: 16-px patches pooled 3x3, a feature per soft token."""
    from transformers import Gemma4Config

    text = configs.text(made, "gemma4_text", layer_types=["full_attention"], hidden_size_per_layer_input=0)
    vision = {**configs.vit("gemma4_vision", 0, 16, num_key_value_heads=2, head_dim=16), "pooling_kernel_size": 3}
    del vision["image_size"]  # Gemma 4 has none: an image is patched at its own aspect ratio
    return Gemma4Config(
        text_config=text,
        vision_config=vision,
        audio_config=None,
        boi_token_id=configs.token(made, "<|image>"),
        eoi_token_id=configs.token(made, "<image|>"),
        image_token_id=configs.token(made, "<|image|>"),
        boa_token_id=configs.token(made, "<|audio>"),
        eoa_token_index=configs.token(made, "<audio|>"),
    )


def _qwen3_5_text(made: Any, model_type: str, **extra: Any) -> dict[str, Any]:
    """A linear-attention layer and a full-attention one (Qwen3.5's hybrid), at the tiny widths."""
    rope = {"rope_type": "default", "mrope_section": [2, 3, 3], "mrope_interleaved": True}
    linear = {"linear_key_head_dim": 16, "linear_value_head_dim": 16, "linear_num_key_heads": 2}
    layers = {"layer_types": ["linear_attention", "full_attention"], "num_hidden_layers": 2}
    return configs.text(made, model_type, rope_parameters=rope, linear_num_value_heads=4, **linear, **layers, **extra)


QWEN3_5_VISION = configs.merged_vision(1, 16, num_position_embeddings=2304)


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
