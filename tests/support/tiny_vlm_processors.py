"""The processors of the families `tests/support/family_processors.py` does not hold, built the same way: the family's
real processor class with the image-processor settings its checkpoints publish, around a tiny byte-level tokenizer that
holds the family's special tokens. Where transformers builds a processor only with its video processor (which needs
torchvision), the class is built without it, as the `hf` backend's `processor=image_only` builds it.

Templates: each family's published chat template where the project transcribes one (`family_templates`); where it does
not, the transcription cited beside it. What the forward-pass check needs of a template is where it puts each
image's placeholder, and each template below puts it where the published one does.
"""

from __future__ import annotations

from typing import Any

from tests.support import family_templates as templates
from tests.support.family_processors import tokenizer

# llava-hf/llava-onevision-qwen2-*-ov-hf (transformers' convert_llava_onevision_weights_to_hf.py): every image of a
# turn first, then its text; the published template does not interleave.
LLAVA_ONEVISION = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n'}}{# Render all images first #}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'image') %}{{ '<image>\n' }}{% endfor %}"
    "{# Render all video then #}{% for content in message['content'] | selectattr('type', 'equalto', 'video') %}"
    "{{ '<video>\n' }}{% endfor %}{# Render all text next #}{% if message['role'] != 'assistant' %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}{{ content['text'] }}{% endfor %}"
    "{% else %}{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}{% generation %}"
    "{{ content['text'] }}{% endgeneration %}{% endfor %}{% endif %}{{'<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
# PaliGemma publishes no chat template: the family is prompted with its text alone, before which its processor (and
# vLLM's PaliGemma) puts every image and a BOS, and after which a newline; written as one, without image marks.
PALIGEMMA = (
    "{% for message in messages %}{% for part in message['content'] | selectattr('type', 'equalto', 'text') %}"
    "{{ part['text'] }}{% endfor %}{% endfor %}"
)

QWEN_SPECIALS = ("<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>")
ONEVISION_PINPOINTS = [[384 * r, 384 * c] for r in range(1, 7) for c in range(1, 7)]  # the checkpoints' 6x6 grid
LLAVA_NEXT_PINPOINTS = [[336, 672], [672, 336], [672, 672], [1008, 336], [336, 1008]]


def _image_only(processor_class: type) -> type:
    from harness.models.shared.hf_image_only import without_video

    return without_video(processor_class)


LLAMA3_SPECIALS = ("<image>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>")


def llava_next(template: str = templates.LLAVA_1_5, text: Any = None) -> Any:
    """LLaVA-NeXT (its AnyRes grid) with a checkpoint's template: the Vicuna ones' (LLaVA-1.5's,
    `family_templates.LLAVA_NEXT_MISTRAL`'s note), or the Mistral or Llama 3 one's with their `text` tokenizer."""
    from transformers import LlavaNextImageProcessorPil, LlavaNextProcessor

    images = LlavaNextImageProcessorPil(
        size={"shortest_edge": 336},
        crop_size={"height": 336, "width": 336},
        image_grid_pinpoints=LLAVA_NEXT_PINPOINTS,
    )
    return LlavaNextProcessor(
        images,
        text if text is not None else tokenizer(("<image>",), adds_bos=True),
        patch_size=14,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=template,
    )


def llava_next_mistral() -> Any:
    return llava_next(templates.LLAVA_NEXT_MISTRAL)


def llava_next_llama3() -> Any:
    return llava_next(templates.LLAVA_NEXT_LLAMA3, tokenizer(LLAMA3_SPECIALS, bos="<|begin_of_text|>", adds_bos=True))


def llava_onevision() -> Any:
    from transformers import LlavaOnevisionImageProcessorPil, LlavaOnevisionProcessor

    text = tokenizer(("<|im_start|>", "<|im_end|>", "<image>", "<video>"), bos=None)
    images = LlavaOnevisionImageProcessorPil(image_grid_pinpoints=ONEVISION_PINPOINTS)
    return _image_only(LlavaOnevisionProcessor)(
        images,
        text,
        chat_template=LLAVA_ONEVISION,
        num_image_tokens=729,
        vision_feature_select_strategy="full",
        vision_aspect_ratio="anyres_max_9",
    )


def paligemma() -> Any:
    from transformers import PaliGemmaProcessor, SiglipImageProcessorPil

    images = SiglipImageProcessorPil(size={"height": 224, "width": 224})
    images.image_seq_length = 256
    return PaliGemmaProcessor(
        images, tokenizer(("<image>",), bos="<bos>", image_token="<image>"), chat_template=PALIGEMMA
    )


def qwen2_5_vl() -> Any:
    from transformers import Qwen2_5_VLProcessor, Qwen2VLImageProcessorPil

    images = Qwen2VLImageProcessorPil(min_pixels=3136, max_pixels=12845056, patch_size=14, merge_size=2)
    return _image_only(Qwen2_5_VLProcessor)(
        images, tokenizer(QWEN_SPECIALS, bos=None), chat_template=templates.QWEN2_VL
    )


def qwen3_vl(template: str = templates.QWEN3_VL) -> Any:
    """Qwen3-VL: 16-px patches, 2x2 merge, 65,536-16,777,216 pixels (its preprocessor_config), its published template
    (Instruct's, or `templates.QWEN3_VL_THINKING`), `<think>` and `</think>` as the plain added tokens Qwen3's are."""
    from transformers import Qwen2VLImageProcessorPil, Qwen3VLProcessor

    images = Qwen2VLImageProcessorPil(
        size={"shortest_edge": 65536, "longest_edge": 16777216}, patch_size=16, merge_size=2
    )
    text = tokenizer(QWEN_SPECIALS, bos=None)
    text.add_tokens(["<think>", "</think>"], special_tokens=False)  # kept by decode(skip_special_tokens=True)
    return _image_only(Qwen3VLProcessor)(images, text, chat_template=template)


def glm4v(template: str = templates.GLM4_1V) -> Any:
    """GLM-4.1V and GLM-4.5V (one processor): 14-px patches, 2x2 merge, the pixel bounds the family's processor configs
    ship (`harness.models.families.glm4v`), a published template; `<think>`, `<answer>` and their ends as plain added
    tokens (VLMEvalKit reads them after decoding)."""
    from transformers import Glm4vImageProcessorPil, Glm4vProcessor

    marks = ("<|begin_of_image|>", "<|image|>", "<|end_of_image|>", "<|begin_of_video|>", "<|video|>")
    roles = ("<|system|>", "<|user|>", "<|assistant|>", "<|observation|>")
    text = tokenizer(("[gMASK]", "<sop>", *roles, *marks, "<|end_of_video|>"), bos=None)
    text.add_tokens(["<think>", "</think>", "<answer>", "</answer>"], special_tokens=False)
    size = {"shortest_edge": 12544, "longest_edge": 9633792}
    images = Glm4vImageProcessorPil(patch_size=14, merge_size=2, temporal_patch_size=2, size=size)
    return _image_only(Glm4vProcessor)(images, text, chat_template=template)
