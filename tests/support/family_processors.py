"""Each family's processor as its checkpoint publishes it (image-processor settings from the checkpoints'
`preprocessor_config.json`, as transformers' conversion scripts write them), around a tiny byte-level tokenizer that
holds the family's special tokens and adds a BOS where the family's tokenizer does: what the offline rendering tests
build a request with, through the harness and through the official wrapper. transformers has no Phi-3-vision
processor and builds Pixtral's only with torchvision: those two are their tokenizer alone (the text, the image
markers and the BOS are still compared)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.support import family_templates as templates


def tokenizer(specials: tuple[str, ...], bos: str | None = "<s>", adds_bos: bool = False, **named: str) -> Any:
    """A tiny byte-level BPE tokenizer with these special tokens (and `named` ones as its attributes: Gemma 3's
    boi_token, InternVL's context_image_token, ...); `adds_bos`: a BOS before every text it tokenizes."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    from tests.support.tiny_llava import tiny_tokenizer

    base = tiny_tokenizer(tuple(dict.fromkeys((*specials, *named.values(), *([bos] if bos else [])))))
    made = PreTrainedTokenizerFast(
        tokenizer_object=base._tokenizer,
        bos_token=bos,
        eos_token="</s>",
        pad_token="<pad>",
        extra_special_tokens=named or None,
    )
    if adds_bos and bos:
        made._tokenizer.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", special_tokens=[(bos, made.convert_tokens_to_ids(bos))]
        )
    return made


def qwen2_vl() -> Any:
    from transformers import Qwen2VLImageProcessorPil, Qwen2VLProcessor

    from harness.models.shared.hf_image_only import without_video

    specials = ("<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>")
    images = Qwen2VLImageProcessorPil(min_pixels=3136, max_pixels=12845056, patch_size=14, merge_size=2)
    return without_video(Qwen2VLProcessor)(images, tokenizer(specials, bos=None), chat_template=templates.QWEN2_VL)


def gemma3() -> Any:
    from transformers import Gemma3ImageProcessorPil, Gemma3Processor

    marks = {"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>", "image_token": "<image_soft_token>"}
    text = tokenizer(("<start_of_turn>", "<end_of_turn>"), bos="<bos>", adds_bos=True, **marks)
    images = Gemma3ImageProcessorPil(size={"height": 896, "width": 896}, do_pan_and_scan=False)
    return Gemma3Processor(images, text, chat_template=templates.GEMMA3, image_seq_length=256)


IDEFICS = ("<fake_token_around_image>", "<image>", "<end_of_utterance>")


def idefics2() -> Any:
    from transformers import Idefics2ImageProcessorPil, Idefics2Processor

    images = Idefics2ImageProcessorPil(
        do_image_splitting=True, size={"longest_edge": 980, "shortest_edge": 378}, do_pad=True
    )
    return Idefics2Processor(
        images, tokenizer(IDEFICS, adds_bos=True), image_seq_len=64, chat_template=templates.IDEFICS2
    )


def idefics3() -> Any:
    from transformers import Idefics3ImageProcessorPil, Idefics3Processor

    grid = tuple(f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7))
    text = tokenizer((*IDEFICS, "<global-img>", *grid), bos="<|begin_of_text|>", adds_bos=True)
    images = Idefics3ImageProcessorPil(size={"longest_edge": 1456}, max_image_size={"longest_edge": 364})
    return Idefics3Processor(images, text, image_seq_len=169, chat_template=templates.IDEFICS3)


def internvl3() -> Any:
    from transformers import GotOcr2ImageProcessorPil, InternVLProcessor

    from harness.models.shared.hf_image_only import without_video

    marks = {"start_image_token": "<img>", "end_image_token": "</img>", "context_image_token": "<IMG_CONTEXT>"}
    text = tokenizer(("<|im_start|>", "<|im_end|>", "<video>"), bos=None, video_token="<video>", **marks)
    images = GotOcr2ImageProcessorPil(
        size={"height": 448, "width": 448}, crop_to_patches=True, min_patches=1, max_patches=12
    )
    return without_video(InternVLProcessor)(images, text, chat_template=templates.INTERNVL_HF, image_seq_length=256)


def ovis2() -> Any:
    from transformers import Ovis2ImageProcessorPil, Ovis2Processor

    atoms = ("<IMG_ATOM>", "<IMG_START>", "<IMG_GRID>", "<IMG_COL>", "<IMG_ROW>", "<IMG_END>")
    text = tokenizer(("<|im_start|>", "<|im_end|>", "<image>", *atoms), bos=None)
    images = Ovis2ImageProcessorPil(crop_to_patches=True, size={"height": 448, "width": 448})
    return Ovis2Processor(images, text, chat_template=templates.OVIS2_HF, image_seq_length=256)


def llava_1_5() -> Any:
    from transformers import CLIPImageProcessorPil, LlavaProcessor

    images = CLIPImageProcessorPil(size={"shortest_edge": 336}, crop_size={"height": 336, "width": 336})
    return LlavaProcessor(
        images,
        tokenizer(("<image>",), adds_bos=True),
        patch_size=14,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=templates.LLAVA_1_5,
    )


def phi3_vision() -> Any:
    made = tokenizer(("<|user|>", "<|assistant|>", "<|system|>", "<|end|>", "<|endoftext|>"), adds_bos=True)
    made.chat_template = templates.PHI3_VISION
    return made


def pixtral() -> Any:
    made = tokenizer(("[INST]", "[/INST]", "[IMG]", "[IMG_BREAK]", "[IMG_END]"), adds_bos=True)
    made.chat_template = templates.PIXTRAL
    return made


@dataclass(frozen=True)
class Family:
    name: str
    alias: str  # the alias whose prompt style and input policies the harness side uses
    make: Callable[[], Any]
    image_marker: str  # the text the rendered prompt holds where each image goes
    expands_images: bool = True  # a processor that expands each image's tokens (else the tokenizer alone)
    # The construction the harness's render must equal where no official wrapper exists (else `official_wrappers`')
    reference: Callable[..., tuple[str, list[int]]] | None = None


FAMILIES = (
    Family("qwen2-vl", "qwen2.5-vl", qwen2_vl, "<|image_pad|>"),
    Family("gemma3", "gemma3", gemma3, "<start_of_image>"),
    Family("idefics2", "idefics2", idefics2, "<image>"),
    Family("idefics3", "idefics3", idefics3, "<image>"),
    Family("internvl3", "internvl", internvl3, "<IMG_CONTEXT>"),
    Family("ovis2", "ovis2", ovis2, "<image>"),
    Family("llava-1.5", "llava-1.5-7b", llava_1_5, "<image>"),
    Family("phi3-vision", "phi3.5-vision", phi3_vision, "<|image_", expands_images=False),
    Family("pixtral", "pixtral", pixtral, "[IMG]", expands_images=False),
)
